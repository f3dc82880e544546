package claude

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Close waits for the goroutine answering a permission ask: once it
// returns, nothing of the session is still talking to the client.
func TestSession_closeWaitsForAnAskBeingAnswered(t *testing.T) {
	ev := newEvents("")
	asked := make(chan struct{})
	var returned atomic.Bool
	ev.answer = func(ctx context.Context) (acp.RequestPermissionOutcome, error) {
		close(asked)
		<-ctx.Done()
		time.Sleep(100 * time.Millisecond) // a client slow to let go
		returned.Store(true)
		return acp.NewRequestPermissionOutcomeCancelled(), nil
	}
	n, _ := openFake(t, agent.OpenOptions{}, ev)
	go n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("bash")}})
	<-asked
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if !returned.Load() {
		t.Error("Close returned while an ask was still being answered")
	}
}
