package agentkit

import (
	"errors"
	"fmt"
	"sync"

	"github.com/acpbridge/acpbridge/translators/proc"
)

// Leased is a backend's hold on a server that a daemon keeps (a shared
// server, Options.Shared), as a Shared's Server: done when the bridge's
// connection to it ends (End) or it is let go (Release).
type Leased struct {
	name  string // what the server is, for messages: "codex app-server"
	lease *proc.Lease

	once sync.Once
	done chan struct{}
	err  error // why it ended; set before done closes
}

// NewLeased returns the hold on the server of lease.
func NewLeased(name string, lease *proc.Lease) *Leased {
	return &Leased{name: name, lease: lease, done: make(chan struct{})}
}

// End ends the hold: the connection to the server ended with err.
func (l *Leased) End(err error) {
	l.once.Do(func() {
		l.err = err
		close(l.done)
	})
}

// EndWith ends the hold when gone closes.
func (l *Leased) EndWith(gone <-chan struct{}) {
	go func() {
		select {
		case <-gone:
			l.End(errors.New("the server exited"))
		case <-l.done:
		}
	}()
}

// Done is closed once the hold has ended.
func (l *Leased) Done() <-chan struct{} { return l.done }

// Exited says why the hold ended, with the end of the daemon's log.
func (l *Leased) Exited() error {
	<-l.done
	msg := fmt.Sprintf("the shared %s (%s): %v", l.name, l.lease.Dir, l.err)
	if tail := l.lease.Log(); tail != "" {
		msg += "\n" + tail
	}
	return errors.New(msg)
}

// Release lets the server go: the daemon keeps it for the other bridges.
func (l *Leased) Release() {
	l.End(errors.New("the bridge let it go"))
	l.lease.Close()
}

// Pid is the server's process.
func (l *Leased) Pid() int { return l.lease.Pid() }
