package agentkit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
)

// Server is a process that a backend's sessions share, as Shared runs it.
type Server interface {
	Done() <-chan struct{} // closed once it has exited
	Exited() error         // how it exited, with its stderr
	Stop()                 // stops it and waits for it
}

// Shared runs the one server a backend's sessions share: started on first
// use, started again after it dies, stopped by Close. Its methods are
// safe for concurrent use.
type Shared[S Server] struct {
	// Start starts a server and waits until it is ready.
	Start func(ctx context.Context) (S, error)
	// Gone is told when a server exits, unless Close stopped it.
	Gone func(srv S, err error)

	startMu sync.Mutex // serialises starts

	mu      sync.Mutex
	cur     S
	running bool
	closing bool
}

// errClosed: the backend was closed.
var errClosed = fmt.Errorf("%w: the backend is closed", agent.ErrAgentUnavailable)

// Get returns the running server, starting one if there is none.
func (sh *Shared[S]) Get(ctx context.Context) (S, error) {
	sh.startMu.Lock()
	defer sh.startMu.Unlock()
	var zero S
	if srv, ok := sh.Running(); ok {
		return srv, nil
	}
	if sh.isClosing() {
		return zero, errClosed
	}
	srv, err := sh.Start(ctx)
	if err != nil {
		return zero, err
	}
	sh.mu.Lock()
	closing := sh.closing
	if !closing {
		sh.cur, sh.running = srv, true
	}
	sh.mu.Unlock()
	if closing { // Close ran while it started: leave nothing behind
		srv.Stop()
		return zero, errClosed
	}
	go sh.watch(srv)
	return srv, nil
}

// Running returns the server if one runs.
func (sh *Shared[S]) Running() (S, bool) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.running {
		select {
		case <-sh.cur.Done():
		default:
			return sh.cur, true
		}
	}
	var zero S
	return zero, false
}

// Closed reports whether Close was called.
func (sh *Shared[S]) Closed() bool { return sh.isClosing() }

func (sh *Shared[S]) isClosing() bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.closing
}

// watch waits for the server to exit and tells Gone.
func (sh *Shared[S]) watch(srv S) {
	<-srv.Done()
	err := srv.Exited()
	if err == nil {
		err = errors.New("the server exited")
	}
	sh.mu.Lock()
	closing := sh.closing
	sh.mu.Unlock()
	srv.Stop() // release what it held (its pipes, connections)
	if !closing && sh.Gone != nil {
		sh.Gone(srv, err)
	}
}

// Close stops the server, and any started later.
func (sh *Shared[S]) Close() {
	sh.mu.Lock()
	srv, running := sh.cur, sh.running
	var zero S
	sh.cur, sh.running, sh.closing = zero, false, true
	sh.mu.Unlock()
	if running {
		srv.Stop()
	}
}

// Registry is a backend's open sessions by the agent's id for them, for
// routing what the shared server sends. It is safe for concurrent use.
type Registry[T comparable] struct {
	mu sync.Mutex
	m  map[string]T
}

// Add registers t as id.
func (r *Registry[T]) Add(id string, t T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m == nil {
		r.m = map[string]T{}
	}
	r.m[id] = t
}

// Remove forgets id, if it is still t.
func (r *Registry[T]) Remove(id string, t T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.m[id] == t {
		delete(r.m, id)
	}
}

// Get returns the session registered as id.
func (r *Registry[T]) Get(id string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.m[id]
	return t, ok
}

// All returns every registered session.
func (r *Registry[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]T, 0, len(r.m))
	for _, t := range r.m {
		out = append(out, t)
	}
	return out
}

// Lazy is a value made on first use, and made again on the next use after
// a failure. It is safe for concurrent use; makers do not overlap.
type Lazy[T any] struct {
	mu   sync.Mutex // serialises makers
	vmu  sync.Mutex
	v    T
	made bool
}

// Get returns the value, making it with make if it has not been made.
func (l *Lazy[T]) Get(make func() (T, error)) (T, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if v, ok := l.Peek(); ok {
		return v, nil
	}
	v, err := make()
	if err != nil {
		return v, err
	}
	l.vmu.Lock()
	l.v, l.made = v, true
	l.vmu.Unlock()
	return v, nil
}

// Peek returns the value if it has been made.
func (l *Lazy[T]) Peek() (T, bool) {
	l.vmu.Lock()
	defer l.vmu.Unlock()
	return l.v, l.made
}

// Attachment is a session's place on a backend's shared server: attached
// in the background when the session opens, and attached again, to the
// server that replaced it, when the one it was on has died. It is safe
// for concurrent use.
type Attachment[S interface {
	Server
	comparable
}] struct {
	attach func(ctx context.Context) (S, error)
	ready  chan struct{} // closed once the first attach has ended
	err    error         // its error, set before ready closes

	mu  sync.Mutex
	srv S
}

// NewAttachment returns an Attachment that attaches the session with
// attach (which starts the server if needed).
func NewAttachment[S interface {
	Server
	comparable
}](attach func(ctx context.Context) (S, error)) *Attachment[S] {
	return &Attachment[S]{attach: attach, ready: make(chan struct{})}
}

// Start attaches the session the first time, within timeout of life.
// Call it once, in the background; it returns how that went.
func (a *Attachment[S]) Start(life context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(life, timeout)
	defer cancel()
	srv, err := a.attach(ctx)
	if err == nil {
		a.set(srv)
	}
	a.err = err
	close(a.ready)
	return err
}

// Ready waits for the first attach and returns its error.
func (a *Attachment[S]) Ready(ctx context.Context) error {
	select {
	case <-a.ready:
		return a.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Server waits for the first attach and returns the server the session
// is on, attaching it again first if that server has died or the first
// attach failed (the server died under it, say).
func (a *Attachment[S]) Server(ctx context.Context) (S, error) {
	var zero S
	first := a.Ready(ctx)
	if ctx.Err() != nil {
		return zero, first
	}
	srv, attached := a.Current()
	if attached {
		select {
		case <-srv.Done():
		default:
			return srv, nil
		}
	}
	srv, err := a.attach(ctx)
	switch {
	case err != nil && attached:
		return zero, fmt.Errorf("restarting the agent's server: %w", err)
	case err != nil:
		return zero, err
	}
	a.set(srv)
	return srv, nil
}

// Current returns the server the session is on, if it was attached.
func (a *Attachment[S]) Current() (S, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var zero S
	return a.srv, a.srv != zero
}

// On reports whether the session is on srv.
func (a *Attachment[S]) On(srv S) bool {
	cur, ok := a.Current()
	return ok && cur == srv
}

func (a *Attachment[S]) set(srv S) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.srv = srv
}
