// Package acp is acpbridge's ACP edge: it speaks the Agent Client Protocol
// (JSON-RPC 2.0, one message per line) on the editor's side through
// github.com/coder/acp-go-sdk, guards the input stream against what the SDK
// would silently drop, and maps bridge errors onto ACP error codes. It knows
// no agent: every method is a thin call into a bridge.Manager.
package acp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	sdk "github.com/coder/acp-go-sdk"
)

// ProtocolVersion is the ACP version the bridge speaks.
const ProtocolVersion = sdk.ProtocolVersion(sdk.ProtocolVersionNumber)

// Server implements the agent side of ACP on top of a bridge.Manager.
type Server struct {
	m       *bridge.Manager
	version string
	log     *slog.Logger
	maxLine int
	order   *arrivals
	blobs   *blobs
	own     *ownCalls

	login Login

	mu         sync.Mutex // protects clientCaps
	clientCaps sdk.ClientCapabilities
}

var (
	_ sdk.Agent       = (*Server)(nil)
	_ sdk.AgentLoader = (*Server)(nil)
)

// NewServer returns a Server for m; version is reported in agentInfo.
func NewServer(m *bridge.Manager, version string, log *slog.Logger) *Server {
	s := &Server{m: m, version: version, log: log, maxLine: MaxLine, order: newArrivals(), blobs: newBlobs(), own: newOwnCalls()}
	s.order.cancelPrompt = m.CancelPrompt
	return s
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
	out := newLockedWriter(w)
	in := guard(r, out, s.order, s.blobs, s.maxLine, s.log)
	in.own = s.own
	conn := sdk.NewAgentSideConnection(s, out, in)
	conn.SetLogger(slog.New(quieter{s.log.Handler()}))
	s.m.SetClient(client{conn, out, s.own})
	select {
	case <-in.ended:
		s.log.Debug("stdin ended; answering what was asked", "err", in.err) // set before ended closed
		s.m.CancelAll()
		select {
		case <-in.track.wait():
		case <-time.After(DrainTimeout):
			s.log.Warn("requests still unanswered after stdin ended; giving up on them", "timeout", DrainTimeout)
		case <-ctx.Done():
		}
	case <-conn.Done():
		s.log.Debug("connection closed")
	case <-out.broken:
		s.log.Warn("the client's end of stdout is gone; shutting down", "err", out.writeError)
	case <-ctx.Done():
		s.log.Debug("stopping", "cause", context.Cause(ctx))
	}
	in.Close()
	s.order.close()
	return s.m.Shutdown()
}

// Initialize answers with the bridge's capabilities: those of the default
// agent for prompts and MCP, and the session methods it implements. The
// default agent starts warming up meanwhile.
func (s *Server) Initialize(_ context.Context, req sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	s.mu.Lock()
	s.clientCaps = req.ClientCapabilities
	s.mu.Unlock()
	s.m.SetClientCapabilities(req.ClientCapabilities)
	s.m.Warm()
	info := s.m.DefaultInfo()
	return sdk.InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		AgentInfo:       &sdk.Implementation{Name: "acpbridge", Title: ptr("acpbridge"), Version: s.version},
		AuthMethods:     s.authMethods(req.ClientCapabilities),
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			Auth:               s.authCapabilities(),
			PromptCapabilities: info.Prompt,
			McpCapabilities:    info.MCP,
			SessionCapabilities: sdk.SessionCapabilities{
				List:   &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{},
				Close:  &sdk.SessionCloseCapabilities{},
				Delete: &sdk.SessionDeleteCapabilities{},
				Fork:   &sdk.SessionForkCapabilities{},
			},
		},
	}, nil
}

// Logout runs the default agent's own logout, offered
// (agentCapabilities.auth.logout) when the bridge offers logins and the
// agent has one that runs without a terminal.
func (s *Server) Logout(ctx context.Context, _ sdk.LogoutRequest) (sdk.LogoutResponse, error) {
	if !s.offersLogout() {
		return sdk.LogoutResponse{}, sdk.NewMethodNotFound(sdk.AgentMethodLogout)
	}
	if err := s.m.Logout(ctx); err != nil {
		return sdk.LogoutResponse{}, s.reqErr("logout", err)
	}
	return sdk.LogoutResponse{}, nil
}

func (s *Server) offersLogout() bool { return s.login.Args != nil && s.m.CanLogout() }

// NewSession starts a session on the default agent.
func (s *Server) NewSession(ctx context.Context, req sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	sess, err := s.m.New(ctx, req.Cwd, req.McpServers)
	if err != nil {
		return sdk.NewSessionResponse{}, s.reqErr("session/new", err)
	}
	st := sess.State()
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(sess.ID()), Modes: st.Modes, ConfigOptions: st.ConfigOptions, Meta: st.Meta}, nil
}

// LoadSession replays a stored session and answers after the replay.
func (s *Server) LoadSession(ctx context.Context, req sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	sess, err := s.m.Load(ctx, string(req.SessionId), req.Cwd, req.McpServers)
	if err != nil {
		return sdk.LoadSessionResponse{}, s.reqErr("session/load", err)
	}
	st := sess.State()
	return sdk.LoadSessionResponse{Modes: st.Modes, ConfigOptions: st.ConfigOptions, Meta: st.Meta}, nil
}

