package agentkit

import (
	"context"
	"errors"
	"io/fs"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
)

// SharedSpares keeps a backend's spare processes in a daemon that the
// user's bridges share (Options.Shared; see package daemon), for an agent
// that runs a process per session: the bridge has one warmed at
// initialize of the kind its first session will want, and a session
// takes one there, warmed by this bridge or left by an earlier one, so
// that even a bridge that has only just started finds its agent up. The
// bridge holds a lease on the daemon from its first use to Close. Give it
// its CLI with For before any use.
type SharedSpares struct {
	cli CLI

	mu     sync.Mutex
	ready  chan struct{} // closed once attended (or not)
	sock   string
	lease  *daemon.Lease // nil if the daemon can't be had
	closed bool
	ctx    context.Context // ends at Close; set with ready
	cancel context.CancelFunc

	warming map[string]chan struct{} // by proc.Spec.Kind: closed once the daemon has the spare Warm asked for

	tasks    Tasks // attending and warming; Close waits for them
	fallback Fallback
}

// attendTimeout bounds the wait for the daemon's start.
const attendTimeout = 15 * time.Second

// For sets the CLI whose spares these are.
func (s *SharedSpares) For(c CLI) { s.cli = c }

// attend takes a lease on the daemon that keeps spares like sp, starting
// it if need be, once; the returned channel is closed when that is done.
func (s *SharedSpares) attend(sp proc.Spec) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready != nil {
		return s.ready
	}
	s.ready = make(chan struct{})
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.closed {
		s.cancel()
	}
	ready, ctx := s.ready, s.ctx
	s.tasks.Go(func() {
		defer close(ready)
		lease, sock, err := s.lease1(ctx, sp)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lease, s.sock = lease, sock
		switch {
		case err != nil && !s.closed:
			s.fallback.Warn(s.cli.log, s.cli.exe.Name+" spares", err)
		case err == nil && s.closed:
			lease.Close()
		}
	})
	return ready
}

// lease1 takes the lease, and says where the daemon's server listens.
func (s *SharedSpares) lease1(ctx context.Context, sp proc.Spec) (*daemon.Lease, string, error) {
	spec, err := daemon.SparesOf(s.cli.DaemonSpec(sp.Path, nil, sp.Env))
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, attendTimeout)
	defer cancel()
	lease, err := daemon.Attend(ctx, spec, daemon.SparesServe)
	return lease, daemon.SparesSocket(spec.Dir()), err
}

// Warm has a process started as sp kept ready, in the background; if the
// daemon can't be had, it calls local instead, to keep one in the bridge.
func (s *SharedSpares) Warm(sp proc.Spec, local func(proc.Spec)) {
	ready, warmed := s.attend(sp), s.warmingOf(sp.Kind())
	s.tasks.Go(func() {
		defer close(warmed)
		<-ready
		sock, ok := s.attended()
		if !ok {
			if !s.isClosed() {
				local(sp)
			}
			return
		}
		ctx, cancel := context.WithTimeout(s.ctx, attendTimeout)
		defer cancel()
		if err := daemon.WarmSpare(ctx, sock, sp); err != nil && ctx.Err() == nil {
			s.cli.log.Warn("warming a shared spare", "err", err)
		}
	})
}

// warmingOf notes that a spare of kind is being warmed, and returns the
// channel to close once it has been.
func (s *SharedSpares) warmingOf(kind string) chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.warming == nil {
		s.warming = map[string]chan struct{}{}
	}
	c := make(chan struct{})
	s.warming[kind] = c
	return c
}

// warmed waits, while ctx lasts, until the daemon has the spare of kind
// this bridge asked it to warm, if it did: a take that came first would
// find none, and start a second claude beside the spare.
func (s *SharedSpares) warmed(ctx context.Context, kind string) {
	s.mu.Lock()
	c := s.warming[kind]
	s.mu.Unlock()
	if c == nil {
		return
	}
	select {
	case <-c:
	case <-ctx.Done():
	}
}

// isClosed reports whether Close was called.
func (s *SharedSpares) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Take returns a process started as sp, or nil if the daemon had none or
// can't be reached while ctx lasts.
func (s *SharedSpares) Take(ctx context.Context, sp proc.Spec) *proc.Process {
	select {
	case <-s.attend(sp):
	case <-ctx.Done():
		return nil
	}
	sock, ok := s.attended()
	if !ok {
		return nil
	}
	s.warmed(ctx, sp.Kind())
	p, err := daemon.TakeSpare(ctx, sock, sp)
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, fs.ErrNotExist) {
		s.cli.log.Info("the shared spares daemon has gone; the next session attends a new one", "err", err)
		s.forget()
	} else if err != nil {
		s.cli.log.Warn("taking a shared spare", "err", err)
	}
	if p != nil {
		s.cli.log.Debug("took a shared spare", "pid", p.Pid())
	}
	return p
}

// forget lets go of a daemon that has gone (killed, say), so that the next
// use attends a new one.
func (s *SharedSpares) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.ready == nil {
		return
	}
	select {
	case <-s.ready:
	default:
		return // still attending
	}
	if s.lease != nil {
		s.lease.Close()
	}
	s.cancel()
	s.ready, s.lease, s.sock = nil, nil, ""
}

// Keeper is the pid of the keeper of the daemon the bridge attends, or 0.
func (s *SharedSpares) Keeper() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == nil {
		return 0
	}
	return s.lease.Keeper()
}

// Server is the pid of the spares server of the daemon the bridge
// attends, or 0.
func (s *SharedSpares) Server() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lease == nil {
		return 0
	}
	return s.lease.Pid()
}

// attended returns the daemon's socket, if there is a lease on it.
func (s *SharedSpares) attended() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock, s.lease != nil && !s.closed
}

// closeWait bounds Close's wait for attending and warming, which end
// with their context.
const closeWait = 5 * time.Second

// Close lets the daemon go (now, or once its start is done), and waits
// for what attends it or warms a spare there.
func (s *SharedSpares) Close() {
	s.mu.Lock()
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
	if s.lease != nil {
		s.lease.Close()
	}
	s.mu.Unlock()
	if !s.tasks.Wait(closeWait) {
		s.cli.log.Warn("the shared spares were still being attended as the backend closed")
	}
}
