package editortest

import (
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/coder/acp-go-sdk"
)

// Subagent is what a turn that delegated to a subagent should show: the
// child's title (the task's description), the name of its tool call, and
// what its conversation holds (its prompt as the user's, its command, …).
type Subagent struct {
	Title string
	Tool  string
	Said  []string
}

// CheckChild checks the notifications of a subagent's turn for a client
// that takes subagents, and returns the child's session id: one
// subagent_update announced it, on the parent, before any of its
// updates, titled sa.Title, and said it idle, end_turn; its id is the
// parent's and the agent's own, "<parent>.<id>"; its sa.Tool call is not
// the parent's, and its conversation says each of sa.Said.
func CheckChild(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification, sa Subagent) acp.SessionId {
	t.Helper()
	var child acp.SessionId
	var childUpdates []acp.SessionUpdate
	idle := false
	for _, n := range ns {
		if su := n.Update.SubagentUpdate; su != nil {
			if n.SessionId != id {
				t.Errorf("%s: a subagent_update on %s, not on the parent", what, n.SessionId)
			}
			if child == "" {
				child = su.SessionId
				if su.Title == nil || *su.Title != sa.Title {
					t.Errorf("%s: the child's title is %v, want %q", what, su.Title, sa.Title)
				}
			}
			if st := su.State; st != nil && st.Idle != nil && st.Idle.StopReason != nil && *st.Idle.StopReason == "end_turn" {
				idle = true
			}
			continue
		}
		switch n.SessionId {
		case id:
			if c := n.Update.ToolCall; c != nil && c.Name != nil && *c.Name == sa.Tool {
				t.Errorf("%s: the subagent's %s call came on the parent", what, sa.Tool)
			}
		case child:
			childUpdates = append(childUpdates, n.Update)
		default:
			t.Fatalf("%s: an update of %s before any subagent_update announced it", what, n.SessionId)
		}
	}
	if !strings.HasPrefix(string(child), string(id)+".") {
		t.Fatalf("%s: child id %q, want %s.<the agent's id>", what, child, id)
	}
	if !idle {
		t.Errorf("%s: the child was never said to be idle, end_turn", what)
	}
	got := acptest.Conversation(childUpdates)
	for _, want := range sa.Said {
		if !strings.Contains(got, want) {
			t.Errorf("%s: the child's conversation:%s\nwant %q", what, got, want)
		}
	}
	return child
}

// CheckFlat checks the notifications of a subagent's turn for a client
// that takes no subagents: all of the session, no subagent_update, the
// subagent's command shown (as a tool call) and not its prompt.
func CheckFlat(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification, command, prompt string) {
	t.Helper()
	var us []acp.SessionUpdate
	for _, n := range ns {
		if n.SessionId != id {
			t.Fatalf("%s: an update of session %s", what, n.SessionId)
		}
		if n.Update.SubagentUpdate != nil {
			t.Fatalf("%s: a subagent_update", what)
		}
		us = append(us, n.Update)
	}
	got := acptest.Conversation(us)
	if !strings.Contains(got, command) || strings.Contains(got, "user: "+prompt) {
		t.Errorf("%s: conversation:%s\nwant the subagent's command as a tool call, and not its prompt", what, got)
	}
}
