package claude

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/golden"
	"github.com/coder/acp-go-sdk"
)

// TestSubagent_bridgeGolden plays each file's claude.jsonl (a turn recorded
// from the real CLI, its control requests answered as they come) with a
// fake claude, through the bridge, to an editor that takes subagents and
// to one that does not, live and replayed by session/load, and compares
// what each editor was sent with the file's sections: the session's id is
// S, a child's S.<task id>, message ids are left out, and the permission
// asks follow the updates.
func TestSubagent_bridgeGolden(t *testing.T) {
	golden.Txtar(t, "testdata/subagent/*.txtar", "claude.jsonl", func(t *testing.T, in []byte) []golden.Section {
		native := filepath.Join(t.TempDir(), "turn.jsonl")
		if err := os.WriteFile(native, in, 0o600); err != nil {
			t.Fatal(err)
		}
		return editortest.SubagentSections(func(caps acp.ClientCapabilities) (string, string) {
			return playSubagentTurn(t, native, caps)
		})
	})
}

// playSubagentTurn runs the recorded turn for an editor offering caps and
// returns what it was sent, then what a second editor was sent loading the
// session.
func playSubagentTurn(t *testing.T, native string, caps acp.ClientCapabilities) (live, replayed string) {
	state, cwd := t.TempDir(), t.TempDir()
	backend := func() *Backend {
		return New(Options{Path: os.Args[0], Env: []string{"FAKE_CLAUDE=1", "FAKE_CLAUDE_REPLAY=" + native, "GORACE=atexit_sleep_ms=0"}})
	}
	e := editortest.StartEditorOffering(t, backend(), state, bridge.PersistAuto, caps)
	id := e.NewSession(cwd)
	if resp, err := e.Prompt(id, "replay"); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	live = golden.Sent(t, id, e.Client.Notifications(), e.Client.Asks())
	e.Stop()
	e2 := editortest.StartEditorOffering(t, backend(), state, bridge.PersistAuto, caps)
	e2.Load(id, cwd)
	return live, golden.Sent(t, id, e2.Client.Notifications(), e2.Client.Asks())
}
