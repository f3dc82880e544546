// Package edge is acpbridge's ACP edge: it speaks the Agent Client Protocol
// (JSON-RPC 2.0, one message per line) on the editor's side through
// github.com/coder/acp-go-sdk, guards the input stream against what the SDK
// would silently drop, and maps bridge errors onto ACP error codes. It knows
// no agent: every method is a thin call into a bridge.Manager.
package edge

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/coder/acp-go-sdk"
)

// ProtocolVersion is the ACP version the bridge speaks.
const ProtocolVersion = acp.ProtocolVersion(acp.ProtocolVersionNumber)

// Server implements the agent side of ACP on top of a bridge.Manager, for
// one client (Serve, stdio) or several at once (ServeConn, acpbridge
// serve), which then share the Manager's sessions.
type Server struct {
	m       *bridge.Manager
	version string
	log     *slog.Logger
	maxLine int

	login Login
	hooks *testHooks // nil outside tests
	v2    V2         // nil: v1 only
}

// V2 serves a client whose first initialize asked for ACP v2 until its
// input ends or ctx is done. acp/edgev2 is one.
type V2 func(ctx context.Context, c V2Conn) error

// V2Conn is a client connection handed to the v2 edge.
type V2Conn struct {
	// Bridge is the bridge connection its sessions are attached to.
	Bridge *bridge.Conn
	// First is its first line, the initialize asking for v2; Rest the
	// rest of its input, and Out its output.
	First []byte
	Rest  io.Reader
	Out   io.Writer
	// Shared: one of several connections sharing the Manager's sessions
	// (ServeConn). When it ends its sessions go on unattached, their
	// turns running on; on stdio (Serve) its end cancels every turn.
	Shared bool
}

// ServeV2 has the Server answer a client that asks for protocol 2 or later
// with v (and any other with v1), as the TS SDK's AgentProtocolRouter
// picks; without it every client gets v1. Call it before serving.
func (s *Server) ServeV2(v V2) { s.v2 = v }

// RequestError is how the v1 edge answers a bridge error; the v2 edge
// answers with the same codes.
func (s *Server) RequestError(method string, err error) *acp.RequestError {
	return s.reqErr(method, err)
}

// NewSetup is a session's setup from what a session/new, load, resume or
// fork carries.
func NewSetup(cwd string, dirs []string, mcp []acp.McpServer, prompt *acp.SystemPrompt) (bridge.Setup, error) {
	return setup(cwd, dirs, mcp, prompt)
}

// conn is one client connection: the agent the SDK serves it with, the
// bridge connection its sessions are attached to, and what the edge keeps
// about its stream (arrivals, blobs).
type conn struct {
	*Server
	bc    *bridge.Conn
	out   *lockedWriter // set by start
	order *arrivals
	blobs *blobs
}

var (
	_ acp.Agent       = (*conn)(nil)
	_ acp.AgentLoader = (*conn)(nil)
)

// NewServer returns a Server for m; version is reported in agentInfo.
func NewServer(m *bridge.Manager, version string, log *slog.Logger) *Server {
	return &Server{m: m, version: version, log: log, maxLine: MaxLine}
}

func (s *Server) newConn(bc *bridge.Conn) *conn {
	c := &conn{Server: s, bc: bc, order: newArrivals(), blobs: newBlobs()}
	c.order.cancelPrompt = bc.CancelPrompt
	c.order.hooks = s.hooks
	return c
}

// stream is a connection's ACP stream as it runs: the guarded input, the
// output, and the SDK's connection between them.
type stream struct {
	in  *input
	out *lockedWriter
	sdk *acp.AgentSideConnection
}

// start has the SDK serve c on r and w, and sets the bridge connection's
// client to the SDK's connection (updates and asks for c's sessions go
// there) before the SDK reads the first message: the SDK starts reading
// as it is made, and a client that writes its first requests at once
// (a script piped in) could have its first turn run before the client was
// set, and that turn's updates and a load's replay went nowhere.
func (c *conn) start(r io.Reader, w io.Writer) stream {
	out := newLockedWriter(w)
	c.out = out
	in := guardFor(r, out, c.order, c.blobs, c.maxLine, c.log, c.v2 != nil)
	set := make(chan struct{})
	sc := acp.NewAgentSideConnection(c, out, gated{in, set})
	sc.SetLogger(QuietSDK(c.log))
	c.bc.SetClient(client{sc, out})
	close(set)
	return stream{in, out, sc}
}

// gated is a reader that reads nothing until open is closed.
type gated struct {
	r    io.Reader
	open <-chan struct{}
}

