// Package edgev2 is acpbridge's ACP v2 (draft) edge: it serves a client
// whose first initialize asked for protocol 2 (acp/edge routes it here, as
// the TS SDK's AgentProtocolRouter does) with the types generated from v2's
// schema (third_party/acpv2), over JSON-RPC framed by jrpc2. It drives the
// same bridge.Conn as the v1 edge: the bridge speaks v1 to its Client, and
// this edge's client turns those updates into v2's upserts and turn states
// (see convert.go). It knows no agent.
package edgev2

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/bridge"
	acpv2 "github.com/acpbridge/acpbridge/third_party/acpv2"
	"github.com/coder/acp-go-sdk"
	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
	"github.com/creachadair/jrpc2/handler"
)

// ProtocolVersion is the ACP version this edge speaks.
const ProtocolVersion = acpv2.ProtocolVersion(acpv2.ProtocolVersionNumber)

// Server serves ACP v2 connections for a v1 edge.Server's bridge.
type Server struct {
	v1      *edge.Server
	m       *bridge.Manager
	version string
	log     *slog.Logger
}

// New returns a v2 edge beside v1 (whose error mapping it shares), for m;
// version is reported in info. Hand its Serve to v1.ServeV2.
func New(v1 *edge.Server, m *bridge.Manager, version string, log *slog.Logger) *Server {
	return &Server{v1: v1, m: m, version: version, log: log}
}

// conn is one v2 client connection.
type conn struct {
	*Server
	bc  *bridge.Conn
	rpc *jrpc2.Server

	turns sync.WaitGroup // the prompts' turns, which outlive their requests

	firstID string      // the id of the initialize that chose v2, as jrpc2 spells ids
	ended   func() bool // on stdio: whether the input has ended (nil on a shared connection)

	// mu guards what follows. It is taken inside jrpc2's lock (output
	// calls sentAsk as jrpc2 writes), so nothing sends to the client while
	// holding it.
	mu          sync.Mutex
	initialized bool
	auth        bool // initialize offered auth methods: auth/login and auth/logout are served
	order       bridge.Order
	active      map[string]int    // by session: prompts taken and not ended
	running     int               // prompts taken and not ended, in all
	quiet       chan struct{}     // closed when running drops to 0 (turnsEnded)
	msgs        map[string]string // by session and kind: the id of a chunk run without one
	asking      map[string]int    // by session: permission asks waiting for the client
	waiting     map[askKey]*waiting
	outstanding map[string]bool            // the ids of the asks waiting, as written
	cancelled   map[askKey]bool            // tool calls tool_call/cancel refused, until their session's turns end
	kids        map[string]map[string]bool // by session: its children at work (background.go)
	listed      map[string]bool            // by session: its state snapshots list background work
	replays     map[string]int             // by session: replays under way (their subagents are history)

	// stateMu orders the state snapshots: each is made and sent under it,
	// so that the last sent says the latest (taken before mu).
	stateMu sync.Mutex
}

// Serve speaks ACP v2 on vc.Bridge with a client whose first line, an
// initialize asking for v2, is vc.First, and the rest of whose input is
// vc.Rest, until that ends or ctx is done. On stdio its running turns are
// then cancelled and waited for. A shared connection (acpbridge serve's)
// disconnects instead: its sessions go on unattached, and Serve waits for
// the turns it started to end, as the v1 edge waits for a prompt's answer,
// unless ctx is done.
func (s *Server) Serve(ctx context.Context, vc edge.V2Conn) error {
	bc := vc.Bridge
	c := &conn{Server: s, bc: bc, active: make(map[string]int), msgs: make(map[string]string), asking: make(map[string]int),
		waiting: make(map[askKey]*waiting), outstanding: make(map[string]bool), kids: make(map[string]map[string]bool), listed: make(map[string]bool), replays: make(map[string]int), cancelled: make(map[askKey]bool), firstID: idOf(vc.First)}
	order := newOrdered(c.methods())
	c.rpc = jrpc2.NewServer(order, &jrpc2.ServerOptions{AllowPush: true, Concurrency: concurrency})
	bc.SetClient(client{c})
	atEOF := func() {
		s.m.CancelAll()
		c.turns.Wait()
	}
	if vc.Shared {
		atEOF = bc.Disconnect // its open asks end; the answers still go out
	}
	in := newDrain(io.MultiReader(bytesReader(append(vc.First, '\n')), vc.Rest), atEOF, c.keepAnswer)
	if !vc.Shared {
		c.ended = in.ended.Load
	}
	c.rpc.Start(channel.Line(in, output{vc.Out, in, c.sentAsk}))
	stop := context.AfterFunc(ctx, c.rpc.Stop)
	err := c.rpc.Wait()
	stop()
	order.wait()
	c.end(ctx, vc.Shared)
	if errors.Is(err, io.EOF) || errors.Is(err, jrpc2.ErrConnClosed) {
		return nil
	}
	return err
}

