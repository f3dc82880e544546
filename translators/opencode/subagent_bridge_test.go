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

// The turn's usage counts its subagent's tokens: the recorded turn's
// two steps (8,096 and 8,215 tokens) and its child session's two (6,080
// and 6,134).
func TestSubagent_usageCountsTheChild(t *testing.T) {
	file, err := filepath.Abs("testdata/subagent/bash_ask.txtar")
	if err != nil {
		t.Fatal(err)
	}
	fc := newFakeOC(t, fakeReplayEnv+"="+file)
	e := editortest.StartEditorOffering(t, fc.backend(t), t.TempDir(), bridge.PersistAuto, acp.ClientCapabilities{})
	e.Client.Option = "once"
	resp, err := e.Prompt(e.NewSession(t.TempDir()), "replay")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	want := acp.Usage{InputTokens: 8075 + 8177 + 6058 + 6127, OutputTokens: 21 + 38 + 22 + 7, TotalTokens: 8096 + 8215 + 6080 + 6134}
	if u := resp.Usage; u == nil || u.InputTokens != want.InputTokens || u.OutputTokens != want.OutputTokens || u.TotalTokens != want.TotalTokens {
		t.Errorf("the turn's usage %+v, want the parent's and the child's steps: %+v", u, want)
	}
}
