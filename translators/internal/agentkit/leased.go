package agentkit

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/acpbridge/acpbridge/internal/daemon"
)

// Link is what a backend holds of its server: the process it started
// (*proc.Process), or a hold on a shared one (Leased).
type Link interface {
	Server
	Pid() int // the server's process, 0 if unknown
}

// Leased is a backend's hold on a server that a daemon keeps (a shared
// server, Options.Shared), as a Link: done when the bridge's connection to
// it ends (End) or its process does (EndWith), or it is let go (Stop).
type Leased struct {
	name  string // what the server is, for messages: "codex app-server"
	lease *daemon.Lease
	close func() // closes the bridge's connection to it, if any

	once sync.Once
	done chan struct{}
	err  error // why it ended; set before done closes
}

// NewLeased returns the hold on the server of lease; close (if not nil)
// closes the bridge's connection to it when it is let go.
func NewLeased(name string, lease *daemon.Lease, close func()) *Leased {
	return &Leased{name: name, lease: lease, close: close, done: make(chan struct{})}
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

// Stop lets the server go: the daemon keeps it for the other bridges.
func (l *Leased) Stop() {
	if l.close != nil {
		l.close()
	}
	l.End(errors.New("the bridge let it go"))
	l.lease.Close()
}

// Pid is the server's process.
func (l *Leased) Pid() int { return l.lease.Pid() }

// Dir is the daemon's directory.
func (l *Leased) Dir() string { return l.lease.Dir }

// Will has the daemon's keeper do d if the bridge ends before Unwill(key)
// (see daemon.Lease.Will): how a turn on a shared server ends with the
// bridge that runs it, even one killed with SIGKILL.
func (l *Leased) Will(key string, d daemon.Deed) error { return l.lease.Will(key, d) }

// Unwill takes back the deed of key.
func (l *Leased) Unwill(key string) error { return l.lease.Unwill(key) }

// TurnWill is what a shared server's turn leaves with its keeper: the
// deed that interrupts it if the bridge dies (see Leased.Will), the
// turn's key, and the hold it was left on.
type TurnWill struct {
	mu  sync.Mutex
	on  *Leased
	key string
	log *slog.Logger
}

// Leave has the keeper of l's daemon (if l is a Leased) do d should the
// bridge end before Done.
func (w *TurnWill) Leave(log *slog.Logger, l Link, key string, d daemon.Deed) {
	leased, ok := l.(*Leased)
	if !ok {
		return
	}
	if err := leased.Will(key, d); err != nil {
		log.Warn("the keeper can't be told to interrupt the turn should the bridge die", "err", err)
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.on, w.key, w.log = leased, key, log
	log.Debug("left the keeper the turn's will: it ends the turn should the bridge die", "key", key)
}

// Done takes back the deed Leave left, if any: the turn is over.
func (w *TurnWill) Done() {
	w.mu.Lock()
	on, key, log := w.on, w.key, w.log
	w.on = nil
	w.mu.Unlock()
	if on == nil {
		return
	}
	if err := on.Unwill(key); err != nil {
		log.Debug("taking back the turn's will", "err", err)
	}
}

// Keeper is the process of the daemon's keeper.
func (l *Leased) Keeper() int { return l.lease.Keeper() }

// Fallback is a backend's note that the daemon of its shared server (or
// spares) could not be had, so that the bridge says so once and runs its
// own instead.
type Fallback struct{ once sync.Once }

// Warn says, the first time only, that the shared what can't be had
// (err: its runtime directory is read-only, full, or not the user's
// alone, say) and that this bridge runs its own.
func (f *Fallback) Warn(log *slog.Logger, what string, err error) {
	f.once.Do(func() {
		log.Warn("no shared "+what+" (see acpbridge doctor); this bridge runs its own", "err", err)
	})
}

// DaemonSpec is the daemon that runs the CLI at path with args in env as
// a shared server, keyed by all three (the environment without what
// differs between two launches of one program, stableEnv), by the
// executable's Stamp, and by settings: what else changes what the server
// does (the Contents of its settings files); package daemon adds
// acpbridge's own build.
func (c CLI) DaemonSpec(path string, args, env []string, settings ...string) daemon.Spec {
	key := append([]string{path, Stamp(path)}, settings...)
	key = append(append(append(key, "--"), args...), stableEnv(env)...)
	return daemon.Spec{Name: c.exe.Name, Path: path, Args: args, Env: env, Idle: c.Shared(), Key: key}
}