// end ends the connection's turns: on stdio by cancelling every turn, on a
// shared connection by leaving its sessions unattached and waiting for
// the turns to end by themselves (or ctx).
func (c *conn) end(ctx context.Context, shared bool) {
	if !shared {
		c.m.CancelAll()
		c.turns.Wait()
		return
	}
	c.bc.Disconnect()
	select {
	case <-c.turnsEnded():
		c.turns.Wait() // their last steps
	case <-ctx.Done():
	}
}

// turnsEnded is closed once no turn the connection started runs.
func (c *conn) turnsEnded() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan struct{})
	if c.running == 0 {
		close(ch)
		return ch
	}
	c.quiet = ch
	return ch
}

// turnEndedLocked counts a turn's end; it reports whether it was its session's
// last. c.mu is held.
func (c *conn) turnEndedLocked(sid string) bool {
	c.active[sid]--
	c.running--
	if c.running == 0 && c.quiet != nil {
		close(c.quiet)
		c.quiet = nil
	}
	if c.active[sid] > 0 {
		return false
	}
	for k := range c.cancelled {
		if k.sid == sid {
			delete(c.cancelled, k)
		}
	}
	return true
}

func (c *conn) methods() handler.Map {
	return handler.Map{
		acpv2.AgentMethodInitialize:             handler.New(c.initialize),
		acpv2.AgentMethodSessionNew:             handler.New(c.newSession),
		acpv2.AgentMethodSessionPrompt:          handler.New(c.prompt),
		acpv2.AgentMethodSessionCancel:          handler.New(c.cancel),
		acpv2.AgentMethodSessionList:            handler.New(c.list),
		acpv2.AgentMethodSessionResume:          handler.New(c.resume),
		acpv2.AgentMethodSessionClose:           handler.New(c.closeSession),
		acpv2.AgentMethodSessionDelete:          handler.New(c.deleteSession),
		acpv2.AgentMethodSessionSetConfigOption: handler.New(c.setConfigOption),
		acpv2.AgentMethodToolCallCancel:         handler.New(c.cancelToolCall),
		acpv2.AgentMethodAuthLogin:              handler.New(c.login),
		acpv2.AgentMethodAuthLogout:             handler.New(c.logout),
		"$/cancel_request":                      handler.New(c.cancelRequest),
	}
}

// initialize answers with v2's info and capabilities. A repeat must ask
// for v2 or later (-32600 otherwise, as the TS SDK's v2 agent answers).
func (c *conn) initialize(ctx context.Context, req acpv2.InitializeRequest) (acpv2.InitializeResponse, error) {
	c.mu.Lock()
	// The first is the one the router saw (a client may reuse its id).
	again := c.initialized || jrpc2.InboundRequest(ctx).ID() != c.firstID
	if !again {
		c.initialized = true
	}
	c.mu.Unlock()
	if again && req.ProtocolVersion < ProtocolVersion {
		return acpv2.InitializeResponse{}, &jrpc2.Error{Code: jrpc2.InvalidRequest,
			Message: fmt.Sprintf("Invalid request: a repeated initialize asked for protocol %d on an ACP v2 connection", req.ProtocolVersion)}
	}
	caps := v1Capabilities(req.Capabilities)
	methods, err := authMethods(c.v1.AuthMethods(caps))
	if err != nil {
		return acpv2.InitializeResponse{}, c.reqErr("initialize", err)
	}
	c.mu.Lock()
	c.auth = len(methods) > 0
	c.mu.Unlock()
	c.bc.SetCapabilities(caps)
	if !again {
		c.bc.Warm()
	}
	info := c.bc.Info()
	session := &acpv2.SessionCapabilities{
		Prompt: promptCaps(info.Prompt),
		Mcp:    mcpCaps(info.MCP),
		Delete: &acpv2.SessionDeleteCapabilities{},
	}
	if info.Caps.Directories {
		session.AdditionalDirectories = &acpv2.SessionAdditionalDirectoriesCapabilities{}
	}
	title := "acpbridge"
	return acpv2.InitializeResponse{
		ProtocolVersion: ProtocolVersion,
		Info:            acpv2.Implementation{Name: "acpbridge", Title: &title, Version: c.version},
		Capabilities:    acpv2.AgentCapabilities{Session: session},
		AuthMethods:     methods,
	}, nil
}

