package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakechat"
	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/coder/acp-go-sdk"
)

// The real server delegates to a subagent (the task tool, its general
// agent) that runs a command the bridge's rules ask for, in a child
// session of OpenCode's own. These tests run on the shared server
// (TestE2E_sharedServer), each with a file of its own.

// subagentWant is what a subagent's turn shows of it, for a command.
func subagentWant(command string) editortest.Subagent {
	return editortest.Subagent{Title: fakechat.DelegateDescription, Tool: "bash",
		Said: []string{"user: run: " + command, command, "completed", fakechat.FinalTextPrefix + "made"}}
}

var subagentCaps = acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}

// e2eSubagentChildSession: a client that takes subagents gets a child
// session announced before its traffic, its bash call and its permission
// ask under the child's id (answered, the command runs), and the child
// idle, end_turn, at its end; a load replays the same, the child's id
// unchanged.
func e2eSubagentChildSession(t *testing.T) {
	b, _ := sharedBackend(t)
	state, cwd := t.TempDir(), sharedWorkspace(t)
	command := "touch made_by_sub.txt && echo made"
	e := editortest.StartEditorOffering(t, b, state, bridge.PersistAuto, subagentCaps)
	e.Client.Option = "once"
	id := e.NewSession(cwd)
	resp, err := e.Prompt(id, "delegate: run: "+command)
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made_by_sub.txt")); err != nil {
		t.Errorf("the subagent's command did not run: %v", err)
	}
	child := editortest.CheckChild(t, "live", id, e.Client.Notifications(), subagentWant(command))
	if asks := e.Client.Asks(); len(asks) != 1 || asks[0].SessionId != child {
		t.Errorf("asks %+v, want one, of the child %s", asks, child)
	}
	e.Stop()

	e2 := editortest.StartEditorOffering(t, b, state, bridge.PersistAuto, subagentCaps)
	e2.Load(id, cwd)
	if got := editortest.CheckChild(t, "replayed", id, e2.Client.Notifications(), subagentWant(command)); got != child {
		t.Errorf("replayed child %s, live %s", got, child)
	}
}

// e2eSubagentFlattened: a client that did not opt in is shown the
// subagent as before: its bash call and its ask on the session, no
// subagent_update, no other session's id, live and replayed.
func e2eSubagentFlattened(t *testing.T) {
	b, _ := sharedBackend(t)
	state, cwd := t.TempDir(), sharedWorkspace(t)
	command := "touch made_by_flat_sub.txt && echo made"
	e := editortest.StartEditor(t, b, state, bridge.PersistAuto)
	e.Client.Option = "once"
	id := e.NewSession(cwd)
	if resp, err := e.Prompt(id, "delegate: run: "+command); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	editortest.CheckFlat(t, "live", id, e.Client.Notifications(), command, "run: ")
	if asks := e.Client.Asks(); len(asks) != 1 || asks[0].SessionId != id {
		t.Errorf("asks %+v, want one, of the session", asks)
	}
	e.Stop()
	e2 := editortest.StartEditor(t, b, state, bridge.PersistAuto)
	e2.Load(id, cwd)
	editortest.CheckFlat(t, "replayed", id, e2.Client.Notifications(), command, "run: ")
}

// e2eSubagentCancel: session/cancel of the child aborts the subagent
// alone: the child ends idle, cancelled, and the parent's turn goes on to
// its end. session/cancel of the parent stops both: the turn ends
// cancelled, and the child idle, cancelled.
func e2eSubagentCancel(t *testing.T) {
	for _, c := range []struct {
		name   string
		parent bool
		want   acp.StopReason
	}{{"child", false, acp.StopReasonEndTurn}, {"parent", true, acp.StopReasonCancelled}} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := sharedEditorOffering(t, subagentCaps)
			announced := make(chan acp.SessionId, 1)
			e.Client.OnUpdate = func(n acp.SessionNotification) { // set before the session: nothing reads it yet
				if su := n.Update.SubagentUpdate; su != nil && su.State != nil && su.State.Running != nil {
					select {
					case announced <- su.SessionId:
					default:
					}
				}
			}
			id := e.NewSession(sharedWorkspace(t))
			type result struct {
				resp acp.PromptResponse
				err  error
			}
			done := make(chan result, 1)
			go func() {
				resp, err := e.Prompt(id, "delegate: slow")
				done <- result{resp, err}
			}()
			var child acp.SessionId
			select {
			case child = <-announced:
			case r := <-done:
				t.Fatalf("the turn ended before a subagent was announced: %+v, %v", r.resp, r.err)
			}
			target := child
			if c.parent {
				target = id
			}
			if err := e.CS.Cancel(e.Ctx(), acp.CancelNotification{SessionId: target}); err != nil {
				t.Fatal(err)
			}
			r := <-done
			if r.err != nil || r.resp.StopReason != c.want {
				t.Fatalf("the parent's turn: %+v, %v; want %s", r.resp, r.err, c.want)
			}
			var states []string
			for _, n := range e.Client.Notifications() {
				if su := n.Update.SubagentUpdate; su != nil && su.State != nil && su.State.Idle != nil && su.State.Idle.StopReason != nil {
					states = append(states, *su.State.Idle.StopReason)
				}
			}
			if len(states) != 1 || states[0] != "cancelled" {
				for _, n := range e.Client.Notifications() {
					b, _ := json.Marshal(n)
					t.Logf("%.300s", b)
				}
				t.Errorf("the child ended %v, want once, cancelled", states)
			}
		})
	}
}

// The official TS SDK's unstable v1 client (opted into subagents) accepts
// every message of a turn that delegates to a subagent which asks before
// it runs a command, live and replayed: the announcement, the child's
// updates and its ask.
func TestE2E_subagentSDKClient(t *testing.T) {
	b, _ := sharedBackend(t)
	r := sdkclient.Run(t, b, sdkclient.Plan{Cwd: sharedWorkspace(t), Mode: "append", SystemPrompt: "Be brief.",
		Prompts: []string{"delegate: run: touch sdk_sub.txt && echo made"}})
	sdkclient.Check(t, r, sdkclient.Want{Said: []string{`"sessionUpdate":"subagent_update"`, `"name":"bash"`, `"stopReason":"end_turn"`},
		Replayed: []string{"subagent_update", "tool_call"}, Asked: true})
}
