package amp

import (
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/coder/acp-go-sdk"
)

// Through the bridge and the ACP edge: an ask of Amp's hook reaches the
// editor as session/request_permission, and after a restart of the
// bridge, session/load replays the turn from the bridge's transcript and
// the next turn continues the thread.
func TestACP_askThenLoadAfterRestart(t *testing.T) {
	r := newRig(t)
	state, cwd := t.TempDir(), t.TempDir()
	e := editortest.StartEditor(t, r.b, state, bridge.PersistAuto)
	e.Client.Option = "allow_once"
	id := e.NewSession(cwd)
	pr, err := e.Prompt(id, "bash rm -rf /tmp/acpbridge-x")
	if err != nil || pr.StopReason != acp.StopReasonEndTurn || pr.Usage == nil {
		t.Fatalf("prompt: %+v, %v", pr, err)
	}
	asks := e.Client.Asks()
	if len(asks) != 1 || asks[0].ToolCall.Title == nil || *asks[0].ToolCall.Title != "rm -rf /tmp/acpbridge-x" {
		t.Fatalf("asks: %+v", asks)
	}
	live := e.Client.Conversation()
	e.Stop()

	e2 := editortest.StartEditor(t, r.backend(), state, bridge.PersistAuto)
	e2.Load(id, cwd)
	replay := e2.Client.Conversation()
	for _, want := range []string{"execute completed rm -rf /tmp/acpbridge-x", "echo: bash rm -rf /tmp/acpbridge-x"} {
		if !strings.Contains(live, want) || !strings.Contains(replay, want) {
			t.Errorf("%q missing from the live turn or the replay:\nlive:%s\nreplay:%s", want, live, replay)
		}
	}
	if _, err := e2.Prompt(id, "next"); err != nil {
		t.Fatal(err)
	}
	if got := e2.Client.Conversation(); !strings.Contains(got, "echo: next (thread T-fake-1") {
		t.Errorf("the next turn did not continue the thread:%s", got)
	}
}
