package loadtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/coder/acp-go-sdk"
)

// A session started on claude, handed to codex, then to opencode, then
// back to claude, each real CLI on its fake model: each next agent's first
// model request carries the turns it did not see, and the session's load
// replays the whole conversation with each change of agent marked.
func TestHandoff_claudeCodexOpencodeAndBack(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: real-CLI handoff tests do not run with -short")
	}
	w := newWorld(t, true)
	backends := w.backends
	csrv, xsrv, osrv := w.claude, w.codex, w.opencode
	state, cwd := t.TempDir(), t.TempDir()
	e := editortest.StartEditorWith(t, backends(), state, bridge.PersistAuto, acp.ClientCapabilities{})
	id := e.NewSession(cwd)
	turn := func(agent, prompt string) {
		t.Helper()
		if agent != "" {
			if _, err := e.SetConfig(id, bridge.ConfigAgent, agent); err != nil {
				t.Fatalf("handing the session to %s: %v", agent, err)
			}
		}
		if r, err := e.Prompt(id, prompt); err != nil || r.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("%q: %+v, %v", prompt, r, err)
		}
	}
	body := func(raw map[string]any) string { b, _ := json.Marshal(raw); return string(b) }

	turn("", "Remember the word apricot")
	turn("codex", "Which word was it")
	if last := xsrv.Requests(); len(last) == 0 || !strings.Contains(body(last[len(last)-1].Raw), "Remember the word apricot") {
		t.Error("codex's first model request does not carry claude's turn")
	}
	turn("opencode", "And now")
	reqs := osrv.Requests()
	if len(reqs) == 0 || !strings.Contains(body(reqs[len(reqs)-1].Raw), "Remember the word apricot") || !strings.Contains(body(reqs[len(reqs)-1].Raw), "Which word was it") {
		t.Error("opencode's first model request does not carry the earlier turns")
	}
	turn("claude", "Back to you")
	creqs := csrv.Requests()
	back := body(creqs[len(creqs)-1].Raw)
	if !strings.Contains(back, "Which word was it") || !strings.Contains(back, "You had this session before") {
		t.Errorf("claude, handed back, was not told what happened meanwhile")
	}
	e.Stop()

	e2 := editortest.StartEditorWith(t, backends(), state, bridge.PersistAuto, acp.ClientCapabilities{})
	e2.Load(id, cwd)
	replay := e2.Client.Conversation()
	for _, want := range []string{"user: Remember the word apricot", "Handed over from claude to Codex", "user: Which word was it",
		"Handed over from codex to OpenCode", "Handed over from opencode to Claude Code", "user: Back to you"} {
		if !strings.Contains(replay, want) {
			t.Errorf("the replay lacks %q:\n%s", want, replay)
		}
	}
}
