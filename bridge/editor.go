package bridge

import (
	"context"
	"encoding/json"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Peer is what an ACP client offers beyond updates and permission asks
// (Client.Peer): updates sent as stored, and the calls an agent that speaks
// ACP may make of the client. The Manager makes a call only when the
// client offered it at initialize.
type Peer interface {
	// SessionUpdatesRaw sends updates already encoded as JSON, as stored,
	// sparing session/load a decode and re-encode of every entry.
	SessionUpdatesRaw(sessionID string, updates []json.RawMessage) error

	agent.ClientMethods
	CallExtension(ctx context.Context, method string, params any) (json.RawMessage, error)
	NotifyExtension(ctx context.Context, method string, params any) error
	// Elicit asks the user to fill a form (elicitation/create, mode form)
	// about tool call callID of session sessionID, and returns what they
	// did: "accept" with the content, "decline" or "cancel".
	Elicit(ctx context.Context, sessionID, callID, message string, schema map[string]any) (action string, content map[string]any, err error)
}

// SetClientCapabilities records what the client of the Manager's own
// connection offers (see Conn.SetCapabilities). The edge calls it before
// Warm.
func (m *Manager) SetClientCapabilities(caps acp.ClientCapabilities) {
	m.def.SetCapabilities(caps)
}

// editor is a session's Editor.
type editor struct{ s *Session }

func (e editor) Capabilities() acp.ClientCapabilities { return e.s.caps() }

// calls returns the client if it offers what offered says, else a
// method-not-found error for method.
func (e editor) calls(method string, offered func(acp.ClientCapabilities) bool) (Peer, error) {
	c := e.s.conn.Load().peer()
	if c == nil || !offered(e.Capabilities()) {
		return nil, acp.NewMethodNotFound(method)
	}
	return c, nil
}

func (e editor) id() acp.SessionId { return acp.SessionId(e.s.id) }

func readFS(c acp.ClientCapabilities) bool    { return c.Fs.ReadTextFile }
func writeFS(c acp.ClientCapabilities) bool   { return c.Fs.WriteTextFile }
func terminals(c acp.ClientCapabilities) bool { return c.Terminal }

// forward makes a call the client offers, or answers method-not-found.
func forward[Req, Resp any](ctx context.Context, e editor, method string, offered func(acp.ClientCapabilities) bool,
	r Req, do func(Peer, context.Context, Req) (Resp, error)) (Resp, error) {
	c, err := e.calls(method, offered)
	if err != nil {
		var zero Resp
		return zero, err
	}
	return do(c, ctx, r)
}

func (e editor) ReadTextFile(ctx context.Context, r acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	r.SessionId = e.id()
	return forward(ctx, e, acp.ClientMethodFsReadTextFile, readFS, r, Peer.ReadTextFile)
}

// WriteTextFile is an agent's own write through the client: with edits
// routed through the editor, the router leaves the file it wrote alone.
func (e editor) WriteTextFile(ctx context.Context, r acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	resp, err := e.write(ctx, r)
	if rt := e.s.router.Load(); err == nil && rt != nil {
		rt.wroteThrough(r.Path, r.Content)
	}
	return resp, err
}

func (e editor) write(ctx context.Context, r acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	r.SessionId = e.id()
	return forward(ctx, e, acp.ClientMethodFsWriteTextFile, writeFS, r, Peer.WriteTextFile)
}

func (e editor) CreateTerminal(ctx context.Context, r acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	r.SessionId = e.id()
	return forward(ctx, e, acp.ClientMethodTerminalCreate, terminals, r, Peer.CreateTerminal)
}

func (e editor) TerminalOutput(ctx context.Context, r acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	r.SessionId = e.id()
	return forward(ctx, e, acp.ClientMethodTerminalOutput, terminals, r, Peer.TerminalOutput)
}

func (e editor) WaitForTerminalExit(ctx context.Context, r acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	r.SessionId = e.id()
	return forward(ctx, e, acp.ClientMethodTerminalWaitForExit, terminals, r, Peer.WaitForTerminalExit)
}

func (e editor) KillTerminal(ctx context.Context, r acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	r.SessionId = e.id()
	return forward(ctx, e, acp.ClientMethodTerminalKill, terminals, r, Peer.KillTerminal)
}

func (e editor) ReleaseTerminal(ctx context.Context, r acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	r.SessionId = e.id()
	return forward(ctx, e, acp.ClientMethodTerminalRelease, terminals, r, Peer.ReleaseTerminal)
}

// CallExtension forwards an extension method; a "sessionId" at the top of
// its params becomes the bridge's.
func (e editor) CallExtension(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	c, err := e.calls(method, func(acp.ClientCapabilities) bool { return true })
	if err != nil {
		return nil, err
	}
	return c.CallExtension(ctx, method, e.ownSession(params))
}

// NotifyExtension forwards an extension notification, as CallExtension
// does a call.
func (e editor) NotifyExtension(ctx context.Context, method string, params json.RawMessage) error {
	c, err := e.calls(method, func(acp.ClientCapabilities) bool { return true })
	if err != nil {
		return err
	}
	return c.NotifyExtension(ctx, method, e.ownSession(params))
}

// ownSession is params with a top-level "sessionId" made the bridge's.
func (e editor) ownSession(params json.RawMessage) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) == nil {
		if _, ok := obj["sessionId"]; ok {
			obj["sessionId"], _ = json.Marshal(e.s.id)
			params, _ = json.Marshal(obj)
		}
	}
	return params
}
