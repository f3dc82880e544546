package agentkit

import (
	"context"
	"sync"
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
	go func() {
		defer close(s.ready)
		lease, sock, err := s.lease1(sp)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.lease, s.sock = lease, sock
		if err != nil {
			s.cli.log.Warn("no shared spares", "err", err)
		} else if s.closed {
			lease.Close()
		}
	}()
	return s.ready
}

// lease1 takes the lease, and says where the daemon's server listens.
func (s *SharedSpares) lease1(sp proc.Spec) (*daemon.Lease, string, error) {
	spec, err := daemon.SparesOf(s.cli.DaemonSpec(sp.Path, nil, sp.Env))
	if err != nil {
		return nil, "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), attendTimeout)
	defer cancel()
	lease, err := daemon.Attend(ctx, spec, daemon.SparesServe)
	return lease, daemon.SparesSocket(spec.Dir()), err
}

// Warm has a process started as sp kept ready, in the background.
func (s *SharedSpares) Warm(sp proc.Spec) {
	ready := s.attend(sp)
	go func() {
		<-ready
		if sock, ok := s.attended(); ok {
			ctx, cancel := context.WithTimeout(context.Background(), attendTimeout)
			defer cancel()
			if err := daemon.WarmSpare(ctx, sock, sp); err != nil {
				s.cli.log.Warn("warming a shared spare", "err", err)
			}
		}
	}()
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
	p, err := daemon.TakeSpare(ctx, sock, sp)
	if err != nil {
		s.cli.log.Warn("taking a shared spare", "err", err)
	}
	if p != nil {
		s.cli.log.Debug("took a shared spare", "pid", p.Pid())
	}
	return p
}

// attended returns the daemon's socket, if there is a lease on it.
func (s *SharedSpares) attended() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sock, s.lease != nil && !s.closed
}

// Close lets the daemon go (now, or once its start is done).
func (s *SharedSpares) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.lease != nil {
		s.lease.Close()
	}
}
