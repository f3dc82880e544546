package editortest

import (
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/coder/acp-go-sdk"
)

// ChildTurn is what a client that takes subagents was sent of a turn that
// delegated to one subagent (see SubagentTurn).
type ChildTurn struct {
	ID        acp.SessionId              // the child's session id
	Announced *acp.SessionSubagentUpdate // its first subagent_update
	Updates   []acp.SessionUpdate        // its own updates, in order
	Own       []acp.SessionUpdate        // the parent's, less the subagent_updates
	Ended     []string                   // the stop reasons of its idle states, in order
}

// SubagentTurn reads ns, what a client that takes subagents was sent of
// a turn of session id that delegated to one subagent: every
// subagent_update comes on id, the child's id is id.<the agent's id>, and
// no update of another session comes before its announcement. what names
// the turn in failures.
func SubagentTurn(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification) ChildTurn {
	t.Helper()
	var c ChildTurn
	for _, n := range ns {
		if su := n.Update.SubagentUpdate; su != nil {
			if n.SessionId != id {
				t.Errorf("%s: a subagent_update on %s, not on the parent", what, n.SessionId)
			}
			if c.Announced == nil {
				c.ID, c.Announced = su.SessionId, su
			}
			if st := su.State; st != nil && st.Idle != nil && st.Idle.StopReason != nil {
				c.Ended = append(c.Ended, *st.Idle.StopReason)
			}
			continue
		}
		switch n.SessionId {
		case id:
			c.Own = append(c.Own, n.Update)
		case c.ID:
			c.Updates = append(c.Updates, n.Update)
		default:
			t.Fatalf("%s: an update of %s before any subagent_update announced it", what, n.SessionId)
		}
	}
	if !strings.HasPrefix(string(c.ID), string(id)+".") {
		t.Fatalf("%s: child id %q, want %s.<the agent's id>", what, c.ID, id)
	}
	return c
}

// FlatTurn reads ns, what a client that takes no subagents was sent of a
// turn of session id that delegated to a subagent: nothing of another
// session, no subagent_update. It returns the updates.
func FlatTurn(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification) []acp.SessionUpdate {
	t.Helper()
	var us []acp.SessionUpdate
	for _, n := range ns {
		if n.SessionId != id || n.Update.SubagentUpdate != nil {
			t.Fatalf("%s: a client that takes no subagents was sent %+v", what, n)
		}
		us = append(us, n.Update)
	}
	return us
}

// SubagentCancel is a cancel of a turn that delegates to a subagent (see
// CheckSubagentCancel).
type SubagentCancel struct {
	Prompt string // delegates to a subagent that works slowly
	// Working is the child that a notification shows at work, once it can
	// be cancelled; ok false for any other notification.
	Working func(acp.SessionNotification) (child acp.SessionId, ok bool)
	Parent  bool // cancel the parent, not the child
}

// CheckSubagentCancel runs c.Prompt in a new session of e (which takes
// subagents, and has made no session yet) and, once c.Working names the
// child, cancels it: the child alone (the child ends idle, cancelled, and
// the parent's turn goes on to end_turn) or with c.Parent the parent (its
// turn ends cancelled, and the child idle, cancelled). The child ends
// once.
func CheckSubagentCancel(t *testing.T, e *Editor, c SubagentCancel) {
	t.Helper()
	working := make(chan acp.SessionId, 1)
	e.Client.OnUpdate = func(n acp.SessionNotification) { // set before the session: nothing reads it yet
		if child, ok := c.Working(n); ok {
			select {
			case working <- child:
			default:
			}
		}
	}
	id := e.NewSession(t.TempDir())
	type result struct {
		resp acp.PromptResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := e.Prompt(id, c.Prompt)
		done <- result{resp, err}
	}()
	var target acp.SessionId
	select {
	case target = <-working:
	case r := <-done:
		t.Fatalf("the turn ended before its subagent worked: %+v, %v", r.resp, r.err)
	}
	want := acp.StopReasonEndTurn
	if c.Parent {
		target, want = id, acp.StopReasonCancelled
	}
	if err := e.CS.Cancel(e.Ctx(), acp.CancelNotification{SessionId: target}); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.resp.StopReason != want {
		t.Fatalf("the parent's turn: %+v, %v; want %s", r.resp, r.err, want)
	}
	if ended := SubagentTurn(t, "cancelled", id, e.Client.Notifications()).Ended; len(ended) != 1 || ended[0] != "cancelled" {
		t.Errorf("the child ended %v, want once, cancelled", ended)
	}
}

// Check checks that the child ended once, as ended says (end_turn, …),
// that its conversation (acptest.Conversation) holds each of want, and
// that no command ran as the parent's: the child's commands are its own.
func (c ChildTurn) Check(t *testing.T, what, ended string, want ...string) {
	t.Helper()
	if len(c.Ended) != 1 || c.Ended[0] != ended {
		t.Errorf("%s: the child ended %v, want once, %s", what, c.Ended, ended)
	}
	for _, u := range c.Own {
		if tc := u.ToolCall; tc != nil && tc.Kind == acp.ToolKindExecute {
			t.Errorf("%s: the child's command came on the parent: %s", what, tc.Title)
		}
	}
	got := acptest.Conversation(c.Updates)
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s: the child's conversation:%s\nwant %q", what, got, w)
		}
	}
}
