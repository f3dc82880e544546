package acpagent

import (
	"context"
	"encoding/json"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// client is the bridge as the downstream sees it: its client. What the
// downstream sends about a session goes to that bridge session; requests
// for the editor's file system and terminals, and extension methods, go
// on to the editor, named with the bridge's session id.
type client struct{ b *Backend }

var (
	_ acp.Client                 = (*client)(nil)
	_ acp.ExtensionMethodHandler = (*client)(nil)
)

// session finds the bridge session of a downstream session id.
func (c *client) session(id acp.SessionId) (*session, error) {
	if s, ok := c.b.sessions.Get(string(id)); ok {
		return s, nil
	}
	return nil, acp.NewInvalidParams(map[string]any{"error": "acpbridge has no session " + string(id)})
}

// SessionUpdate runs in order, one at a time (the SDK serialises them), so
// forwarding here keeps the downstream's order.
func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if parent, ok := c.b.children.Get(string(n.SessionId)); ok { // a subagent's
		parent.childUpdate(string(n.SessionId), n.Update)
		return nil
	}
	s, err := c.session(n.SessionId)
	if err != nil { // not yet: its session/new answer is on its way
		c.b.keepEarly(n.SessionId, n.Update)
		return nil
	}
	s.update(n.Update)
	return nil
}

func (c *client) RequestPermission(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	ev, err := c.events(r.SessionId)
	if err != nil {
		return acp.RequestPermissionResponse{}, err
	}
	out, err := ev.RequestPermission(ctx, r.ToolCall, r.Options)
	if err != nil {
		return acp.RequestPermissionResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
	}
	return acp.RequestPermissionResponse{Outcome: out}, nil
}

// events is where what the downstream says of session id goes: the bridge
// session's Events, or those of the child session (a subagent) of one.
func (c *client) events(id acp.SessionId) (agent.Events, error) {
	if parent, ok := c.b.children.Get(string(id)); ok {
		return parent.ev.Child(string(id)), nil
	}
	s, err := c.session(id)
	if err != nil {
		return nil, err
	}
	return s.ev, nil
}

// editor is the session's editor, or an error the downstream understands.
func (c *client) editor(id acp.SessionId) (agent.Editor, error) {
	s, err := c.session(id)
	if err != nil {
		return nil, err
	}
	if s.opts.Editor == nil {
		return nil, acp.NewMethodNotFound("the editor")
	}
	return s.opts.Editor, nil
}

// toEditor passes a downstream request to its session's editor.
func toEditor[Req, Resp any](ctx context.Context, c *client, id acp.SessionId, r Req,
	do func(agent.Editor, context.Context, Req) (Resp, error)) (Resp, error) {
	e, err := c.editor(id)
	if err != nil {
		var zero Resp
		return zero, err
	}
	return do(e, ctx, r)
}

func (c *client) ReadTextFile(ctx context.Context, r acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return toEditor(ctx, c, r.SessionId, r, agent.Editor.ReadTextFile)
}

func (c *client) WriteTextFile(ctx context.Context, r acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return toEditor(ctx, c, r.SessionId, r, agent.Editor.WriteTextFile)
}

func (c *client) CreateTerminal(ctx context.Context, r acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return toEditor(ctx, c, r.SessionId, r, agent.Editor.CreateTerminal)
}

func (c *client) TerminalOutput(ctx context.Context, r acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return toEditor(ctx, c, r.SessionId, r, agent.Editor.TerminalOutput)
}

func (c *client) WaitForTerminalExit(ctx context.Context, r acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return toEditor(ctx, c, r.SessionId, r, agent.Editor.WaitForTerminalExit)
}

func (c *client) KillTerminal(ctx context.Context, r acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return toEditor(ctx, c, r.SessionId, r, agent.Editor.KillTerminal)
}

func (c *client) ReleaseTerminal(ctx context.Context, r acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return toEditor(ctx, c, r.SessionId, r, agent.Editor.ReleaseTerminal)
}

// HandleExtensionMethod forwards an extension request to the editor (the
// raw layer's notifications are handled as what they stand for: an update
// of a kind the SDK does not know, an extension notification).
func (c *client) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	switch method {
	case rawUpdateMethod:
		c.rawUpdate(params)
		return nil, nil
	case notifyMethod:
		c.notify(ctx, params)
		return nil, nil
	}
	e := c.editorFor(params)
	if e == nil {
		return nil, acp.NewMethodNotFound(method)
	}
	out, err := e.CallExtension(ctx, method, params)
	if err != nil {
		return nil, err
	}
	return out, nil
}

// editorFor is the editor of the session params name, else any session's
// (the editor is the same), or nil.
func (c *client) editorFor(params json.RawMessage) agent.Editor {
	var p struct {
		SessionID acp.SessionId `json:"sessionId"`
	}
	json.Unmarshal(params, &p)
	if s, ok := c.b.sessions.Get(string(p.SessionID)); ok {
		return s.opts.Editor
	}
	for _, s := range c.b.sessions.All() {
		if s.opts.Editor != nil {
			return s.opts.Editor
		}
	}
	return nil
}

// rawUpdate passes an update of a kind the SDK does not know to its
// session as it came.
func (c *client) rawUpdate(params json.RawMessage) {
	var p struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	if parent, ok := c.b.children.Get(p.SessionID); ok {
		parent.updateRaw(p.Update) // a subagent's, of a kind the SDK does not know: shown on its parent
	} else if s, ok := c.b.sessions.Get(p.SessionID); ok {
		s.updateRaw(p.Update)
	} else {
		c.b.log.Debug("dropping an update for a session acpbridge does not know yet", "session", p.SessionID)
	}
}

// notify forwards an extension notification to the editor, as a
// notification.
func (c *client) notify(ctx context.Context, params json.RawMessage) {
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(params, &n) != nil {
		return
	}
	e := c.editorFor(n.Params)
	if e == nil {
		return
	}
	if err := e.NotifyExtension(ctx, n.Method, n.Params); err != nil {
		c.b.log.Debug("forwarding an extension notification", "method", n.Method, "err", err)
	}
}

// CreateElicitation: acpbridge offers the downstream no elicitation (its
// questions come as permission requests), so there is none to answer.
func (c *client) CreateElicitation(context.Context, acp.CreateElicitationRequest) (acp.CreateElicitationResponse, error) {
	return acp.CreateElicitationResponse{}, acp.NewMethodNotFound(acp.ClientMethodElicitationCreate)
}

// CompleteElicitation: see CreateElicitation; nothing was asked.
func (c *client) CompleteElicitation(context.Context, acp.CompleteElicitationNotification) error {
	return nil
}
