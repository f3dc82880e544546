//go:build unix

package daemon

import (
	"syscall"
	"time"
)

// Watch returns a channel closed once the daemon's server has exited
// (looked for every keeperPoll), or the lease is let go: for a server the
// bridge holds no connection to that would tell. The goroutine that
// watches ends when the channel closes.
func (l *Lease) Watch() <-chan struct{} {
	done := make(chan struct{})
	pid := l.Pid()
	go func() {
		defer close(done)
		for pid > 0 && syscall.Kill(pid, 0) == nil {
			select {
			case <-l.closed:
				return
			case <-time.After(keeperPoll):
			}
		}
	}()
	return done
}
