package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
)

// Connector serves one ACP client connection: it reads the client's
// JSON-RPC messages from r (one per line) and writes the agent side's to w
// (one per line) until r ends or ctx is done. agent names the agent that
// the connection's new sessions run ("" for the bridge's default). The
// binary's is edge.Server.ServeConn; it shares one bridge.Manager between
// every connection, and when a connection ends its sessions go on
// unattached (turns run to their end and are recorded; open permission
// asks end cancelled) until another connection loads or resumes them.
type Connector func(ctx context.Context, r io.Reader, w io.Writer, agent string) error

// Why a connection ended (Conn.Err), and what its receivers' Next fails
// with.
var (
	// ErrClosed: the client ended the connection (DELETE, a WebSocket's
	// close), or Close was called without a cause.
	ErrClosed = errors.New("connection closed")
	// ErrShutdown: the server is shutting down (Registry.CloseAll).
	ErrShutdown = errors.New("server shutting down")
	// ErrEnded: the Connector returned.
	ErrEnded = errors.New("the agent side ended the connection")
	// ErrOverflow: the connection's output outgrew Limits.MaxBuffered.
	ErrOverflow = errors.New("connection exceeds its output buffer")
	// ErrStalled: output waited Limits.MaxStall and the client took none.
	ErrStalled = errors.New("connection output stalled")
	// ErrLimit: the client or the agent side broke another of Limits
	// (an id too long, too many session streams).
	ErrLimit = errors.New("connection exceeds a limit")
	// ErrReleased: a Lease was used after its Release.
	ErrReleased = errors.New("receiver released")
)

// Limits bound one connection; a zero field takes its default. The
// defaults are @agentclientprotocol/sdk 2.4.0's (connection.js), but for
// MaxMessage, which is the stdio edge's line limit.
type Limits struct {
	// MaxMessage is the longest message a client may send (a POST's body,
	// a WebSocket frame). Default edge.MaxLine.
	MaxMessage int
	// MaxBuffered is how many bytes of output a connection holds for its
	// client; past it the connection is closed (ErrOverflow), so that the
	// agent side's writes never wait for a client. Requests the client
	// sends wait (Conn.WaitRoom) while half of it is held. Default 64 MiB.
	MaxBuffered int
	// MaxStall is how long output may wait with the client taking none of
	// it before the connection is closed (ErrStalled). Default 60 s.
	MaxStall time.Duration
	// MaxSessionStreams bounds the session streams of an HTTP connection
	// that hold messages and have no receiver. Default 1024.
	MaxSessionStreams int
	// MaxIDLength bounds session ids and string request ids. Default 1024.
	MaxIDLength int
	// PingInterval is how often a WebSocket is pinged; one whose pong has
	// not come by the next ping is closed (ErrStalled). Default 30 s.
	PingInterval time.Duration
}

// Defaults of Limits.
const (
	DefaultMaxBuffered       = 64 << 20
	DefaultMaxStall          = 60 * time.Second
	DefaultMaxSessionStreams = 1024
	DefaultMaxIDLength       = 1024
	DefaultPingInterval      = 30 * time.Second
)

func (l Limits) withDefaults() Limits {
	l.MaxMessage = OrDefault(l.MaxMessage, edge.MaxLine)
	l.MaxBuffered = OrDefault(l.MaxBuffered, DefaultMaxBuffered)
	l.MaxStall = OrDefault(l.MaxStall, DefaultMaxStall)
	l.MaxSessionStreams = OrDefault(l.MaxSessionStreams, DefaultMaxSessionStreams)
	l.MaxIDLength = OrDefault(l.MaxIDLength, DefaultMaxIDLength)
	l.PingInterval = OrDefault(l.PingInterval, DefaultPingInterval)
	return l
}

func OrDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

func overflow(max int) error { return fmt.Errorf("%w (%d bytes)", ErrOverflow, max) }

// ConnOptions configure a Conn.
type ConnOptions struct {
	// ID is the connection's id, if the client names it (sandbox-agent's
	// server id); "" makes a random one (a UUID, as the SDK's connection
	// ids are). Start fails with ErrIDTaken for an id in use.
	ID string
	// Agent names the agent of the connection's new sessions ("" for the
	// bridge's default); the Connector gets it.
	Agent string
	// Route gets, in order, every message the agent side writes that no
	// Call awaits. It runs on the agent side's writing goroutine and must
	// not block: it pushes onto Mailboxes. nil drops them.
	Route func(Msg)
	// Detached, if set, is told when another connection of the Registry
	// attaches a session this one had (session/load, session/resume). It
	// must not block.
	Detached func(sessionID string)
	// Transport is the transport's own value for the connection
	// (Conn.Transport).
	Transport any
}

