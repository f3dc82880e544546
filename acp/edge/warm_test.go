package edge

import (
	"context"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/coder/acp-go-sdk"
)

// warmer is the mock with a Warm of the test's.
type warmer struct {
	agent.Backend
	warm func(cwd string)
}

func (w warmer) Info() agent.Info {
	info := w.Backend.Info()
	info.Caps.Warm = w.warm
	return info
}

// TestInitialize_answersBeforeWarming: the default agent warms up
// (agent.Caps.Warm: finding its executable, attending a daemon, starting
// a spare) after initialize's answer is out, not on its way, and holds up
// no other answer: here a Warm that does not return until the client has
// its answers to initialize and to a session/new.
func TestInitialize_answersBeforeWarming(t *testing.T) {
	answered, warmed := make(chan struct{}), make(chan struct{})
	h := startOn(t, "", warmer{Backend: mock.New(), warm: func(string) {
		defer close(warmed)
		select {
		case <-answered:
		case <-time.After(time.Minute): // only a hang: an answer waited for Warm
			t.Error("the client had no answer while the agent warmed up")
		}
	}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := h.CS.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: ProtocolVersion}); err != nil {
		t.Fatalf("initialize: %v (it waited for the agent's Warm)", err)
	}
	if _, err := h.CS.NewSession(ctx, acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/new: %v (it waited for the agent's Warm)", err)
	}
	close(answered)
	select {
	case <-warmed:
	case <-ctx.Done():
		t.Fatal("the agent was never warmed after initialize")
	}
}
