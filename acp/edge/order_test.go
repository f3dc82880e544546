package edge

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/coder/acp-go-sdk"
)

// orderBackend's sessions note the prompts they run, in the order they
// run them, and end each turn at once.
type orderBackend struct {
	mu  sync.Mutex
	ran []string
}

func (b *orderBackend) Info() agent.Info { return agent.Info{Name: "order", Title: "Order"} }
func (b *orderBackend) Close() error     { return nil }
func (b *orderBackend) Open(context.Context, agent.OpenOptions, agent.Events) (agent.Native, error) {
	return orderNative{b}, nil
}

func (b *orderBackend) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	ran := b.ran
	b.ran = nil
	return ran
}

type orderNative struct{ b *orderBackend }

func (n orderNative) NativeID() string                                { return "order-1" }
func (n orderNative) Config() []agent.ConfigOption                    { return nil }
func (n orderNative) SetConfig(context.Context, string, string) error { return nil }
func (n orderNative) Caps() agent.SessionCaps                         { return agent.SessionCaps{} }
func (n orderNative) Close() error                                    { return nil }
func (n orderNative) Prompt(_ context.Context, t agent.Turn) (agent.TurnResult, error) {
	n.b.mu.Lock()
	n.b.ran = append(n.b.ran, t.Prompt[0].Text.Text)
	n.b.mu.Unlock()
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}

// Two prompts sent at once to one session run and are answered in the
// order they were sent, every time, even with one CPU that a hog keeps
// busy: each prompt keeps its own arrival, whichever handler reaches the
// session first.
func TestOrder_promptsSentTogetherRunInTheirOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	var stop atomic.Bool
	var hog sync.WaitGroup
	hog.Go(func() {
		for n := 0; !stop.Load(); n++ {
			_ = fmt.Sprint(n) // busy, and preemptible
		}
	})
	defer func() { stop.Store(true); hog.Wait() }()

	b := &orderBackend{}
	r := startRawOn(t, b)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.next(response(1))
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	sid := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
	for i := range 200 {
		first, second := 10+2*i, 11+2*i
		r.send(promptLine(first, sid, fmt.Sprint("first ", i)) + "\n" + promptLine(second, sid, fmt.Sprint("second ", i)))
		if id := r.next(response(first, second))["id"].(float64); id != float64(first) {
			t.Fatalf("pair %d: the second prompt was answered first", i)
		}
		r.next(response(second))
		want := []string{fmt.Sprint("first ", i), fmt.Sprint("second ", i)}
		if ran := b.take(); !slices.Equal(ran, want) {
			t.Fatalf("pair %d ran %q, want %q", i, ran, want)
		}
	}
}

// A prompt's turn begins once the response of the prompt before it is
// written, even when the goroutine that writes that response is held
// after the first turn has ended: the client gets the first response
// before any update of the second turn, and before its response. The
// first response is held until the second one comes or the second turn
// waits for it, so the test fails the same way every time without the
// wait.
func TestOrder_responseComesBeforeTheNextTurn(t *testing.T) {
	awaiting, answered := make(chan struct{}), make(chan struct{})
	var awaitOnce sync.Once
	var answering atomic.Int32
	hooks := &testHooks{
		answering: func(bridge.Order) {
			if answering.Add(1) == 1 { // the first turn to end: the first prompt's
				select {
				case <-awaiting:
				case <-answered:
				}
			}
		},
		awaiting: func(bridge.Order) { awaitOnce.Do(func() { close(awaiting) }) },
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{mock.New()}, Default: "mock",
		Persist: bridge.PersistNever, Logger: testLogger(), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(m, "test", testLogger())
	s.hooks = hooks
	r := serveRawBy(t, s)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.next(response(1))
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	sid := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
	r.send(promptLine(3, sid, "first") + "\n" + promptLine(4, sid, "second"))
	var got []string
	for len(got) < 2 {
		msg := r.next(func(m map[string]any) bool { return response(3, 4)(m) || isChunk(m, "second") })
		if isChunk(msg, "second") {
			got = append(got, "the second turn's answer")
			continue
		}
		if id, _ := msg["id"].(float64); id == 4 {
			got = append(got, "the second response")
			close(answered)
		} else {
			got = append(got, "the first response")
		}
	}
	if got[0] != "the first response" {
		t.Errorf("the client got %s first, want the first response", got[0])
	}
}

// isChunk reports whether m is an agent message chunk of text.
func isChunk(m map[string]any, text string) bool {
	params, _ := m["params"].(map[string]any)
	update, _ := params["update"].(map[string]any)
	content, _ := update["content"].(map[string]any)
	return m["method"] == "session/update" && update["sessionUpdate"] == "agent_message_chunk" && content["text"] == text
}

func promptLine(id int, sid, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, id, sid, text)
}

// startRawOn is startRaw on backend b, persisting nothing.
func startRawOn(t *testing.T, b agent.Backend) *raw {
	t.Helper()
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name,
		Persist: bridge.PersistNever, Logger: testLogger(), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return serveRaw(t, m)
}

// A prompt the SDK refuses before any handler sees it (its params don't
// decode) holds no later prompt of the session back.
func TestOrder_refusedPromptHoldsNothingBack(t *testing.T) {
	b := &orderBackend{}
	r := startRawOn(t, b)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.next(response(1))
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	sid := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
	bad := fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":5}}`, sid)
	r.send(bad + "\n" + promptLine(4, sid, "after"))
	if code := errCode(r.next(response(3))); code != -32602 {
		t.Errorf("bad prompt answered code %d, want -32602", code)
	}
	if got := stopReason(r.next(response(4))); got != "end_turn" {
		t.Errorf("prompt after a refused one stopped %q, want end_turn", got)
	}
}

// $/cancel_request naming a prompt cancels that prompt alone: the running
// turn answers cancelled, and a queued one answers cancelled without
// running while the turn before it goes on.
func TestCancelRequest_cancelsThatPrompt(t *testing.T) {
	r := startRaw(t, t.TempDir())
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	sid := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
	cancelRequest := func(id int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":%d}}`, id)
	}
	r.send(promptLine(3, sid, "slow"))
	r.send(cancelRequest(3))
	if got := stopReason(r.next(response(3))); got != "cancelled" {
		t.Errorf("the running prompt named by $/cancel_request stopped %q, want cancelled", got)
	}
	r.send(promptLine(4, sid, "slow") + "\n" + promptLine(5, sid, "queued behind"))
	r.send(cancelRequest(5))
	if got := stopReason(r.next(response(5))); got != "cancelled" {
		t.Errorf("the queued prompt named by $/cancel_request stopped %q, want cancelled", got)
	}
	if got := stopReason(r.next(response(4))); got != "end_turn" {
		t.Errorf("the turn before the cancelled one stopped %q, want end_turn", got)
	}
}
