package edge

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
)

// Fifty sessions at once, some of their turns cancelled, then the bridge
// restarts: nothing crosses from one session to another, and every
// acknowledged turn replays.
func TestLoad_fiftySessionsAndARestart(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: the load test does not run with -short")
	}
	const n = 50
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	ids := make([]acp.SessionId, n)
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := h.CS.NewSession(h.Ctx(), acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}})
			if err != nil {
				errs <- err
				return
			}
			ids[i] = s.SessionId
			if _, err := h.Prompt(s.SessionId, fmt.Sprintf("hello from session-%02d", i)); err != nil {
				errs <- err
			}
			if i%5 != 0 {
				return
			}
			done := make(chan struct{})
			go func() { // a slow turn, cancelled
				defer close(done)
				r, err := h.Prompt(s.SessionId, fmt.Sprintf("slow think read please cancel-%02d", i))
				if err != nil || r.StopReason != acp.StopReasonCancelled {
					errs <- fmt.Errorf("cancelled turn %d: %+v, %v", i, r, err)
				}
			}()
			for !strings.Contains(h.Client.ConversationOf(s.SessionId), "thought:") { // the slow turn is under way
				time.Sleep(5 * time.Millisecond)
			}
			h.CS.Cancel(h.Ctx(), acp.CancelNotification{SessionId: s.SessionId})
			<-done
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, id := range ids {
		got := h.Client.ConversationOf(id)
		for j := range n {
			mark := fmt.Sprintf("session-%02d", j)
			if strings.Contains(got, mark) != (i == j) {
				t.Errorf("session %d's updates mention %s: cross-talk, or its own are missing:\n%s", i, mark, got)
			}
		}
	}
	h.Stop()

	h2 := start(t, dir)
	h2.Initialize(acp.ClientCapabilities{})
	for i, id := range ids {
		if _, err := h2.CS.LoadSession(h2.Ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: "/work", McpServers: []acp.McpServer{}}); err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
		replay := h2.Client.ConversationOf(id)
		if !strings.Contains(replay, fmt.Sprintf("user: hello from session-%02d", i)) || !strings.Contains(replay, "agent: ") {
			t.Errorf("replay of session %d:\n%s", i, replay)
		}
		if i%5 == 0 && !strings.Contains(replay, fmt.Sprintf("cancel-%02d", i)) {
			t.Errorf("replay of session %d lacks its cancelled turn:\n%s", i, replay)
		}
	}
}