// A Conn is one client connection of the HTTP edge: a Connector serving
// it on in-memory pipes. The transport hands it the client's messages
// (Send, Call), and gets the agent side's through ConnOptions.Route. It
// tracks the sessions attached to the connection (Attached): those that
// session/new, session/fork, session/load or session/resume answered,
// until session/close, session/delete, or another connection attaching
// them.
//
// The agent side's writes never wait for the client: Route queues them on
// Mailboxes, bounded by Limits.MaxBuffered and Limits.MaxStall, past which
// the connection is closed.
type Conn struct {
	id     string
	reg    *Registry
	limits Limits
	log    *slog.Logger
	opts   ConnOptions

	// ctx is the Connector's, cancelled by Close with its cause; kept
	// here because the connection outlives the request that opened it.
	ctx    context.Context
	cancel context.CancelCauseFunc
	inR    *io.PipeReader
	inW    *io.PipeWriter
	inMu   sync.Mutex // serializes Send's writes to inW

	wmu  sync.Mutex // serializes the agent side's writes; guards line
	line []byte     // a line the agent side has begun

	kick chan struct{} // 1-buffered: output began to wait (for watch)
	over chan struct{} // closed when the Connector has returned
	done chan struct{} // closed when the Conn's goroutines have returned

	mu         sync.Mutex // protects the fields below, and every Mailbox's
	closing    bool       // Close was called
	ended      bool       // the Connector returned
	err        error      // why the connection ended
	buffered   int        // bytes queued on the Mailboxes
	progressAt time.Time  // when output last began to wait or was taken
	room       chan struct{}
	waiters    map[string]chan Msg // by request id key: Call's
	asked      map[string]asked    // by request id key: session requests in flight
	attached   map[string]bool
	boxes      []*Mailbox
}

// asked is a request whose answer attaches or detaches a session.
type asked struct{ method, session string }

// ID is the connection's id (Acp-Connection-Id).
func (c *Conn) ID() string { return c.id }

// Transport is ConnOptions.Transport.
func (c *Conn) Transport() any { return c.opts.Transport }

// Context is the Connector's context: cancelled, with the cause, when the
// connection is closed.
func (c *Conn) Context() context.Context { return c.ctx }

// Done is closed once the connection is over and its goroutines (the
// Connector's among them) have returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err says why the connection ended (nil while it goes on).
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Buffered is how many bytes of output the connection holds for its
// client.
func (c *Conn) Buffered() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buffered
}

// Attached reports whether session id is attached to the connection.
func (c *Conn) Attached(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attached[id]
}

// Start registers c and runs connect on its pipes. It fails with
// ErrShutdown once the Registry's CloseAll has begun.
func (c *Conn) Start(connect Connector) error {
	if err := c.reg.add(c); err != nil {
		return err
	}
	go c.run(connect)
	return nil
}

// run serves the connection until its Connector returns, then joins the
// watchdog and deregisters it. Closing Done is its last act: whoever waits
// on Done (CloseAll) joins it.
func (c *Conn) run(connect Connector) {
	var wg sync.WaitGroup
	wg.Go(c.watch)
	err := connect(c.ctx, c.inR, writer{c}, c.opts.Agent)
	c.end(err)
	wg.Wait()
	c.reg.forget(c)
	close(c.done)
}

// end is the Connector's return: nothing more will be written, so every
// Mailbox is finished (its receiver gets what is queued) and every Call
// fails.
func (c *Conn) end(err error) {
	c.mu.Lock()
	c.ended = true
	if c.err == nil {
		c.err = ErrEnded
		if err != nil {
			c.err = fmt.Errorf("%w: %w", ErrEnded, err)
		}
	}
	boxes := c.wakeAllLocked()
	c.mu.Unlock()
	// Closed once the error is set: a Send that finds the pipe closed
	// reports why (the Connector's error), not the pipe's end.
	c.inR.CloseWithError(ErrEnded)
	for _, m := range boxes {
		m.Finish()
	}
	close(c.over)
	c.log.Debug("connection ended", "conn", c.id, "err", c.Err())
}

