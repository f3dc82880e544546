package core

import (
	"context"
	"errors"
	"io"
	"sort"
)

// ErrReplayGap: AcquireAfter was asked for messages the Mailbox no longer
// keeps.
var ErrReplayGap = errors.New("the messages asked for are no longer kept")

// A Mailbox queues a connection's outbound messages for one receiver at a
// time, a Lease: an SSE response, a WebSocket's writer. Its queued bytes
// count toward the connection's Limits.MaxBuffered (beyond it the
// connection is closed, ErrOverflow), and a receiver taking one is the
// progress that Limits.MaxStall waits for. Push never blocks.
//
// A Mailbox can keep the messages it has delivered, up to Retain bytes,
// so that a receiver that comes back (SSE's Last-Event-ID) gets those it
// may have missed: see AcquireAfter.
//
// A Mailbox belongs to its Conn: Conn.NewMailbox makes it, and closing the
// connection aborts it (its receiver's Next fails with the cause).
type Mailbox struct {
	c    *Conn
	wake chan struct{} // 1-buffered: something changed for the receiver

	// The fields below are guarded by c.mu.
	queue     []Msg // waiting from head on
	head      int
	seq       uint64 // the last Seq pushed
	delivered uint64 // the last Seq a receiver took
	lease     *Lease
	finished  bool
	err       error // set when aborted
	retain    int
	kept      []Msg // delivered, oldest first, at most retain bytes
	keptBytes int
}

// A Lease is a Mailbox's receiver, until Release.
type Lease struct {
	m     *Mailbox
	after uint64 // the last Seq this receiver was given; guarded by m.c.mu
}

// NewMailbox makes a Mailbox of c's. On a connection already over, it is
// made aborted or finished.
func (c *Conn) NewMailbox() *Mailbox {
	m := &Mailbox{c: c, wake: make(chan struct{}, 1)}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closing:
		m.err = c.err
	case c.ended:
		m.finished = true
	}
	c.boxes = append(c.boxes, m)
	return m
}

// Retain makes m keep up to n bytes of the messages it has delivered (0,
// the default, keeps none).
func (m *Mailbox) Retain(n int) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	m.retain = n
	m.trim()
}

// Push queues msg, numbering it (Msg.Seq). On a finished or aborted
// Mailbox it drops msg. If the connection's output then exceeds
// Limits.MaxBuffered, the connection is closed (ErrOverflow).
func (m *Mailbox) Push(msg Msg) {
	c := m.c
	c.mu.Lock()
	if m.finished || m.err != nil {
		c.mu.Unlock()
		return
	}
	m.seq++
	msg.Seq = m.seq
	m.queue = append(m.queue, msg)
	over := c.queuedLocked(len(msg.Raw))
	c.mu.Unlock()
	m.signal()
	if over {
		c.Close(overflow(c.limits.MaxBuffered))
	}
}

// Finish says no more messages will come: the receiver gets those queued,
// then io.EOF.
func (m *Mailbox) Finish() {
	m.c.mu.Lock()
	m.finished = true
	m.c.mu.Unlock()
	m.signal()
}

// Discard takes m from its connection: what it holds is dropped (and no
// longer counts toward Limits.MaxBuffered), its receiver fails with
// ErrReleased, and Push drops what comes after. Discard a Mailbox that
// is no longer wanted, or its connection keeps it to its end.
func (m *Mailbox) Discard() {
	c := m.c
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, msg := range m.queue[m.head:] {
		n += len(msg.Raw)
	}
	if n > 0 {
		c.tookLocked(n)
	}
	m.abortLocked(ErrReleased)
	for i, b := range c.boxes {
		if b == m {
			c.boxes = append(c.boxes[:i], c.boxes[i+1:]...)
			break
		}
	}
}

// Queued is how many messages wait for a receiver.
func (m *Mailbox) Queued() int {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return len(m.queue) - m.head
}

// HasReceiver reports whether a Lease holds m.
func (m *Mailbox) HasReceiver() bool {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return m.lease != nil
}

// Acquire makes a receiver of m, which gets the messages not yet
// delivered. It returns nil if m has one already, or is aborted.
func (m *Mailbox) Acquire() *Lease {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return m.acquireLocked(m.delivered)
}

