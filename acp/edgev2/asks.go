package edgev2

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	acpv2 "github.com/acpbridge/acpbridge/third_party/acpv2"
	"github.com/coder/acp-go-sdk"
)

// A permission ask waits for the client with its tool call cancellable:
// the tool call's capabilities say cancel while it waits (and are cleared
// once answered), and tool_call/cancel then answers the agent with the
// ask's reject option, so that the agent goes on with its turn without
// that tool call, whose status is cancelled from then on. Once a tool
// call runs, no agent behind the bridge can stop it alone (claude, codex
// and opencode interrupt whole turns): tool_call/cancel is then -32602,
// as v2 says of a call that is not cancellable, and session/cancel ends
// the turn. An ask that ends unanswered (cancelled by the client, or by
// the turn's cancel) is withdrawn with $/cancel_request; session/cancel
// withdraws the session's asks at once, and tells the agent each was
// cancelled, as v2 wants of the agent.

// The ask's id is what a late answer is known by: jrpc2 forgets a
// callback's id as its context ends and would answer a response to it
// with an error, so the edge forgets the id first and drops the late
// answer as it reads it (keepAnswer).

// askKey names a permission ask by its session and tool call.
type askKey struct{ sid, toolCall string }

// waiting is a permission ask sent to the client and not yet answered.
type waiting struct {
	stop        func() // ends the ask, its id forgotten first
	cancellable bool   // the ask has a reject option for tool_call/cancel to choose
	// Under conn.mu:
	byClient  bool   // tool_call/cancel ended it
	bySession bool   // session/cancel ended it
	ended     bool   // its id is forgotten (or will be, once written)
	reqID     string // the id it went out with, once written
}

// RequestPermission asks the client, with the session's state
// requires_action while the ask waits (from the first of its asks) and
// running again once answered (the last), unless the ask ended with the
// turn (cancelled): then the turn's idle comes next, as v2 wants of work
// that ends without resuming.
func (cl client) RequestPermission(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c, sid := cl.c, string(r.SessionId)
	reject, cancellable := rejection(r.Options)
	req, err := permissionRequest(r, cancellable)
	if err != nil {
		return acp.RequestPermissionResponse{}, err
	}
	key, w := askKey{sid, string(r.ToolCall.ToolCallId)}, &waiting{cancellable: cancellable}
	ctx, end := c.askContext(ctx, w)
	defer end()
	c.wait(key, w)
	c.asked(sid)
	rsp, err := c.rpc.Callback(ctx, acpv2.ClientMethodSessionRequestPermission, req)
	byClient, bySession, id := c.unwait(key, w)
	if rsp == nil && ctx.Err() != nil && id != "" {
		c.withdraw(sid, id)
	}
	if bySession {
		c.answered(sid, false)
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	if byClient {
		c.answered(sid, true)
		c.toolCallCancelled(key)
		return acp.RequestPermissionResponse{Outcome: reject}, nil
	}
	var out acp.RequestPermissionResponse
	if err == nil {
		var v2 acpv2.RequestPermissionResponse
		if err = rsp.UnmarshalResult(&v2); err == nil {
			err = convert(v2, &out)
		}
	}
	goesOn := err == nil && ctx.Err() == nil && out.Outcome.Cancelled == nil
	c.answered(sid, goesOn)
	if cancellable && goesOn {
		c.notifyRaw(sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": key.toolCall, "capabilities": nil})
	}
	if err != nil {
		return acp.RequestPermissionResponse{}, fmt.Errorf("asking permission: %w", err)
	}
	return out, nil
}

// rejection is the outcome that refuses the tool call (its reject_once
// option, else reject_always); ok is false when the ask has neither.
func rejection(opts []acp.PermissionOption) (acp.RequestPermissionOutcome, bool) {
	for _, kind := range []acp.PermissionOptionKind{acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways} {
		for _, o := range opts {
			if o.Kind == kind {
				return acp.NewRequestPermissionOutcomeSelected(o.OptionId), true
			}
		}
	}
	return acp.RequestPermissionOutcome{}, false
}

// askContext is the context of the ask w: it ends when parent does or
// w.stop is called, in both cases with w's id forgotten first.
func (c *conn) askContext(parent context.Context, w *waiting) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	w.stop = func() {
		c.forgetAsk(w)
		cancel()
	}
	done := make(chan struct{})
	unhook := context.AfterFunc(parent, func() {
		defer close(done)
		w.stop()
	})
	return ctx, func() {
		if !unhook() {
			<-done
		}
		cancel()
	}
}

// forgetAsk forgets w's id: an answer to it is dropped from now on.
func (c *conn) forgetAsk(w *waiting) {
	c.mu.Lock()
	defer c.mu.Unlock()
	w.ended = true
	delete(c.outstanding, w.reqID)
}

// keepAnswer tells whether a response the client sent answers an ask
// that still waits (and then forgets its id); a late answer to a
// withdrawn ask, or a response to nothing, is dropped.
func (c *conn) keepAnswer(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.outstanding[id] {
		c.log.Debug("a response to no waiting ask was dropped", "id", id)
		return false
	}
	delete(c.outstanding, id)
	return true
}

// wait records w, and tells the client when its tool call can be
// cancelled.
func (c *conn) wait(key askKey, w *waiting) {
	c.mu.Lock()
	c.waiting[key] = w
	c.mu.Unlock()
	if !w.cancellable {
		return
	}
	c.notifyRaw(key.sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": key.toolCall,
		"capabilities": map[string]any{"cancel": map[string]any{}}})
}