// Close ends the connection for cause (nil: ErrClosed): what its Mailboxes
// hold is dropped and their receivers fail, Calls fail, and the Connector
// reads the end of its input and has its context cancelled. It does not
// wait: Done is closed once the Connector has returned.
func (c *Conn) Close(cause error) {
	if cause == nil {
		cause = ErrClosed
	}
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return
	}
	c.closing = true
	if c.err == nil {
		c.err = cause
	}
	for _, m := range c.wakeAllLocked() {
		m.abortLocked(cause)
	}
	c.buffered = 0
	c.mu.Unlock()
	c.inW.Close()
	c.cancel(cause)
	c.log.Debug("connection closed", "conn", c.id, "cause", cause)
}

// wakeAllLocked fails every Call and wakes WaitRoom; it returns the
// Mailboxes. c.mu is held.
func (c *Conn) wakeAllLocked() []*Mailbox {
	for k, ch := range c.waiters {
		close(ch)
		delete(c.waiters, k)
	}
	if c.room != nil {
		close(c.room)
		c.room = nil
	}
	return c.boxes
}

// stoppedLocked reports whether the connection takes no more messages.
// c.mu is held.
func (c *Conn) stoppedLocked() bool { return c.closing || c.ended }

// Send writes one of the client's messages to the agent side. It waits
// until the Connector reads it, and fails once the connection is over.
func (c *Conn) Send(m Msg) error {
	tracked := c.track(m)
	line := make([]byte, len(m.Raw)+1)
	copy(line, m.Raw)
	line[len(m.Raw)] = '\n'
	c.inMu.Lock()
	defer c.inMu.Unlock()
	if err := c.Err(); err != nil {
		c.untrack(m, tracked)
		return err
	}
	if _, err := c.inW.Write(line); err != nil {
		c.untrack(m, tracked)
		if cerr := c.Err(); cerr != nil {
			return cerr
		}
		return fmt.Errorf("sending to the agent side: %w", err)
	}
	return nil
}

// Call sends request m and waits for the agent side's answer, which Route
// then does not get. If ctx ends first, the answer goes to Route when it
// comes.
func (c *Conn) Call(ctx context.Context, m Msg) (Msg, error) {
	key := m.Key()
	if m.Kind != Request || key == "" {
		return Msg{}, fmt.Errorf("calling %q: not a request with an id", m.Method)
	}
	ch := make(chan Msg, 1)
	c.mu.Lock()
	if c.stoppedLocked() {
		c.mu.Unlock()
		return Msg{}, c.Err()
	}
	c.waiters[key] = ch
	c.mu.Unlock()
	if err := c.Send(m); err != nil {
		c.unwait(key, ch)
		return Msg{}, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return Msg{}, c.Err()
		}
		return r, nil
	case <-ctx.Done():
		if c.unwait(key, ch) {
			return Msg{}, ctx.Err()
		}
		if r, ok := <-ch; ok { // answered meanwhile
			return r, nil
		}
		return Msg{}, c.Err()
	}
}

// unwait forgets a Call's waiter, reporting whether it was still waiting.
func (c *Conn) unwait(key string, ch chan Msg) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiters[key] != ch {
		return false
	}
	delete(c.waiters, key)
	return true
}

// WaitRoom waits while the connection holds half of Limits.MaxBuffered of
// output or more. A transport calls it before it sends a request, whose
// answer adds output, so that a client that is not reading cannot make the
// agent side write more. It fails when ctx ends or the connection is
// closed (as it is once output has waited Limits.MaxStall).
func (c *Conn) WaitRoom(ctx context.Context) error {
	for {
		c.mu.Lock()
		if c.closing {
			c.mu.Unlock()
			return c.Err()
		}
		if c.ended || c.buffered < c.limits.MaxBuffered/2 {
			c.mu.Unlock()
			return nil
		}
		if c.room == nil {
			c.room = make(chan struct{})
		}
		room := c.room
		c.mu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// queuedLocked counts n bytes of output queued, and reports whether the
// connection now holds too much. c.mu is held.
func (c *Conn) queuedLocked(n int) bool {
	if c.buffered == 0 {
		c.progressAt = time.Now()
		select {
		case c.kick <- struct{}{}:
		default:
		}
	}
	c.buffered += n
	return c.buffered > c.limits.MaxBuffered
}

// tookLocked counts n bytes of output taken by a receiver. c.mu is held.
func (c *Conn) tookLocked(n int) {
	if c.closing {
		return
	}
	c.buffered -= n
	c.progressAt = time.Now()
	if c.room != nil && c.buffered < c.limits.MaxBuffered/2 {
		close(c.room)
		c.room = nil
	}
}