// login is auth/login onto v1's authenticate: {} when the agent the
// method names has credentials now, auth_required (-32000) saying what to
// run when it has none. Without auth methods offered it is -32601, as v2
// requires it only then.
func (c *conn) login(ctx context.Context, req acpv2.LoginAuthRequest) (acpv2.LoginAuthResponse, error) {
	if !c.offersAuth() {
		return acpv2.LoginAuthResponse{}, jrpc2.Errorf(jrpc2.MethodNotFound, "Method not found: auth/login (acpbridge offers no auth methods here)")
	}
	if _, err := c.v1.Authenticate(ctx, acp.AuthenticateRequest{MethodId: acp.AuthMethodId(req.MethodId)}); err != nil {
		return acpv2.LoginAuthResponse{}, rpcError(err)
	}
	return acpv2.LoginAuthResponse{}, nil
}

// logout is auth/logout onto v1's logout: the default agent's own logout,
// run without a terminal; -32602 for an agent that has none acpbridge can
// run, and -32601 without auth methods offered.
func (c *conn) logout(ctx context.Context, _ acpv2.LogoutAuthRequest) (acpv2.LogoutAuthResponse, error) {
	if !c.offersAuth() {
		return acpv2.LogoutAuthResponse{}, jrpc2.Errorf(jrpc2.MethodNotFound, "Method not found: auth/logout (acpbridge offers no auth methods here)")
	}
	if err := c.m.Logout(ctx); err != nil {
		return acpv2.LogoutAuthResponse{}, c.reqErr("auth/logout", err)
	}
	return acpv2.LogoutAuthResponse{}, nil
}

func (c *conn) offersAuth() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.auth
}

// newSession starts a session on the connection's agent.
func (c *conn) newSession(ctx context.Context, req acpv2.NewSessionRequest) (acpv2.NewSessionResponse, error) {
	st, err := c.setup(string(req.Cwd), req.AdditionalDirectories, req.McpServers, req.SystemPrompt)
	if err != nil {
		return acpv2.NewSessionResponse{}, err
	}
	sess, err := c.bc.New(ctx, st)
	if err != nil {
		return acpv2.NewSessionResponse{}, c.reqErr("session/new", err)
	}
	opts, err := configOptions(sess.State().ConfigOptions)
	if err != nil {
		return acpv2.NewSessionResponse{}, c.reqErr("session/new", err)
	}
	return acpv2.NewSessionResponse{SessionId: acpv2.SessionId(sess.ID()), ConfigOptions: opts}, nil
}

// setup is a session's bridge.Setup from v2's fields, which share v1's
// JSON.
func (c *conn) setup(cwd string, dirs []acpv2.AbsolutePath, mcp []acpv2.McpServer, prompt *acpv2.SystemPrompt) (bridge.Setup, error) {
	var (
		d  []string
		m  []acp.McpServer
		sp *acp.SystemPrompt
	)
	for _, x := range dirs {
		d = append(d, string(x))
	}
	if err := convert(mcp, &m); err != nil {
		return bridge.Setup{}, invalidParams("mcpServers: " + err.Error())
	}
	if err := convert(prompt, &sp); err != nil {
		return bridge.Setup{}, invalidParams("systemPrompt: " + err.Error())
	}
	st, err := edge.NewSetup(cwd, d, m, sp)
	if err != nil {
		return bridge.Setup{}, c.reqErr("setup", err)
	}
	return st, nil
}