func (g gated) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// end ends what the stream's reading started, and waits for what ran
// after initialize's answer.
func (c *conn) end(st stream) {
	st.in.Close()
	c.order.close()
	st.out.endAfter()
}

// DrainTimeout bounds how long the bridge, once stdin has ended, waits for
// the answers to requests it has already read. Running turns are
// cancelled first, and a cancelled turn gets bridge.Config.CancelGrace.
const DrainTimeout = 15 * time.Second

// Serve speaks ACP on r and w until r ends or ctx is done, then shuts the
// manager down: running turns are cancelled and every transcript synced.
// When r ends, requests already read are still answered (their turns
// cancelled), so a script piped into the bridge gets every reply.
func (s *Server) Serve(ctx context.Context, r io.Reader, w io.Writer) error {
	c := s.newConn(s.m.Default())
	st := c.start(r, w)
	select {
	case <-st.in.ended:
		s.log.Debug("stdin ended; answering what was asked", "err", st.in.err) // set before ended closed
		s.m.CancelAll()
		select {
		case <-st.in.track.wait():
		case <-time.After(DrainTimeout):
			s.log.Warn("requests still unanswered after stdin ended; giving up on them", "timeout", DrainTimeout)
		case <-ctx.Done():
		}
	case <-st.in.upgraded:
		err := s.serveV2(ctx, c, st, w, false)
		return errors.Join(err, s.m.Shutdown())
	case <-st.sdk.Done():
		s.log.Debug("connection closed")
	case <-st.out.broken:
		s.log.Warn("the client's end of stdout is gone; shutting down", "err", st.out.writeError)
	case <-ctx.Done():
		s.log.Debug("stopping", "cause", context.Cause(ctx))
	}
	c.end(st)
	return s.m.Shutdown()
}

// serveV2 hands a connection whose first initialize asked for v2 to the v2
// edge, once the v1 side has answered what it was asked before (an
// authenticate) and let go of the stream: Serve and ServeConn negotiate
// alike, as the TS SDK's AgentProtocolRouter does.
func (s *Server) serveV2(ctx context.Context, c *conn, st stream, w io.Writer, shared bool) error {
	select {
	case <-st.in.track.wait():
	case <-ctx.Done():
	}
	c.end(st)
	s.log.Debug("the client asked for ACP v2", "shared", shared)
	return s.v2(ctx, V2Conn{Bridge: c.bc, First: st.in.up.first, Rest: st.in.up.rest, Out: w, Shared: shared})
}

// ServeConn speaks ACP with one of several clients on r and w (one message
// per line each way), sharing the Manager's sessions with the others; the
// new sessions it makes run agentName ("" for the bridge's default). When
// r ends, w breaks or ctx is done, the connection ends: its sessions go on
// unattached (see bridge.Conn), and ServeConn returns once the requests it
// read are answered (a prompt's when its turn ends), or at once when ctx
// is done. It leaves the Manager running; whoever made it shuts it down.
// A client whose first initialize asks for protocol 2 is served by the v2
// edge (ServeV2), on the same terms.
func (s *Server) ServeConn(ctx context.Context, r io.Reader, w io.Writer, agentName string) error {
	bc, err := s.m.Connect(agentName)
	if err != nil {
		return err
	}
	c := s.newConn(bc)
	st := c.start(r, w)
	select {
	case <-st.in.upgraded:
		return s.serveV2(ctx, c, st, w, true)
	case <-st.in.ended:
	case <-st.sdk.Done():
	case <-st.out.broken:
	case <-ctx.Done():
	}
	bc.Disconnect()
	select {
	case <-st.in.track.wait():
	case <-ctx.Done():
	}
	c.end(st)
	return nil
}

// Initialize answers with the bridge's capabilities: those of the default
// agent for prompts and MCP, and the session methods it implements. The
// default agent starts warming up once the answer is out: finding its
// executable, reading its settings, attending a daemon and starting a
// spare take milliseconds that the client's first answer need not wait
// for (the first session/new comes a round trip later).
func (s *conn) Initialize(_ context.Context, req acp.InitializeRequest) (acp.InitializeResponse, error) {
	s.bc.SetCapabilities(req.ClientCapabilities)
	s.out.afterInitialize(s.bc.Warm)
	info := s.bc.Info()
	return acp.InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentInfo:       &acp.Implementation{Name: "acpbridge", Title: ptr("acpbridge"), Version: s.version},
		AuthMethods:     s.authMethods(req.ClientCapabilities),
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession:        true,
			Auth:               s.authCapabilities(),
			PromptCapabilities: info.Prompt,
			McpCapabilities:    info.MCP,
			SessionCapabilities: acp.SessionCapabilities{
				List:   &acp.SessionListCapabilities{},
				Resume: &acp.SessionResumeCapabilities{},
				Close:  &acp.SessionCloseCapabilities{},
				Delete: &acp.SessionDeleteCapabilities{},
				Fork:   &acp.SessionForkCapabilities{},

				AdditionalDirectories: directoriesCap(info.Caps),
				SystemPrompt:          systemPromptCap(info.Caps),
			},
		},
	}, nil
}

