package opencode

import (
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakechat"
	"github.com/coder/acp-go-sdk"
)

// A first prompt cancelled 0.1 s after it was sent, in a directory
// OpenCode has not set up yet (so the cancel comes before OpenCode has
// started the turn), answers cancelled; the next prompt then runs and
// answers, every time (it used to end at once, with no text and no model
// request, as what the first left behind ended it).
func TestE2E_cancelBeforeTheTurnStarted(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	b := w.backend()
	t.Cleanup(func() { b.Close() })
	for i := range 6 {
		e := editortest.StartEditorOffering(t, b, t.TempDir(), bridge.PersistAuto, acp.ClientCapabilities{})
		id := e.NewSession(workspace(t))
		done := make(chan acp.PromptResponse, 1)
		go func() {
			resp, err := e.Prompt(id, "hello first")
			if err != nil {
				t.Errorf("round %d: first prompt: %v", i, err)
			}
			done <- resp
		}()
		time.Sleep(100 * time.Millisecond)
		if err := e.CS.Cancel(e.Ctx(), acp.CancelNotification{SessionId: id}); err != nil {
			t.Fatal(err)
		}
		select {
		case resp := <-done:
			t.Logf("round %d: first prompt stopped %q", i, resp.StopReason)
			if resp.StopReason != acp.StopReasonCancelled && resp.StopReason != acp.StopReasonEndTurn {
				t.Errorf("round %d: first prompt stopped %q", i, resp.StopReason)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("round %d: the cancelled prompt did not return", i)
		}
		e.Client.Take()
		resp, err := e.Prompt(id, "hello again")
		if err != nil || resp.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("round %d: prompt after the cancel: %+v, %v", i, resp, err)
		}
		if got := e.Client.Conversation(); !strings.Contains(got, fakechat.AnswerTextPrefix+"hello again") {
			t.Errorf("round %d: the prompt after the cancel answered:%s\nwant its whole answer", i, got)
		}
	}
}
