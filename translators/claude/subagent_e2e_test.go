package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/coder/acp-go-sdk"
)

// subagentCommand is what the fake model delegate to a subagent, which runs a
// command that asks first.
const subagentCommand = "touch made_by_sub.txt && echo made"

// subagentWant is what the subagent's turn shows of it.
var subagentWant = editortest.Subagent{Title: fakemessages.DelegateDescription, Tool: "Bash",
	Said: []string{"user: run: " + subagentCommand, subagentCommand, "completed", "made"}}

// The real CLI delegates to a subagent (the Agent tool). A client that
// takes subagents gets a child session announced by subagent_update
// before its traffic, its Bash tool call and its permission ask under the
// child's id, and the child idle, end_turn, at its end; a load replays
// the same, the child's id unchanged.
func TestE2E_subagentChildSession(t *testing.T) {
	caps := acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}
	state, home, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	e, _ := realEditorOffering(t, state, home, caps)
	id := e.NewSession(cwd)
	resp, err := e.Prompt(id, "delegate: run: "+subagentCommand)
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made_by_sub.txt")); err != nil {
		t.Errorf("the subagent's command did not run: %v", err)
	}
	child := editortest.CheckChild(t, "live", id, e.Client.Notifications(), subagentWant)
	asks := e.Client.Asks()
	if len(asks) != 1 || asks[0].SessionId != child {
		t.Errorf("asks %+v, want one, of the child %s", asks, child)
	}
	e.Stop()

	e2, _ := realEditorOffering(t, state, home, caps)
	e2.Load(id, cwd)
	if got := editortest.CheckChild(t, "replayed", id, e2.Client.Notifications(), subagentWant); got != child {
		t.Errorf("replayed child %s, live %s", got, child)
	}
}

// A client that did not opt in is shown the subagent as before: its Bash
// call and its ask on the session, no subagent_update, no other session's
// id, live and replayed.
func TestE2E_subagentFlattened(t *testing.T) {
	state, home, cwd := t.TempDir(), t.TempDir(), t.TempDir()
	e, _ := realEditorIn(t, state, home)
	id := e.NewSession(cwd)
	if resp, err := e.Prompt(id, "delegate: run: "+subagentCommand); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	editortest.CheckFlat(t, "live", id, e.Client.Notifications(), subagentCommand, "run: ")
	if asks := e.Client.Asks(); len(asks) != 1 || asks[0].SessionId != id {
		t.Errorf("asks %+v, want one, of the session", asks)
	}
	e.Stop()
	e2, _ := realEditorIn(t, state, home)
	e2.Load(id, cwd)
	editortest.CheckFlat(t, "replayed", id, e2.Client.Notifications(), subagentCommand, "run: ")
}

// session/cancel of the child stops the subagent alone (control
// stop_task): the child ends idle, cancelled, and the parent's turn goes
// on to its end. session/cancel of the parent stops both: the turn ends
// cancelled, and the child idle, cancelled.
func TestE2E_subagentCancel(t *testing.T) {
	for _, parent := range []bool{false, true} {
		t.Run(map[bool]string{false: "child", true: "parent"}[parent], func(t *testing.T) {
			e, _ := realEditorOffering(t, t.TempDir(), t.TempDir(), acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}})
			editortest.CheckSubagentCancel(t, e, editortest.SubagentCancel{Prompt: "delegate: slow", Parent: parent,
				Working: func(n acp.SessionNotification) (acp.SessionId, bool) {
					su := n.Update.SubagentUpdate
					if su == nil || su.State == nil || su.State.Running == nil {
						return "", false
					}
					return su.SessionId, true
				}})
		})
	}
}

// The official TS SDK's unstable v1 client (opted into subagents) accepts
// every message of a turn that delegates to a subagent which asks before
// it runs a command, live and replayed: the announcement, the child's
// updates and its ask.
func TestE2E_subagentSDKClient(t *testing.T) {
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	b := New(Options{Path: fakemessages.ClaudeBin(t), Env: fakemessages.Env(srv.URL, t.TempDir()), ExtraArgs: []string{"--setting-sources", ""}})
	r := sdkclient.Run(t, b, sdkclient.Plan{Cwd: t.TempDir(), Mode: "append", SystemPrompt: "Be brief.",
		Prompts: []string{"delegate: run: touch sdk_sub.txt && echo made"}})
	sdkclient.Check(t, r, sdkclient.Want{Said: []string{`"sessionUpdate":"subagent_update"`, `"name":"Bash"`, `"stopReason":"end_turn"`},
		Replayed: []string{"subagent_update", "tool_call"}, Asked: true})
}

// SendMessage to a subagent that finished (tell:) runs it again in the
// background: a client that takes subagents gets a session_message from
// the session to the child, before the child works again and ends idle
// once more; a client that does not gets neither, nor another session's
// id.
func TestE2E_subagentMessage(t *testing.T) {
	for _, optIn := range []bool{true, false} {
		caps := acp.ClientCapabilities{}
		if optIn {
			caps.Subagents = &acp.SubagentCapabilities{}
		}
		state, home, cwd := t.TempDir(), t.TempDir(), t.TempDir()
		e, _ := realEditorOffering(t, state, home, caps)
		id := e.NewSession(cwd)
		e.MustPrompt(id, "delegate: say hi")
		e.MustPrompt(id, "tell: also check the tests")
		if !optIn {
			e.WaitFor(func(u acp.SessionUpdate) bool { // the parent's turn about the subagent's end, which Claude starts itself
				c := u.AgentMessageChunk
				return c != nil && c.Content.Text != nil && strings.Contains(c.Content.Text.Text, "task-notification")
			})
			for _, n := range e.Client.Notifications() {
				if n.SessionId != id || n.Update.SessionMessage != nil || n.Update.SubagentUpdate != nil {
					t.Fatalf("a client that takes no subagents was sent %+v", n)
				}
			}
			continue
		}
		idles := func() int {
			n := 0
			for _, x := range e.Client.Notifications() {
				if su := x.Update.SubagentUpdate; su != nil && su.State != nil && su.State.Idle != nil {
					n++
				}
			}
			return n
		}
		for deadline := time.Now().Add(time.Minute); idles() < 2; time.Sleep(10 * time.Millisecond) { // the second run ends in the background
			if time.Now().After(deadline) {
				t.Fatalf("the subagent told a message never ended: %d idle states", idles())
			}
		}
		checkMessage(t, "live", id, e.Client.Notifications())
		e.Stop()
		e2, _ := realEditorOffering(t, state, home, caps)
		e2.Load(id, cwd)
		checkMessage(t, "replayed", id, e2.Client.Notifications())
	}
}

// checkMessage checks that ns hold the parent's session_message to its
// child.
func checkMessage(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification) {
	t.Helper()
	var child acp.SessionId
	var message *acp.SessionUpdateSessionMessage
	for _, n := range ns {
		switch u := n.Update; {
		case u.SubagentUpdate != nil && child == "":
			child = u.SubagentUpdate.SessionId
		case u.SessionMessage != nil:
			message = u.SessionMessage
			if n.SessionId != id {
				t.Errorf("%s: the session_message came on %s, not the parent", what, n.SessionId)
			}
		}
	}
	if message == nil || message.RecipientSessionId == nil || *message.RecipientSessionId != child ||
		message.SenderSessionId == nil || *message.SenderSessionId != id ||
		len(message.Content) != 1 || message.Content[0].Text == nil || message.Content[0].Text.Text != "also check the tests" {
		t.Errorf("%s: session_message %+v; want the parent's to %s, saying what it was told", what, message, child)
	}
}