// Logout runs the default agent's own logout, offered
// (agentCapabilities.auth.logout) when the bridge offers logins and the
// agent has one that runs without a terminal.
func (s *Server) Logout(ctx context.Context, _ acp.LogoutRequest) (acp.LogoutResponse, error) {
	if !s.offersLogout() {
		return acp.LogoutResponse{}, acp.NewMethodNotFound(acp.AgentMethodLogout)
	}
	if err := s.m.Logout(ctx); err != nil {
		return acp.LogoutResponse{}, s.reqErr("logout", err)
	}
	return acp.LogoutResponse{}, nil
}

func (s *Server) offersLogout() bool { return s.login.Args != nil && s.m.CanLogout() }

// NewSession starts a session on the default agent.
func (s *conn) NewSession(ctx context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	in, err := setup(req.Cwd, req.AdditionalDirectories, req.McpServers, req.SystemPrompt)
	if err != nil {
		return acp.NewSessionResponse{}, s.reqErr("session/new", err)
	}
	sess, err := s.bc.New(ctx, in)
	if err != nil {
		return acp.NewSessionResponse{}, s.reqErr("session/new", err)
	}
	st := sess.State()
	return acp.NewSessionResponse{SessionId: acp.SessionId(sess.ID()), Modes: st.Modes, ConfigOptions: st.ConfigOptions, Meta: st.Meta}, nil
}

// LoadSession replays a stored session and answers after the replay.
func (s *conn) LoadSession(ctx context.Context, req acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	in, err := setup(req.Cwd, req.AdditionalDirectories, req.McpServers, req.SystemPrompt)
	if err != nil {
		return acp.LoadSessionResponse{}, s.reqErr("session/load", err)
	}
	sess, err := s.bc.Load(ctx, string(req.SessionId), in)
	if err != nil {
		return acp.LoadSessionResponse{}, s.reqErr("session/load", err)
	}
	st := sess.State()
	return acp.LoadSessionResponse{Modes: st.Modes, ConfigOptions: st.ConfigOptions, Meta: st.Meta}, nil
}

// ResumeSession reopens a stored session without replay.
func (s *conn) ResumeSession(ctx context.Context, req acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	in, err := setup(req.Cwd, req.AdditionalDirectories, req.McpServers, req.SystemPrompt)
	if err != nil {
		return acp.ResumeSessionResponse{}, s.reqErr("session/resume", err)
	}
	sess, err := s.bc.Resume(ctx, string(req.SessionId), in)
	if err != nil {
		return acp.ResumeSessionResponse{}, s.reqErr("session/resume", err)
	}
	st := sess.State()
	return acp.ResumeSessionResponse{Modes: st.Modes, ConfigOptions: st.ConfigOptions, Meta: st.Meta}, nil
}