// prompt answers at once with the user message's id, and runs the turn on
// a goroutine of its own: the turn's end is a state_update idle.
func (c *conn) prompt(ctx context.Context, req acpv2.PromptRequest) (acpv2.PromptResponse, error) {
	sid := string(req.SessionId)
	var blocks []acp.ContentBlock
	if err := convert(req.Prompt, &blocks); err != nil {
		return acpv2.PromptResponse{}, invalidParams("prompt: " + err.Error())
	}
	sess, err := c.bc.Get(ctx, sid)
	if err != nil {
		return acpv2.PromptResponse{}, c.reqErr("session/prompt", err)
	}
	mid := bridge.NewMessageID()
	c.mu.Lock()
	c.order++
	at := c.order
	c.active[sid]++
	c.running++
	first := c.active[sid] == 1
	c.mu.Unlock()
	if first {
		c.state(sid, "running", "")
	}
	c.notify(sid, acpv2.SessionUpdate{UserMessage: &acpv2.SessionUpdateUserMessage{MessageId: acpv2.MessageId(mid), Content: req.Prompt}})
	// The answer waits for the prompt to hold its place in the session's
	// queue, so that the next request (which runs once this one returned,
	// see ordered) cannot queue a prompt before it.
	queued := make(chan struct{})
	c.turns.Go(func() {
		res, err := sess.Prompt(context.WithoutCancel(ctx), bridge.Arrival{At: at, MessageID: mid, Queued: func() { close(queued) }}, blocks)
		stop := string(res.StopReason)
		if err != nil {
			c.log.Warn("turn failed", "session", sid, "err", err)
			stop = "error"
		}
		c.mu.Lock()
		last := c.turnEndedLocked(sid)
		c.mu.Unlock()
		if last {
			c.state(sid, "idle", stop)
		}
	})
	<-queued
	if c.ended != nil && c.ended() {
		// On stdio the input's end cancels every prompt that came before
		// it, as over v1; this one was taken after the cancel went out.
		c.cancel(ctx, acpv2.CancelSessionNotification{SessionId: req.SessionId})
	}
	return acpv2.PromptResponse{MessageId: acpv2.MessageId(mid)}, nil
}

// cancel cancels the session's prompts taken before it, and withdraws
// its permission asks.
func (c *conn) cancel(_ context.Context, n acpv2.CancelSessionNotification) error {
	c.mu.Lock()
	c.order++
	at := c.order
	c.mu.Unlock()
	c.bc.Cancel(string(n.SessionId), at)
	c.cancelAsks(string(n.SessionId))
	return nil
}

// cancelRequest is $/cancel_request: the request's context ends.
func (c *conn) cancelRequest(_ context.Context, n acpv2.CancelRequestNotification) error {
	b, err := json.Marshal(n.RequestId)
	if err == nil {
		c.rpc.CancelRequest(string(b))
	}
	return nil
}

// list lists stored sessions of every agent, newest first.
func (c *conn) list(_ context.Context, req acpv2.ListSessionsRequest) (acpv2.ListSessionsResponse, error) {
	var cwd, cursor string
	if req.Cwd != nil {
		cwd = string(*req.Cwd)
	}
	if req.Cursor != nil {
		cursor = string(*req.Cursor)
	}
	page, next, err := c.m.List(cwd, cursor)
	if err != nil {
		return acpv2.ListSessionsResponse{}, c.reqErr("session/list", err)
	}
	resp := acpv2.ListSessionsResponse{Sessions: []acpv2.SessionInfo{}}
	if err := convert(page, &resp.Sessions); err != nil {
		return acpv2.ListSessionsResponse{}, c.reqErr("session/list", err)
	}
	if next != "" {
		n := acpv2.SessionListCursor(next)
		resp.NextCursor = &n
	}
	return resp, nil
}

// resume reopens a session, replaying its history with replayFrom start
// (an unknown cursor is -32602 before anything is done), then sends its
// current state and answers.
func (c *conn) resume(ctx context.Context, req acpv2.ResumeSessionRequest) (acpv2.ResumeSessionResponse, error) {
	replay := false
	if r := req.ReplayFrom; r != nil {
		// The generated decoder takes any {"type":…} as Start: check the tag.
		if r.Start == nil || r.Start.Type != "start" {
			return acpv2.ResumeSessionResponse{}, invalidParams("replayFrom: acpbridge knows only the cursor {\"type\":\"start\"}")
		}
		replay = true
	}
	st, err := c.setup(string(req.Cwd), req.AdditionalDirectories, req.McpServers, req.SystemPrompt)
	if err != nil {
		return acpv2.ResumeSessionResponse{}, err
	}
	sid := string(req.SessionId)
	var sess *bridge.Session
	if replay {
		c.replaying(sid, 1)
		sess, err = c.bc.Load(ctx, sid, st)
		c.replaying(sid, -1)
	} else {
		sess, err = c.bc.Resume(ctx, sid, st)
	}
	if err != nil {
		return acpv2.ResumeSessionResponse{}, c.reqErr("session/resume", err)
	}
	c.mu.Lock()
	running := c.active[sid] > 0
	c.mu.Unlock()
	if running {
		c.state(sid, "running", "")
	} else {
		c.state(sid, "idle", "")
	}
	opts, err := configOptions(sess.State().ConfigOptions)
	if err != nil {
		return acpv2.ResumeSessionResponse{}, c.reqErr("session/resume", err)
	}
	return acpv2.ResumeSessionResponse{ConfigOptions: opts}, nil
}

