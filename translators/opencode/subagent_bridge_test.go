package opencode

import (
	"path/filepath"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/golden"
	"github.com/coder/acp-go-sdk"
)

// TestSubagent_bridgeGolden plays each file's opencode.jsonl (a turn
// recorded from the real server, its permission asks answered as they
// come) with the fake opencode serve, through the bridge, to an editor
// that takes subagents and to one that does not, live and replayed by
// session/load, and compares what each editor was sent with the file's
// sections (golden.Sent).
func TestSubagent_bridgeGolden(t *testing.T) {
	golden.Txtar(t, "testdata/subagent/*.txtar", "opencode.jsonl", func(t *testing.T, _ []byte) []golden.Section {
		file, err := filepath.Abs(filepath.Join("testdata/subagent", filepath.Base(t.Name())+".txtar"))
		if err != nil {
			t.Fatal(err)
		}
		return editortest.SubagentSections(func(caps acp.ClientCapabilities) (string, string) {
			return playSubagentTurn(t, file, caps)
		})
	})
}

// playSubagentTurn plays the recorded turn for an editor offering caps and
// returns what it was sent, then what a second editor was sent loading the
// session.
func playSubagentTurn(t *testing.T, file string, caps acp.ClientCapabilities) (live, replayed string) {
	fc := newFakeOC(t, fakeReplayEnv+"="+file)
	state, cwd := t.TempDir(), t.TempDir()
	e := editortest.StartEditorOffering(t, fc.backend(t), state, bridge.PersistAuto, caps)
	e.Client.Option = "once"
	id := e.NewSession(cwd)
	if resp, err := e.Prompt(id, "replay"); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	live = golden.Sent(t, id, e.Client.Notifications(), e.Client.Asks())
	e.Stop()
	e2 := editortest.StartEditorOffering(t, fc.backend(t), state, bridge.PersistAuto, caps)
	e2.Load(id, cwd)
	return live, golden.Sent(t, id, e2.Client.Notifications(), e2.Client.Asks())
}
