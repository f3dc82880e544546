//go:build unix

package daemon

import "time"

// Impatient makes a daemon that runs count as hung once its keeper has run
// for start without answering for answer, until the test ends.
func Impatient(t interface{ Cleanup(func()) }, start, answer time.Duration) {
	was := patience
	patience.start, patience.answer = start, answer
	t.Cleanup(func() { patience = was })
}
