package bridge

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// gateBackend's turns record their prompt's text and wait for the gate
// (or a cancel) before they end.
type gateBackend struct {
	mu    sync.Mutex
	ran   []string
	gate  chan struct{}
	start chan string // each turn's text as it begins
}

func (b *gateBackend) Info() agent.Info { return agent.Info{Name: "gate", Title: "Gate"} }
func (b *gateBackend) Close() error     { return nil }
func (b *gateBackend) Open(context.Context, agent.OpenOptions, agent.Events) (agent.Native, error) {
	return gateNative{b}, nil
}

type gateNative struct{ b *gateBackend }

func (gateNative) NativeID() string                                { return "gate-1" }
func (gateNative) Caps() agent.SessionCaps                         { return agent.SessionCaps{} }
func (gateNative) Close() error                                    { return nil }
func (gateNative) Config() []agent.ConfigOption                    { return nil }
func (gateNative) SetConfig(context.Context, string, string) error { return nil }

func (n gateNative) Prompt(ctx context.Context, t agent.Turn) (agent.TurnResult, error) {
	text := t.Prompt[0].Text.Text
	n.b.mu.Lock()
	n.b.ran = append(n.b.ran, text)
	n.b.mu.Unlock()
	n.b.start <- text
	select {
	case <-n.b.gate:
		return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
	case <-ctx.Done():
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
}

func gateSession(t *testing.T) (*Session, *gateBackend) {
	t.Helper()
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &gateBackend{gate: make(chan struct{}), start: make(chan string, 10)}
	_, s := startSession(t, Config{Backends: []agent.Backend{b}, Default: "gate", Store: st, Persist: PersistAlways, CancelGrace: 5 * time.Second})
	return s, b
}

type promptResult struct {
	text string
	res  agent.TurnResult
	err  error
}

func promptAt(s *Session, at Order, text string, out chan<- promptResult) {
	go func() {
		res, err := s.Prompt(context.Background(), Arrival{At: at}, []acp.ContentBlock{acp.TextBlock(text)})
		out <- promptResult{text, res, err}
	}()
}

// waitQueued waits until n prompts wait in s's queue.
func waitQueued(t *testing.T, s *Session, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		s.mu.Lock()
		got := len(s.queue)
		s.mu.Unlock()
		if got == n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%d prompts never queued", n)
}

// Prompts that come while a turn runs wait, and run in the order they
// arrived on the connection, each with its own result.
func TestQueue_promptsRunInArrivalOrder(t *testing.T) {
	s, b := gateSession(t)
	out := make(chan promptResult, 3)
	promptAt(s, 1, "first", out)
	<-b.start
	promptAt(s, 3, "third", out) // reaches the session before the second
	waitQueued(t, s, 1)
	promptAt(s, 2, "second", out)
	waitQueued(t, s, 2)
	for _, want := range []string{"first", "second", "third"} {
		b.gate <- struct{}{}
		r := <-out
		if r.text != want || r.err != nil || r.res.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("answer %+v; want %s ending end_turn", r, want)
		}
		if want != "third" {
			if next := <-b.start; next == "" {
				t.Fatal("no next turn")
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if got := b.ran; len(got) != 3 || got[0] != "first" || got[1] != "second" || got[2] != "third" {
		t.Errorf("turns ran %q; want first, second, third", got)
	}
}

// A cancel ends the running turn and answers every prompt queued before
// it cancelled, without running them; a prompt after the cancel runs.
func TestQueue_cancelAnswersQueuedPrompts(t *testing.T) {
	s, b := gateSession(t)
	out := make(chan promptResult, 3)
	promptAt(s, 1, "running", out)
	<-b.start
	promptAt(s, 2, "queued", out)
	promptAt(s, 3, "queued too", out)
	waitQueued(t, s, 2)
	s.Cancel(4)
	wantCancelled(t, out, 3, "")
	promptAt(s, 5, "after", out)
	<-b.start
	b.gate <- struct{}{}
	if r := <-out; r.err != nil || r.res.StopReason != acp.StopReasonEndTurn {
		t.Errorf("prompt after the cancel: %+v", r)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ran) != 2 || b.ran[1] != "after" {
		t.Errorf("turns ran %q; the queued prompts must not run", b.ran)
	}
}

// wantCancelled takes n results from out, each of which must be a turn
// that ended cancelled (when says after what, for the message).
func wantCancelled(t *testing.T, out <-chan promptResult, n int, when string) {
	t.Helper()
	for range n {
		if r := <-out; r.err != nil || r.res.StopReason != acp.StopReasonCancelled {
			t.Errorf("%s%s: %+v, %v; want cancelled", r.text, when, r.res, r.err)
		}
	}
}

// Cancel(0) (stdin ended) and close answer queued prompts too.
func TestQueue_cancelAllAndClose(t *testing.T) {
	s, b := gateSession(t)
	out := make(chan promptResult, 2)
	promptAt(s, 0, "running", out)
	<-b.start
	promptAt(s, 0, "queued", out)
	waitQueued(t, s, 1)
	s.Cancel(0)
	wantCancelled(t, out, 2, " after Cancel(0)")

	promptAt(s, 0, "running again", out)
	<-b.start
	promptAt(s, 0, "queued again", out)
	waitQueued(t, s, 1)
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		r := <-out
		if r.text == "running again" && r.res.StopReason != acp.StopReasonCancelled {
			t.Errorf("running turn at close: %+v, %v", r.res, r.err)
		}
		if r.text == "queued again" && r.err == nil {
			t.Errorf("queued prompt at close: %+v; want an error (the session is closed)", r.res)
		}
	}
}

// A turn begins once its Arrival.AwaitEarlier returns (the edge's wait for
// the client to have the responses before it), and a prompt cancelled
// meanwhile answers cancelled without running.
func TestQueue_turnWaitsForAwaitEarlier(t *testing.T) {
	s, b := gateSession(t)
	out := make(chan promptResult, 2)
	for i, cancelled := range []bool{true, false} {
		at := Order(1 + 2*i) // after the cancel at 2
		awaiting, release := make(chan struct{}), make(chan struct{})
		text := fmt.Sprint("cancelled while awaiting: ", cancelled)
		go func() {
			a := Arrival{At: at, AwaitEarlier: func() { close(awaiting); <-release }}
			res, err := s.Prompt(context.Background(), a, []acp.ContentBlock{acp.TextBlock(text)})
			out <- promptResult{text, res, err}
		}()
		<-awaiting
		if len(b.start) != 0 {
			t.Fatalf("%s: the turn began before AwaitEarlier returned", text)
		}
		want := acp.StopReasonEndTurn
		if cancelled {
			s.Cancel(at + 1)
			want = acp.StopReasonCancelled
		}
		close(release)
		if !cancelled {
			<-b.start
			b.gate <- struct{}{}
		}
		if r := <-out; r.err != nil || r.res.StopReason != want {
			t.Errorf("%s: %+v, %v; want %s", text, r.res, r.err, want)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.ran) != 1 || b.ran[0] != "cancelled while awaiting: false" {
		t.Errorf("turns ran %q; want only the one not cancelled", b.ran)
	}
}
