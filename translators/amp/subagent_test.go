package amp

import (
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/coder/acp-go-sdk"
)

// subCommand is what the fake amp's Task subagent runs: Amp's rules ask
// about it.
const subCommand = "rm -rf /tmp/acpbridge-sub"

// A Task whose subagent's lines amp prints (task-lines), through the
// bridge: a client that takes subagents gets the child session (the
// Task's tool_use id) announced before its traffic, the Task's prompt as
// its user message, the subagent's Bash call and its permission ask
// under the child's id, and the child idle, end_turn, once the Task's
// result came; one that does not gets the Bash call and the ask on the
// session, and no other session's id; live and replayed alike.
func TestSubagent_taskLines(t *testing.T) {
	for _, optIn := range []bool{true, false} {
		caps := acp.ClientCapabilities{}
		if optIn {
			caps.Subagents = &acp.SubagentCapabilities{}
		}
		r := newRig(t)
		state, cwd := t.TempDir(), t.TempDir()
		e := editortest.StartEditorOffering(t, r.b, state, bridge.PersistAuto, caps)
		e.Client.Option = "allow_once"
		id := e.NewSession(cwd)
		if pr, err := e.Prompt(id, "task-lines "+subCommand); err != nil || pr.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("prompt: %+v, %v", pr, err)
		}
		asks := e.Client.Asks()
		want := id
		if optIn {
			want = checkTaskChild(t, "live", id, e.Client.Notifications(), true)
		} else {
			checkTaskFlat(t, "live", id, e.Client.Notifications(), true)
		}
		if len(asks) != 1 || asks[0].SessionId != want {
			t.Errorf("opted in %v: asks %+v, want one, of %s", optIn, asks, want)
		}
		e.Stop()
		e2 := editortest.StartEditorOffering(t, r.backend(), state, bridge.PersistAuto, caps)
		e2.Load(id, cwd)
		if optIn {
			if got := checkTaskChild(t, "replayed", id, e2.Client.Notifications(), true); got != want {
				t.Errorf("replayed child %s, live %s", got, want)
			}
		} else {
			checkTaskFlat(t, "replayed", id, e2.Client.Notifications(), true)
		}
	}
}

// A Task as the pinned CLI prints it (task: none of its subagent's
// lines): a client that takes subagents gets a child session with the
// Task's prompt, idle at the Task's result; one that does not, the Task's
// tool call alone, as before.
func TestSubagent_taskAlone(t *testing.T) {
	for _, optIn := range []bool{true, false} {
		caps := acp.ClientCapabilities{}
		if optIn {
			caps.Subagents = &acp.SubagentCapabilities{}
		}
		e := editortest.StartEditorOffering(t, newRig(t).b, t.TempDir(), bridge.PersistAuto, caps)
		id := e.NewSession(t.TempDir())
		if pr, err := e.Prompt(id, "task "+subCommand); err != nil || pr.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("prompt: %+v, %v", pr, err)
		}
		if optIn {
			checkTaskChild(t, "alone", id, e.Client.Notifications(), false)
		} else {
			checkTaskFlat(t, "alone", id, e.Client.Notifications(), false)
		}
	}
}

// checkTaskChild checks a Task's turn for a client that takes subagents
// (with lines: its subagent's printed), and returns the child's id.
func checkTaskChild(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification, lines bool) acp.SessionId {
	t.Helper()
	c := editortest.SubagentTurn(t, what, id, ns)
	if a := c.Announced; c.ID != id+".toolu_task" || a.Title == nil || *a.Title != fakeTaskDescription || a.Capabilities != nil {
		t.Errorf("%s: child %s, title %v, capabilities %+v; want %s.toolu_task, %q, none", what, c.ID, a.Title, a.Capabilities, id, fakeTaskDescription)
	}
	wants := []string{"user: bash " + subCommand}
	if lines {
		wants = append(wants, "execute completed "+subCommand, "agent: "+fakeTaskAnswer)
	}
	c.Check(t, what, "end_turn", wants...)
	return c.ID
}

// checkTaskFlat checks a Task's turn for a client that takes no
// subagents: the Task's tool call (and with lines, its subagent's) on the
// session, and not the subagent's prompt.
func checkTaskFlat(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification, lines bool) {
	t.Helper()
	got := acptest.Conversation(editortest.FlatTurn(t, what, id, ns))
	wants := []string{"think completed " + fakeTaskDescription}
	if lines {
		wants = append(wants, "execute completed "+subCommand)
	}
	for _, want := range wants {
		if !strings.Contains(got, want) {
			t.Errorf("%s: conversation:%s\nwant %q", what, got, want)
		}
	}
	if strings.Contains(got, "user: bash ") {
		t.Errorf("%s: the subagent's prompt was shown as a user message:%s", what, got)
	}
}
