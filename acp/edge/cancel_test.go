package edge

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
)

// promptAsync starts a prompt and returns its result on a channel.
func promptAsync(h *harness, id acp.SessionId, text string) chan promptResult {
	ch := make(chan promptResult, 1)
	go func() {
		r, err := h.Prompt(id, text)
		ch <- promptResult{r, err}
	}()
	return ch
}

type promptResult struct {
	resp acp.PromptResponse
	err  error
}

func wait(t *testing.T, ch chan promptResult) promptResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(time.Minute):
		t.Fatal("prompt did not return")
		return promptResult{}
	}
}

func isToolCall(u acp.SessionUpdate) bool { return u.ToolCall != nil }

func TestServer_cancelMidStreamReturnsCancelledAndFlushes(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	res := promptAsync(h, s.SessionId, "slow read")
	h.WaitFor(isToolCall)
	if err := h.CS.Cancel(h.Ctx(), acp.CancelNotification{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	r := wait(t, res)
	if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("cancelled prompt = %+v, %v; want stopReason cancelled and no error", r.resp, r.err)
	}
	// The SDK delivers every update sent before the response first, so the
	// tool call's final state is already here.
	if got := view(h.Client.Take()); !strings.Contains(got, " read failed Read ") {
		t.Errorf("after cancel:\n%s\nwant the unfinished tool call failed", got)
	}
	h.MustPrompt(s.SessionId, "next turn works")
}

func TestServer_cancelResolvesPendingPermission(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	var released atomic.Bool
	asked := make(chan struct{}, 1)
	h.Client.SetPolicy(func(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		asked <- struct{}{}
		<-ctx.Done() // a user who never answers; the bridge must withdraw the ask
		released.Store(true)
		return acp.RequestPermissionResponse{}, ctx.Err()
	})
	s := h.NewSessionResponse("/work")
	res := promptAsync(h, s.SessionId, "edit")
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("no permission ask")
	}
	h.CS.Cancel(h.Ctx(), acp.CancelNotification{SessionId: s.SessionId})
	r := wait(t, res)
	if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("prompt = %+v, %v; want cancelled", r.resp, r.err)
	}
	if got := view(h.Client.Take()); !strings.Contains(got, " edit failed Edit ") {
		t.Errorf("after cancel:\n%s\nwant the edit failed", got)
	}
	deadline := time.Now().Add(time.Minute)
	for !released.Load() && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if !released.Load() {
		t.Error("the client's permission request was never withdrawn ($/cancel_request)")
	}
}

func TestServer_promptWhileBusyIsQueued(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	first := promptAsync(h, s.SessionId, "think slowly")
	h.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentThoughtChunk != nil })
	second := promptAsync(h, s.SessionId, "me too")
	for _, r := range []promptResult{wait(t, first), wait(t, second)} {
		if r.err != nil || r.resp.StopReason != acp.StopReasonEndTurn {
			t.Errorf("prompt = %+v, %v; want both to end_turn", r.resp, r.err)
		}
	}
	got := view(h.Client.Take())
	if a, b := strings.Index(got, "You said: think slowly"), strings.Index(got, "You said: me too"); a < 0 || b < a {
		t.Errorf("conversation:\n%s\nwant the first answer, then the second", got)
	}
}

func TestServer_cancelAnswersQueuedPromptsCancelled(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	// slow: a chunk every 50 ms, the answer long enough to outlast the wait below
	first := promptAsync(h, s.SessionId, "slow "+strings.Repeat("and on ", 40))
	h.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
	second := promptAsync(h, s.SessionId, "queued")
	time.Sleep(100 * time.Millisecond) // let it reach the queue; a cancel before it arrives would not apply
	h.CS.Cancel(h.Ctx(), acp.CancelNotification{SessionId: s.SessionId})
	for _, r := range []promptResult{wait(t, first), wait(t, second)} {
		if r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
			t.Errorf("prompt = %+v, %v; want cancelled", r.resp, r.err)
		}
	}
	if got := view(h.Client.Take()); strings.Contains(got, "You said: queued") {
		t.Errorf("conversation:\n%s\nthe queued prompt ran", got)
	}
}

func TestServer_closeCancelsTheTurn(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	res := promptAsync(h, s.SessionId, "slow")
	h.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
	if _, err := h.CS.CloseSession(h.Ctx(), acp.CloseSessionRequest{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	if r := wait(t, res); r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
		t.Errorf("prompt of a closed session = %+v, %v; want cancelled", r.resp, r.err)
	}
}

func TestServer_cancelOfIdleOrUnknownSessionIsHarmless(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	h.CS.Cancel(h.Ctx(), acp.CancelNotification{SessionId: s.SessionId})
	h.CS.Cancel(h.Ctx(), acp.CancelNotification{SessionId: "nobody"})
	if r := h.MustPrompt(s.SessionId, "hi"); r.StopReason != acp.StopReasonEndTurn {
		t.Errorf("prompt after a stray cancel: %+v", r)
	}
}

func TestServer_permissionAnsweredCancelledEndsTheTurnCancelled(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	h.Client.SetPolicy(func(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	})
	s := h.NewSessionResponse("/work")
	r := h.MustPrompt(s.SessionId, "edit")
	if r.StopReason != acp.StopReasonCancelled {
		t.Errorf("stopReason %q, want cancelled", r.StopReason)
	}
	if got := view(h.Client.Take()); !strings.Contains(got, " edit failed Edit ") {
		t.Errorf("conversation:\n%s", got)
	}
}
