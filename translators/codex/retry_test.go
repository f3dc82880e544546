package codex

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
)

// A provider codex retries without end: each retry reaches the client as a
// thought saying what failed, and after the backend's retries the turn is
// interrupted and fails with the provider's error; the next turn runs.
func TestFake_retriesAreShownAndBounded(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	b := New(Options{Path: nativetest.TestBinary(), Env: fc.Env, Logger: slog.New(slog.DiscardHandler), Retries: 2})
	t.Cleanup(func() { b.Close() })
	ev := nativetest.NewRecorder("accept")
	s := nativetest.OpenSession(t, b, agent.OpenOptions{}, ev)
	_, err := nativetest.RunPrompt(t, s, "offline", nil)
	if err == nil || !strings.Contains(err.Error(), "kept failing (2 retries)") || !strings.Contains(err.Error(), "error sending request") {
		t.Fatalf("turn against an unreachable provider: err %v, want the provider's error after 2 retries", err)
	}
	said := ev.Conversation()
	// The third gives up; more may come while codex takes the interrupt.
	if n := strings.Count(said, "Codex is retrying the model request"); n < 3 {
		t.Errorf("%d retry notices, want 3 (the third gives up):\n%s", n, said)
	}
	if len(fc.sent(t, "turn/interrupt")) != 1 {
		t.Errorf("codex's turn was not interrupted")
	}
	nativetest.MustPrompt(t, s, "hello again", nil)
}