// AcquireAfter is Acquire for a receiver that has had the messages up to
// Seq after: it gets the kept ones after that first. It fails with
// ErrReplayGap if some of those are no longer kept.
func (m *Mailbox) AcquireAfter(after uint64) (*Lease, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	if after < m.delivered && (len(m.kept) == 0 || m.kept[0].Seq > after+1) {
		return nil, ErrReplayGap
	}
	return m.acquireLocked(min(after, m.delivered)), nil
}

func (m *Mailbox) acquireLocked(after uint64) *Lease {
	if m.lease != nil || m.err != nil {
		return nil
	}
	m.lease = &Lease{m: m, after: after}
	return m.lease
}

// signal wakes the receiver, if it waits.
func (m *Mailbox) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// abortLocked drops what m holds; its receiver's Next fails with err.
// c.mu is held.
func (m *Mailbox) abortLocked(err error) {
	if m.err != nil {
		return
	}
	m.err = err
	m.queue, m.head, m.kept, m.keptBytes = nil, 0, nil, 0
	m.signal()
}

// keepQueue is the most messages' room an emptied queue keeps.
const keepQueue = 16

// dequeueLocked takes the oldest queued message. c.mu is held.
func (m *Mailbox) dequeueLocked() Msg {
	msg := m.queue[m.head]
	m.queue[m.head] = Msg{}
	m.head++
	switch {
	case m.head == len(m.queue) && cap(m.queue) > keepQueue:
		m.queue, m.head = nil, 0 // a burst's array goes; an idle connection holds little
	case m.head == len(m.queue):
		m.queue, m.head = m.queue[:0], 0
	case m.head >= 1024 && 2*m.head >= len(m.queue):
		m.queue = append([]Msg(nil), m.queue[m.head:]...)
		m.head = 0
	}
	m.delivered = msg.Seq
	m.c.tookLocked(len(msg.Raw))
	if m.retain > 0 {
		m.kept = append(m.kept, msg)
		m.keptBytes += len(msg.Raw)
		m.trim()
	}
	return msg
}

// trim drops the oldest kept messages beyond retain bytes. c.mu is held.
func (m *Mailbox) trim() {
	i := 0
	for m.keptBytes > m.retain && i < len(m.kept) {
		m.keptBytes -= len(m.kept[i].Raw)
		i++
	}
	if i > 0 {
		m.kept = append([]Msg(nil), m.kept[i:]...)
	}
}

// TryNext takes the next message without waiting: ok is false when there
// is none yet (wait on Wake). err is io.EOF once m is finished and drained,
// ErrReleased after Release, and the connection's cause once it is closed.
func (l *Lease) TryNext() (msg Msg, ok bool, err error) {
	m := l.m
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	switch {
	case m.lease != l:
		return Msg{}, false, ErrReleased
	case m.err != nil:
		return Msg{}, false, m.err
	}
	if i := sort.Search(len(m.kept), func(i int) bool { return m.kept[i].Seq > l.after }); i < len(m.kept) {
		l.after = m.kept[i].Seq
		return m.kept[i], true, nil
	}
	if m.head < len(m.queue) {
		msg = m.dequeueLocked()
		l.after = msg.Seq
		return msg, true, nil
	}
	if m.finished {
		return Msg{}, false, io.EOF
	}
	return Msg{}, false, nil
}

// Wake is ready when TryNext may have something new.
func (l *Lease) Wake() <-chan struct{} { return l.m.wake }

// Next waits for the next message (see TryNext), or until ctx is done.
func (l *Lease) Next(ctx context.Context) (Msg, error) {
	for {
		msg, ok, err := l.TryNext()
		if ok || err != nil {
			return msg, err
		}
		select {
		case <-l.Wake():
		case <-ctx.Done():
			return Msg{}, ctx.Err()
		}
	}
}

// Release ends the receiver; the Mailbox can be acquired again.
func (l *Lease) Release() {
	m := l.m
	m.c.mu.Lock()
	if m.lease == l {
		m.lease = nil
	}
	m.c.mu.Unlock()
	m.signal()
}