// ResumeSession reopens a stored session without replay.
func (s *Server) ResumeSession(ctx context.Context, req sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	sess, err := s.m.Resume(ctx, string(req.SessionId), req.Cwd, req.McpServers)
	if err != nil {
		return sdk.ResumeSessionResponse{}, s.reqErr("session/resume", err)
	}
	st := sess.State()
	return sdk.ResumeSessionResponse{Modes: st.Modes, ConfigOptions: st.ConfigOptions, Meta: st.Meta}, nil
}

// ListSessions lists stored sessions of every agent, newest first.
func (s *Server) ListSessions(_ context.Context, req sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	page, next, err := s.m.List(deref(req.Cwd), deref(req.Cursor))
	if err != nil {
		return sdk.ListSessionsResponse{}, s.reqErr("session/list", err)
	}
	resp := sdk.ListSessionsResponse{Sessions: page}
	if next != "" {
		resp.NextCursor = &next
	}
	return resp, nil
}

// CloseSession cancels and releases a session; its transcript stays.
func (s *Server) CloseSession(ctx context.Context, req sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	if err := s.m.Close(ctx, string(req.SessionId)); err != nil {
		return sdk.CloseSessionResponse{}, s.reqErr("session/close", err)
	}
	return sdk.CloseSessionResponse{}, nil
}

// UnstableForkSession starts a session that begins as a copy of another
// (bridge.Manager.Fork).
func (s *Server) UnstableForkSession(ctx context.Context, req sdk.UnstableForkSessionRequest) (sdk.UnstableForkSessionResponse, error) {
	var mcp []sdk.McpServer
	if err := convert(req.McpServers, &mcp); err != nil {
		return sdk.UnstableForkSessionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "mcpServers: " + err.Error()})
	}
	sess, err := s.m.Fork(ctx, string(req.SessionId), req.Cwd, mcp)
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, s.reqErr("session/fork", err)
	}
	st := sess.State()
	resp := sdk.UnstableForkSessionResponse{SessionId: sdk.SessionId(sess.ID()), Modes: st.Modes, Meta: st.Meta}
	if err := convert(st.ConfigOptions, &resp.ConfigOptions); err != nil {
		return sdk.UnstableForkSessionResponse{}, s.reqErr("session/fork", err)
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

// UnstableDeleteSession closes a session and removes its transcript.
func (s *Server) UnstableDeleteSession(ctx context.Context, req sdk.UnstableDeleteSessionRequest) (sdk.UnstableDeleteSessionResponse, error) {
	if err := s.m.Delete(ctx, string(req.SessionId)); err != nil {
		return sdk.UnstableDeleteSessionResponse{}, s.reqErr("session/delete", err)
	}
	return sdk.UnstableDeleteSessionResponse{}, nil
}

// Prompt runs a turn. A cancelled turn answers stopReason "cancelled".
func (s *Server) Prompt(ctx context.Context, req sdk.PromptRequest) (sdk.PromptResponse, error) {
	s.blobs.restore(req.Prompt)
	arrived := s.order.enter(string(req.SessionId), arrival(&req))
	// Not ctx: the SDK cancels a prompt's context when the session's next
	// prompt comes, and a load in flight always ends.
	sess, err := s.m.Get(context.WithoutCancel(ctx), string(req.SessionId))
	if err != nil {
		return sdk.PromptResponse{}, s.reqErr("session/prompt", err)
	}
	res, err := sess.Prompt(ctx, arrived, req.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, s.reqErr("session/prompt", err)
	}
	return sdk.PromptResponse{StopReason: res.StopReason, Usage: res.Usage}, nil
}

// Cancel cancels a session's prompts that arrived before it, running or
// not yet begun. It must return quickly: the SDK handles notifications one
// at a time.
func (s *Server) Cancel(_ context.Context, n sdk.CancelNotification) error {
	s.m.Cancel(string(n.SessionId), s.order.cancel(string(n.SessionId)))
	return nil
}

// SetSessionMode switches a session's mode.
func (s *Server) SetSessionMode(ctx context.Context, req sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	sess, err := s.m.Get(ctx, string(req.SessionId))
	if err == nil {
		err = sess.SetMode(ctx, string(req.ModeId))
	}
	if err != nil {
		return sdk.SetSessionModeResponse{}, s.reqErr("session/set_mode", err)
	}
	return sdk.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption sets the mode, model or agent of a session.
func (s *Server) SetSessionConfigOption(ctx context.Context, req sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := req.ValueId
	if v == nil {
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "acpbridge has only select config options"})
	}
	sess, err := s.m.Get(ctx, string(v.SessionId))
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, s.reqErr("session/set_config_option", err)
	}
	opts, err := sess.SetConfigOption(ctx, string(v.ConfigId), string(v.Value))
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, s.reqErr("session/set_config_option", err)
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

func ptr[T any](v T) *T { return &v }

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// quieter passes the SDK's warnings and errors on, and its chatter (such as
// "connection closed" at every exit) only at debug level.
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
