package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/coder/acp-go-sdk"
)

// The tests in this file run the real codex with its collaboration tools
// on (fakeresponses.MultiAgent): the fake model's delegate: spawns an
// agent (spawn_agent) and waits for its answer (wait_agent).

// subagentCommand is what the spawned agent runs, asking first in the
// ask mode.
const subagentCommand = "touch made_by_sub.txt && echo made"

// newAgentsWorld is a world whose codex offers the model its
// collaboration tools.
func newAgentsWorld(t *testing.T) *world {
	t.Helper()
	w := &world{bin: fakeresponses.CodexBin(t), srv: fakeresponses.New(fakeresponses.Directives())}
	t.Cleanup(w.srv.Close)
	w.home, w.codexHome = fakeresponses.Home(t, w.srv.URL, fakeresponses.HomeOptions{Extra: fakeresponses.MultiAgent})
	return w
}

var takesSubagents = acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}

// delegated runs a turn that delegates subagentCommand in the ask mode,
// for an editor offering caps, on a bridge persisting as mode says, and
// checks that the command ran.
func delegated(t *testing.T, w *world, state, cwd string, mode bridge.PersistMode, caps acp.ClientCapabilities) (*editortest.Editor, acp.SessionId) {
	t.Helper()
	e, _ := w.bridgeOffering(t, state, mode, caps)
	e.Client.Option = "accept"
	id := e.NewSession(cwd)
	setMode(t, e, id, "ask")
	resp, err := e.Prompt(id, "delegate: run: "+subagentCommand)
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made_by_sub.txt")); err != nil {
		t.Errorf("the spawned agent's command did not run: %v", err)
	}
	return e, id
}

// Codex spawns an agent. A client that takes subagents gets a child
// session announced by subagent_update (linked to the spawn's tool call)
// before its traffic, the agent's command and its permission ask under
// the child's id, and the child idle, end_turn, at its end; a load
// replays the same, the child's id unchanged: from the bridge's
// transcript (--persist always), or from codex's own history with the
// child the bridge recorded beside it (--persist auto, the default).
func TestE2E_subagentChildSession(t *testing.T) {
	for _, mode := range []bridge.PersistMode{bridge.PersistAlways, bridge.PersistAuto} {
		t.Run(string(mode), func(t *testing.T) {
			w := newAgentsWorld(t)
			state, cwd := t.TempDir(), t.TempDir()
			e, id := delegated(t, w, state, cwd, mode, takesSubagents)
			child := checkChild(t, "live", id, e.Client.Notifications())
			if asks := e.Client.Asks(); len(asks) != 1 || asks[0].SessionId != child {
				t.Errorf("asks %+v, want one, of the child %s", asks, child)
			}
			e.Stop()
			e2, _ := w.bridgeOffering(t, state, mode, takesSubagents)
			e2.Load(id, cwd)
			if got := checkChild(t, "replayed", id, e2.Client.Notifications()); got != child {
				t.Errorf("replayed child %s, live %s", got, child)
			}
		})
	}
}

// A client that did not opt in is shown the spawned agent as before: the
// spawn's tool call (with the agent's answer) and the agent's command and
// ask on the session, no subagent_update, no other session's id, live and
// replayed.
func TestE2E_subagentFlattened(t *testing.T) {
	w := newAgentsWorld(t)
	state, cwd := t.TempDir(), t.TempDir()
	e, id := delegated(t, w, state, cwd, bridge.PersistAlways, acp.ClientCapabilities{})
	checkFlat(t, "live", id, e.Client.Notifications())
	if asks := e.Client.Asks(); len(asks) != 1 || asks[0].SessionId != id {
		t.Errorf("asks %+v, want one, of the session", asks)
	}
	e.Stop()
	e2, _ := w.bridgeOffering(t, state, bridge.PersistAlways, acp.ClientCapabilities{})
	e2.Load(id, cwd)
	checkFlat(t, "replayed", id, e2.Client.Notifications())
}

// checkChild checks the notifications of a delegating turn for a client
// that takes subagents, and returns the child's session id.
func checkChild(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification) acp.SessionId {
	t.Helper()
	c := editortest.SubagentTurn(t, what, id, ns)
	if a := c.Announced; a.Title == nil || *a.Title != fakeresponses.DelegateTask || a.Meta["acpbridge"] == nil {
		t.Errorf("%s: the child's title %v, _meta %v; want %q, linked to the spawn's tool call", what, a.Title, a.Meta, fakeresponses.DelegateTask)
	}
	c.Check(t, what, "end_turn", subagentCommand, "completed", "Tool finished. Output was: made")
	return c.ID
}

// checkFlat checks the notifications of a delegating turn for a client
// that takes no subagents.
func checkFlat(t *testing.T, what string, id acp.SessionId, ns []acp.SessionNotification) {
	t.Helper()
	got := acptest.Conversation(editortest.FlatTurn(t, what, id, ns))
	for _, want := range []string{"Spawn agent /root/" + fakeresponses.DelegateTask, subagentCommand, "Tool finished. Output was: made"} {
		if !strings.Contains(got, want) {
			t.Errorf("%s: conversation:%s\nwant %q", what, got, want)
		}
	}
}

// session/cancel of the child interrupts the spawned agent's turn alone
// (turn/interrupt on its thread): once it streams its slow answer, or as
// soon as it is announced, when its turn has not started yet (it is
// interrupted as it starts). The child ends idle, cancelled, and the
// parent's turn goes on to its end. session/cancel of the parent stops
// both.
func TestE2E_subagentCancel(t *testing.T) {
	streaming := func(n acp.SessionNotification) (acp.SessionId, bool) {
		return n.SessionId, n.Update.AgentMessageChunk != nil && strings.Contains(string(n.SessionId), ".")
	}
	announced := func(n acp.SessionNotification) (acp.SessionId, bool) {
		su := n.Update.SubagentUpdate
		if su == nil || su.State == nil || su.State.Running == nil {
			return "", false
		}
		return su.SessionId, true
	}
	for _, c := range []struct {
		name    string
		parent  bool
		working func(acp.SessionNotification) (acp.SessionId, bool)
	}{{"child", false, streaming}, {"child announced", false, announced}, {"parent", true, streaming}} {
		t.Run(c.name, func(t *testing.T) {
			e, _ := newAgentsWorld(t).bridgeOffering(t, t.TempDir(), bridge.PersistAuto, takesSubagents)
			editortest.CheckSubagentCancel(t, e, editortest.SubagentCancel{Prompt: "delegate: slow", Parent: c.parent, Working: c.working})
		})
	}
}

// The official TS SDK's unstable v1 client (opted into subagents) accepts
// every message of a turn that delegates to a spawned agent: the
// announcement, the child's updates, its end; and the replay of codex's
// own history.
func TestE2E_subagentSDKClient(t *testing.T) {
	w := newAgentsWorld(t)
	b := New(Options{Path: w.bin, Env: fakeresponses.Env(w.home, w.codexHome)})
	r := sdkclient.Run(t, b, sdkclient.Plan{Cwd: t.TempDir(), Mode: "append", SystemPrompt: "Be brief.",
		Prompts: []string{"delegate: run: echo made"}})
	sdkclient.Check(t, r, sdkclient.Want{Said: []string{`"sessionUpdate":"subagent_update"`, `"name":"exec_command"`, `"stopReason":"end_turn"`},
		Replayed: []string{"tool_call"}})
}
