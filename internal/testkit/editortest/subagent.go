package editortest

import (
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/golden"
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
// that takes subagents (see SubagentTurn), and returns the child's
// session id: its title is sa.Title, it ended once, end_turn; its sa.Tool
// call is not the parent's, and its conversation says each of sa.Said.
func CheckChild(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification, sa Subagent) acp.SessionId {
	t.Helper()
	c := SubagentTurn(t, what, id, ns)
	if c.Announced.Title == nil || *c.Announced.Title != sa.Title {
		t.Errorf("%s: the child's title is %v, want %q", what, c.Announced.Title, sa.Title)
	}
	for _, u := range c.Own {
		if tc := u.ToolCall; tc != nil && tc.Name != nil && *tc.Name == sa.Tool {
			t.Errorf("%s: the subagent's %s call came on the parent", what, sa.Tool)
		}
	}
	c.Check(t, what, "end_turn", sa.Said...)
	return c.ID
}

// CheckFlat checks the notifications of a subagent's turn for a client
// that takes no subagents (see FlatTurn): the subagent's command shown
// (as a tool call) and not its prompt.
func CheckFlat(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification, command, prompt string) {
	t.Helper()
	got := acptest.Conversation(FlatTurn(t, what, id, ns))
	if !strings.Contains(got, command) || strings.Contains(got, "user: "+prompt) {
		t.Errorf("%s: conversation:%s\nwant the subagent's command as a tool call, and not its prompt", what, got)
	}
}

// SubagentSections are a subagent golden's sections: what play (a turn
// that delegates, run for an editor offering caps) sent live and then to
// a second editor loading the session, for an editor that takes
// subagents ("subagents live", "subagents replayed") and one that does
// not ("flattened …").
func SubagentSections(play func(caps acp.ClientCapabilities) (live, replayed string)) []golden.Section {
	var out []golden.Section
	for _, c := range []struct {
		name string
		caps acp.ClientCapabilities
	}{{"subagents", acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, {"flattened", acp.ClientCapabilities{}}} {
		live, replayed := play(c.caps)
		out = append(out, golden.Section{Name: c.name + " live", Data: live}, golden.Section{Name: c.name + " replayed", Data: replayed})
	}
	return out
}
