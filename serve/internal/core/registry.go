package core

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
)

// A Registry holds the connections of one server, by id: every transport
// that shares the server's Connector (and so its sessions) should share
// one, so that a session one connection attaches is detached from the
// others. CloseAll ends them all at shutdown.
type Registry struct {
	limits Limits
	log    *slog.Logger

	mu     sync.Mutex // protects the fields below
	conns  map[string]*Conn
	closed bool
}

// NewRegistry returns a Registry whose connections have limits (a zero
// field takes its default); log may be nil.
func NewRegistry(limits Limits, log *slog.Logger) *Registry {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Registry{limits: limits.withDefaults(), log: log, conns: map[string]*Conn{}}
}

// Limits are the Registry's limits, defaults filled in.
func (r *Registry) Limits() Limits { return r.limits }

// NewConn makes a connection, for Start to run, with ConnOptions.ID or a
// new random id. Make its
// Mailboxes before Start, so that ConnOptions.Route has them from the
// first message on.
func (r *Registry) NewConn(o ConnOptions) *Conn {
	ctx, cancel := context.WithCancelCause(context.Background())
	inR, inW := io.Pipe()
	id := o.ID
	if id == "" {
		id = newID()
	}
	return &Conn{
		id: id, reg: r, limits: r.limits, log: r.log, opts: o,
		ctx: ctx, cancel: cancel, inR: inR, inW: inW,
		kick: make(chan struct{}, 1), over: make(chan struct{}), done: make(chan struct{}),
		waiters: map[string]chan Msg{}, asked: map[string]asked{}, attached: map[string]bool{},
	}
}

// ErrIDTaken: Start was given a connection whose ConnOptions.ID another
// registered connection has.
var ErrIDTaken = errors.New("connection id already in use")

// add registers c, unless CloseAll has begun or its id is taken.
func (r *Registry) add(c *Conn) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrShutdown
	}
	if r.conns[c.id] != nil {
		return fmt.Errorf("%w: %q", ErrIDTaken, c.id)
	}
	r.conns[c.id] = c
	return nil
}

// Conns are the registered connections that go on, in no order.
func (r *Registry) Conns() []*Conn {
	r.mu.Lock()
	cs := make([]*Conn, 0, len(r.conns))
	for _, c := range r.conns {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	return slices.DeleteFunc(cs, func(c *Conn) bool { return c.Err() != nil })
}

// forget deregisters c, once it is over.
func (r *Registry) forget(c *Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.conns[c.id] == c {
		delete(r.conns, c.id)
	}
}

// Get returns the connection id names, or nil if there is none or it is
// ending.
func (r *Registry) Get(id string) *Conn {
	r.mu.Lock()
	c := r.conns[id]
	r.mu.Unlock()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stoppedLocked() {
		return nil
	}
	return c
}

// Delete closes the connection id names (ErrClosed), and reports whether
// there was one; like the SDK's, it finds one that is already ending.
func (r *Registry) Delete(id string) bool {
	r.mu.Lock()
	c := r.conns[id]
	r.mu.Unlock()
	if c == nil {
		return false
	}
	c.Close(ErrClosed)
	return true
}

// others are the Registry's connections but c.
func (r *Registry) others(c *Conn) []*Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cs []*Conn
	for _, o := range r.conns {
		if o != c {
			cs = append(cs, o)
		}
	}
	return cs
}

// Len is how many connections are registered.
func (r *Registry) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.conns)
}

// CloseAll closes every connection (ErrShutdown) and waits until their
// goroutines have returned, or ctx ends. No connection starts after it
// has begun.
func (r *Registry) CloseAll(ctx context.Context) error {
	r.mu.Lock()
	r.closed = true
	cs := make([]*Conn, 0, len(r.conns))
	for _, c := range r.conns {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	for _, c := range cs {
		c.Close(ErrShutdown)
	}
	for _, c := range cs {
		select {
		case <-c.Done():
		case <-ctx.Done():
			return fmt.Errorf("closing connections: %w", ctx.Err())
		}
	}
	return nil
}

// newID is a random UUID (version 4), as the SDK's connection ids are.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// track notes a request whose answer attaches or detaches a session, and
// reports whether m is one.
func (c *Conn) track(m Msg) bool {
	if m.Kind != Request {
		return false
	}
	switch m.Method {
	case "session/new", "session/fork", "session/load", "session/resume", "session/close", "session/delete":
	default:
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked[m.Key()] = asked{m.Method, m.SessionID}
	return true
}

// untrack forgets a request that track noted and Send did not send.
func (c *Conn) untrack(m Msg, tracked bool) {
	if !tracked {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.asked, m.Key())
}

// answered attaches or detaches the session of the request response m
// answers, if it did.
func (c *Conn) answered(m Msg) {
	key := m.Key()
	c.mu.Lock()
	a, ok := c.asked[key]
	delete(c.asked, key)
	c.mu.Unlock()
	if !ok || m.IsError {
		return
	}
	switch a.method {
	case "session/new", "session/fork":
		c.attach(m.ResultSessionID)
	case "session/load", "session/resume":
		c.attach(a.session)
	default: // closed or deleted: its stream stays, for the answer
		c.mu.Lock()
		delete(c.attached, a.session)
		c.mu.Unlock()
	}
}

// attach attaches session id to c and detaches it from every other
// connection of the Registry.
func (c *Conn) attach(id string) {
	if id == "" {
		return
	}
	c.mu.Lock()
	c.attached[id] = true
	c.mu.Unlock()
	for _, o := range c.reg.others(c) {
		o.Detach(id)
	}
}

// detach detaches session id from c (another connection attached it),
// telling ConnOptions.Detached if it was attached.
func (c *Conn) Detach(id string) {
	c.mu.Lock()
	was := c.attached[id]
	delete(c.attached, id)
	c.mu.Unlock()
	if was && c.opts.Detached != nil {
		c.opts.Detached(id)
	}
}