// closeSession cancels and releases a session; its transcript stays.
func (c *conn) closeSession(ctx context.Context, req acpv2.CloseSessionRequest) (acpv2.CloseSessionResponse, error) {
	if err := c.bc.Close(ctx, string(req.SessionId)); err != nil {
		return acpv2.CloseSessionResponse{}, c.reqErr("session/close", err)
	}
	return acpv2.CloseSessionResponse{}, nil
}

// deleteSession closes a session and removes its transcript.
func (c *conn) deleteSession(ctx context.Context, req acpv2.DeleteSessionRequest) (acpv2.DeleteSessionResponse, error) {
	if err := c.bc.Delete(ctx, string(req.SessionId)); err != nil {
		return acpv2.DeleteSessionResponse{}, c.reqErr("session/delete", err)
	}
	return acpv2.DeleteSessionResponse{}, nil
}

// setConfigOption sets a select option (mode, model, agent, ...).
func (c *conn) setConfigOption(ctx context.Context, req acpv2.SetSessionConfigOptionRequest) (acpv2.SetSessionConfigOptionResponse, error) {
	v := req.Id
	if v == nil {
		return acpv2.SetSessionConfigOptionResponse{}, invalidParams("acpbridge has only select config options")
	}
	sess, err := c.bc.Get(ctx, string(v.SessionId))
	if err != nil {
		return acpv2.SetSessionConfigOptionResponse{}, c.reqErr("session/set_config_option", err)
	}
	opts, err := sess.SetConfigOption(ctx, string(v.ConfigId), string(v.Value))
	if err != nil {
		return acpv2.SetSessionConfigOptionResponse{}, c.reqErr("session/set_config_option", err)
	}
	out, err := configOptions(opts)
	if err != nil {
		return acpv2.SetSessionConfigOptionResponse{}, c.reqErr("session/set_config_option", err)
	}
	return acpv2.SetSessionConfigOptionResponse{ConfigOptions: out}, nil
}

// state sends the session's foreground state, with its background work
// once there has been any (see background.go).
func (c *conn) state(sid, state, stopReason string) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	u := map[string]any{"sessionUpdate": "state_update", "state": state}
	if stopReason != "" {
		u["stopReason"] = stopReason
	}
	if bg, ok := c.background(sid); ok {
		u["background"] = bg
	}
	c.notifyRaw(sid, u)
}

// notify sends one session/update.
func (c *conn) notify(sid string, u acpv2.SessionUpdate) {
	c.send(sid, acpv2.UpdateSessionNotification{SessionId: acpv2.SessionId(sid), Update: u})
}

// notifyRaw sends one session/update given as its JSON fields: for a
// null, which clears a field of an upsert and which the generated types
// leave out.
func (c *conn) notifyRaw(sid string, u map[string]any) {
	c.send(sid, map[string]any{"sessionId": sid, "update": u})
}

func (c *conn) send(sid string, n any) {
	if err := c.rpc.Notify(context.Background(), acpv2.ClientMethodSessionUpdate, n); err != nil {
		c.log.Debug("sending update", "session", sid, "err", err)
	}
}

// reqErr is the v1 edge's answer to a bridge error, as a jrpc2 error.
func (c *conn) reqErr(method string, err error) error {
	return rpcError(c.v1.RequestError(method, err))
}

// rpcError is a v1 edge's error as jrpc2's: an *acp.RequestError keeps
// its code, message and data.
func rpcError(err error) error {
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return &jrpc2.Error{Code: jrpc2.InternalError, Message: "Internal error: " + err.Error()}
	}
	e := &jrpc2.Error{Code: jrpc2.Code(re.Code), Message: re.Message}
	if re.Data != nil {
		e.Data, _ = json.Marshal(re.Data)
	}
	return e
}

// idOf is the id of a JSON-RPC message as jrpc2's Request.ID spells it.
func idOf(line []byte) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(line, &m)
	return compactID(m.ID)
}

// compactID is a JSON id spelt without spaces.
func compactID(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

func invalidParams(detail string) error {
	data, _ := json.Marshal(map[string]string{"error": detail})
	return &jrpc2.Error{Code: jrpc2.InvalidParams, Message: "Invalid params: " + detail, Data: data}
}

// convert moves a value between v1's and v2's types where they share
// their JSON.
func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}