// ListSessions lists stored sessions of every agent, newest first.
func (s *Server) ListSessions(_ context.Context, req acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	page, next, err := s.m.List(deref(req.Cwd), deref(req.Cursor))
	if err != nil {
		return acp.ListSessionsResponse{}, s.reqErr("session/list", err)
	}
	resp := acp.ListSessionsResponse{Sessions: page}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

// CloseSession cancels and releases a session; its transcript stays.
func (s *conn) CloseSession(ctx context.Context, req acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	if err := s.bc.Close(ctx, string(req.SessionId)); err != nil {
		return acp.CloseSessionResponse{}, s.reqErr("session/close", err)
	}
	return acp.CloseSessionResponse{}, nil
}

// UnstableForkSession starts a session that begins as a copy of another
// (bridge.Manager.Fork).
func (s *conn) UnstableForkSession(ctx context.Context, req acp.UnstableForkSessionRequest) (acp.UnstableForkSessionResponse, error) {
	var mcp []acp.McpServer
	if err := convert(req.McpServers, &mcp); err != nil {
		return acp.UnstableForkSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": "mcpServers: " + err.Error()})
	}
	var prompt *acp.SystemPrompt
	if err := convert(req.SystemPrompt, &prompt); err != nil {
		return acp.UnstableForkSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": "systemPrompt: " + err.Error()})
	}
	in, err := setup(req.Cwd, req.AdditionalDirectories, mcp, prompt)
	if err != nil {
		return acp.UnstableForkSessionResponse{}, s.reqErr("session/fork", err)
	}
	sess, err := s.bc.Fork(ctx, string(req.SessionId), in)
	if err != nil {
		return acp.UnstableForkSessionResponse{}, s.reqErr("session/fork", err)
	}
	st := sess.State()
	resp := acp.UnstableForkSessionResponse{SessionId: acp.SessionId(sess.ID()), Modes: st.Modes, Meta: st.Meta}
	if err := convert(st.ConfigOptions, &resp.ConfigOptions); err != nil {
		return acp.UnstableForkSessionResponse{}, s.reqErr("session/fork", err)
	}
	return resp, nil
}

// convert moves a value between the SDK's stable and unstable twins of a
// type (McpServer and UnstableMcpServer, ...), which share their JSON.
func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// DeleteSession closes a session and removes its transcript.
func (s *conn) DeleteSession(ctx context.Context, req acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
	if err := s.bc.Delete(ctx, string(req.SessionId)); err != nil {
		return acp.DeleteSessionResponse{}, s.reqErr("session/delete", err)
	}
	return acp.DeleteSessionResponse{}, nil
}

// Prompt runs a turn. A cancelled turn answers stopReason "cancelled".
func (s *conn) Prompt(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	s.blobs.restore(req.Prompt)
	arrived := s.order.enter(string(req.SessionId), arrival(&req))
	// Not ctx: the SDK cancels a prompt's context when the session's next
	// prompt comes, and a load in flight always ends.
	sess, err := s.bc.Get(context.WithoutCancel(ctx), string(req.SessionId))
	if err != nil {
		return acp.PromptResponse{}, s.reqErr("session/prompt", err)
	}
	res, err := sess.Prompt(ctx, arrived, req.Prompt)
	if h := s.order.hooks; h != nil && h.answering != nil {
		h.answering(arrived.At)
	}
	if err != nil {
		return acp.PromptResponse{}, s.reqErr("session/prompt", err)
	}
	return acp.PromptResponse{StopReason: res.StopReason, Usage: res.Usage}, nil
}

// Cancel cancels a session's prompts that arrived before it, running or
// not yet begun. It must return quickly: the SDK handles notifications one
// at a time.
func (s *conn) Cancel(_ context.Context, n acp.CancelNotification) error {
	s.bc.Cancel(string(n.SessionId), s.order.cancel(string(n.SessionId)))
	return nil
}

// SetSessionMode switches a session's mode.
func (s *conn) SetSessionMode(ctx context.Context, req acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	sess, err := s.bc.Get(ctx, string(req.SessionId))
	if err == nil {
		err = sess.SetMode(ctx, string(req.ModeId))
	}
	if err != nil {
		return acp.SetSessionModeResponse{}, s.reqErr("session/set_mode", err)
	}
	return acp.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption sets the mode, model or agent of a session.
func (s *conn) SetSessionConfigOption(ctx context.Context, req acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	v := req.ValueId
	if v == nil {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"error": "acpbridge has only select config options"})
	}
	sess, err := s.bc.Get(ctx, string(v.SessionId))
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, s.reqErr("session/set_config_option", err)
	}
	opts, err := sess.SetConfigOption(ctx, string(v.ConfigId), string(v.Value))
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, s.reqErr("session/set_config_option", err)
	}
	return acp.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

func ptr[T any](v T) *T { return &v }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// QuietSDK is log for an acp-go-sdk connection (SetLogger): it passes the
// SDK's warnings and errors on, and its chatter (such as "connection
// closed" at every exit) only at debug level.
func QuietSDK(log *slog.Logger) *slog.Logger { return slog.New(quieter{log.Handler()}) }

// quieter is QuietSDK's handler.
type quieter struct{ slog.Handler }

func (q quieter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		r.Level = slog.LevelDebug
	}
	if !q.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

func (q quieter) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, min(l, slog.LevelDebug)) || q.Handler.Enabled(ctx, l)
}

func (q quieter) WithAttrs(as []slog.Attr) slog.Handler { return quieter{q.Handler.WithAttrs(as)} }
func (q quieter) WithGroup(g string) slog.Handler       { return quieter{q.Handler.WithGroup(g)} }