// unwait forgets w; it reports whether tool_call/cancel or session/cancel
// ended it, and the id the ask went out with.
func (c *conn) unwait(key askKey, w *waiting) (byClient, bySession bool, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting[key] == w {
		delete(c.waiting, key)
	}
	return w.byClient, w.bySession, w.reqID
}

// cancelAsks ends the session's asks for session/cancel: the agent is
// told each was cancelled, and the client that they are withdrawn.
func (c *conn) cancelAsks(sid string) {
	var ws []*waiting
	c.mu.Lock()
	for k, w := range c.waiting {
		if k.sid == sid && !w.byClient {
			w.bySession = true
			ws = append(ws, w)
		}
	}
	c.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
}

// sentAsk learns the id of a permission ask as it is written (jrpc2 gives
// a callback's id to no one else), for a $/cancel_request that withdraws
// it.
func (c *conn) sentAsk(line []byte) {
	if !bytes.Contains(line, []byte(acpv2.ClientMethodSessionRequestPermission)) {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			SessionID string `json:"sessionId"`
			Subject   struct {
				ToolCall struct {
					ToolCallID string `json:"toolCallId"`
				} `json:"toolCall"`
			} `json:"subject"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.Method != acpv2.ClientMethodSessionRequestPermission {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if w := c.waiting[askKey{m.Params.SessionID, m.Params.Subject.ToolCall.ToolCallID}]; w != nil && w.reqID == "" && !w.ended {
		w.reqID = compactID(m.ID)
		c.outstanding[w.reqID] = true
	}
}

// withdraw tells the client an ask it has not answered is not wanted
// any more.
func (c *conn) withdraw(sid, id string) {
	if err := c.rpc.Notify(context.Background(), "$/cancel_request", map[string]any{"requestId": json.RawMessage(id)}); err != nil {
		c.log.Debug("withdrawing a permission ask", "session", sid, "err", err)
	}
}

// cancelToolCall is tool_call/cancel: a tool call whose permission ask
// waits is refused (see RequestPermission); any other is -32602.
func (c *conn) cancelToolCall(_ context.Context, req acpv2.CancelToolCallRequest) (acpv2.CancelToolCallResponse, error) {
	key := askKey{string(req.SessionId), string(req.ToolCallId)}
	c.mu.Lock()
	w := c.waiting[key]
	if w != nil && !w.cancellable {
		w = nil
	}
	if w != nil {
		w.byClient = true
	}
	c.mu.Unlock()
	if w == nil {
		return acpv2.CancelToolCallResponse{}, invalidParams(fmt.Sprintf(
			"tool call %s is not cancellable: acpbridge cancels a tool call while its permission ask waits, not once it runs; session/cancel cancels the turn", req.ToolCallId))
	}
	w.stop()
	return acpv2.CancelToolCallResponse{}, nil
}

// toolCallCancelled sends the cancelled tool call's status; the agent's
// later updates of it keep that status (see cancelledStatus).
func (c *conn) toolCallCancelled(key askKey) {
	c.mu.Lock()
	c.cancelled[key] = true
	c.mu.Unlock()
	c.notifyRaw(key.sid, map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": key.toolCall,
		"status": "cancelled", "capabilities": nil})
}

// cancelledStatus keeps a cancelled tool call's status cancelled in an
// update m of it (the agent reports the refused call failed).
func (c *conn) cancelledStatus(sid string, m map[string]any) {
	id, _ := m["toolCallId"].(string)
	if _, ok := m["status"]; !ok || id == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancelled[askKey{sid, id}] {
		m["status"] = "cancelled"
	}
}

// asked counts a permission ask sent for session sid: the first waiting
// makes its state requires_action.
func (c *conn) asked(sid string) {
	c.mu.Lock()
	c.asking[sid]++
	first := c.asking[sid] == 1
	c.mu.Unlock()
	if first {
		c.state(sid, "requires_action", "")
	}
}

// answered counts an ask's end; with none left waiting the session is
// running again, if the turn goes on.
func (c *conn) answered(sid string, goesOn bool) {
	c.mu.Lock()
	c.asking[sid]--
	last := c.asking[sid] == 0
	if last {
		delete(c.asking, sid)
	}
	c.mu.Unlock()
	if last && goesOn {
		c.state(sid, "running", "")
	}
}

// permissionRequest is v1's ask in v2's shape: a title, and the tool call
// as its subject (cancellable: its capabilities say so).
func permissionRequest(r acp.RequestPermissionRequest, cancellable bool) (acpv2.RequestPermissionRequest, error) {
	out := acpv2.RequestPermissionRequest{SessionId: acpv2.SessionId(r.SessionId), Title: "Permission"}
	if t := r.ToolCall.Title; t != nil && *t != "" {
		out.Title = *t
	}
	if err := convert(r.Options, &out.Options); err != nil {
		return out, fmt.Errorf("permission options: %w", err)
	}
	var tc acpv2.ToolCallUpdate
	if err := convert(r.ToolCall, &tc); err != nil {
		return out, fmt.Errorf("permission tool call: %w", err)
	}
	if cancellable {
		tc.Capabilities = &acpv2.ToolCallCapabilities{Cancel: &acpv2.ToolCallCancelCapabilities{}}
	}
	out.Subject = &acpv2.RequestPermissionSubject{ToolCall: &acpv2.RequestPermissionSubjectToolCall{ToolCall: tc}}
	return out, nil
}
