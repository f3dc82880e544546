package agentkit

import (
	"sync"
	"time"
)

// Tasks are the goroutines a session starts to answer its agent in the
// background (a permission ask, a question, a mode switch), so that its
// Close can wait for them: Close ends the session's context, which ends
// their asks, then calls Wait.
type Tasks struct{ wg sync.WaitGroup }

// Go runs f as one of the tasks.
func (t *Tasks) Go(f func()) { t.wg.Go(f) }

// Wait waits for the tasks to return, for at most within; it reports
// whether they did.
func (t *Tasks) Wait(within time.Duration) bool {
	done := make(chan struct{})
	go func() {
		t.wg.Wait()
		close(done)
	}()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	}
}
