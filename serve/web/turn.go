package web

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coder/acp-go-sdk"
)

// A turn's pump: it translates the turn's ACP events through a web
// protocol's translator into segments, each the body of one HTTP
// response, and the SSE encoding they are written in.

// Translator turns one turn's ACP events into a web protocol's events. It
// is not safe for concurrent use: the turn's pump owns it.
type Translator interface {
	// Open is what begins a segment; info is the segment's.
	Open(info any) []any
	// Update is what one session update adds.
	Update(u acp.SessionUpdate) []any
	// Child is what one update of the session's subagent id adds (its
	// announcement is an Update; see Subagents).
	Child(id string, u acp.SessionUpdate) []any
	// Ask is a permission ask, which ends the segment.
	Ask(a *Ask) []any
	// End is the turn's end, which ends the last segment.
	End(e TurnEnd) []any
}

// run is a turn's stream: the pump that translates it and the segments it
// writes.
type run struct {
	tr   Translator
	sess *Session // the session the turn runs in
	turn *turn
	next chan *Segment // 1-buffered: the segment that continues after an ask
	done chan struct{} // closed when the pump has returned

	// Under the chat's mu:
	seg     *Segment // being written, or the last one while waiting
	waiting bool     // seg ended on an ask; the next segment continues

	abandoned chan struct{} // closed once cancelled because its client went away
	abandon   sync.Once
}

// Running reports whether c has a turn running (or waiting on an ask).
func (c *Chat) Running() bool { return c.current() != nil }

// current is c's run, or nil.
func (c *Chat) current() *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run
}

// Start prompts c's session and pumps the turn into segments through tr;
// the first segment, begun with info, is returned. The caller holds c.op.
func (cs *Chats) Start(c *Chat, blocks []acp.ContentBlock, tr Translator, info any) (*Segment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run != nil {
		return nil, ErrTurnRunning
	}
	t, err := c.sess.prompt(blocks)
	if err != nil {
		return nil, err
	}
	seg := NewSegment(info)
	r := &run{tr: tr, sess: c.sess, turn: t, next: make(chan *Segment, 1), done: make(chan struct{}), seg: seg, abandoned: make(chan struct{})}
	c.run = r
	cs.pumps.Go(func() { cs.pump(c, r, seg) })
	return seg, nil
}

// Resume continues c's turn that waits on an ask, in a new segment begun
// with info; answer answers the asks (with c.mu held, so that the pump can
// neither end nor begin a segment meanwhile). The caller holds c.op.
func (cs *Chats) Resume(c *Chat, info any, answer func(*Session) error) (*Segment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.run
	if r == nil || !r.waiting {
		return nil, fmt.Errorf("%w: no turn of this chat waits for an answer", ErrNoAsk)
	}
	if err := answer(r.sess); err != nil {
		return nil, err
	}
	seg := NewSegment(info)
	r.seg, r.waiting = seg, false
	r.next <- seg
	return seg, nil
}

// settleTimeout bounds how long a new prompt waits for the turn before it
// to end once cancelled; busyGrace how long it waits for a streaming turn
// whose client may be going away (a stop in a web client is a closed
// request, which the server sees a moment later) to be cancelled.
const (
	settleTimeout = 10 * time.Second
	busyGrace     = 2 * time.Second
)

// Settle makes way for a new prompt: a turn of c that waits on an ask is
// cancelled (its asks answered cancelled), and one cancelled so or by its
// client's going away is waited for; a turn that still streams after
// busyGrace is ErrTurnRunning. The caller holds c.op.
func (cs *Chats) Settle(ctx context.Context, c *Chat) error {
	c.mu.Lock()
	r := c.run
	waiting := r != nil && r.waiting
	c.mu.Unlock()
	if r == nil {
		return nil
	}
	if waiting {
		r.sess.cancel()
	} else if err := waitEither(ctx, r.abandoned, r.done, busyGrace); err != nil {
		return ErrTurnRunning
	}
	if err := waitEither(ctx, r.done, nil, settleTimeout); err != nil {
		return fmt.Errorf("%w: it was cancelled and has not ended: %w", ErrTurnRunning, err)
	}
	return nil
}

// waitEither waits until a or b (if not nil) is closed, for at most d.
func waitEither(ctx context.Context, a, b <-chan struct{}, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-a:
		return nil
	case <-b:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
		return fmt.Errorf("still running after %v", d)
	}
}

// abandon cancels c's turn, whose client went away mid-stream.
func (cs *Chats) abandon(c *Chat, s *Session) {
	c.mu.Lock()
	if r := c.run; r != nil {
		r.abandon.Do(func() { close(r.abandoned) })
	}
	c.mu.Unlock()
	s.cancel()
}

// pump translates r's turn into segments until the turn ends: seg first,
// then those that continue it after each ask.
func (cs *Chats) pump(c *Chat, r *run, seg *Segment) {
	defer close(r.done)
	defer c.finish(r)
	seg.Add(r.tr.Open(seg.info)...)
	for {
		it, ok := r.sess.events.next(cs.p.ctx)
		if !ok {
			seg.Add(r.tr.End(TurnEnd{Err: ErrClosed})...)
			seg.Close()
			return
		}
		switch {
		case it.update != nil && it.child != "":
			seg.Add(r.tr.Child(it.child, *it.update)...)
		case it.update != nil:
			seg.Add(r.tr.Update(*it.update)...)
		case it.ask != nil && it.ask.open():
			c.setWaiting(r)
			seg.Add(r.tr.Ask(it.ask)...)
			seg.Close()
			if seg = cs.await(c, r); seg == nil {
				return
			}
			seg.Add(r.tr.Open(seg.info)...)
		case it.end != nil:
			events := r.tr.End(*it.end)
			c.finish(r) // before the client can see the end and send its next prompt
			seg.Add(events...)
			seg.Close()
			return
		}
	}
}

// setWaiting marks r as waiting for the segment that continues it. It is
// set before the ask is written, so that the answer can't come first.
func (c *Chat) setWaiting(r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.waiting = true
}

// await waits for the segment that continues r after an ask. If the turn
// ends first (its ask timed out, or was cancelled), the rest of it is left
// to the transcript and await returns nil.
func (cs *Chats) await(c *Chat, r *run) *Segment {
	select {
	case seg := <-r.next:
		return seg
	case <-r.turn.done:
	case <-cs.p.ctx.Done():
	}
	c.mu.Lock()
	if !r.waiting {
		c.mu.Unlock()
		return <-r.next // resume handed one over meanwhile
	}
	r.waiting = false
	c.mu.Unlock()
	for {
		it, ok := r.sess.events.next(cs.p.ctx)
		if !ok || it.end != nil {
			return nil
		}
	}
}

// finish clears c's run once its pump is done.
func (c *Chat) finish(r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run == r {
		c.run = nil
	}
}

// Segment is the events of one HTTP response of a turn, SSE-encoded, kept
// whole so that a reader may join late (GET /api/chat/{id}/stream).
type Segment struct {
	info any // what the request that opened it tells the translator

	mu     sync.Mutex // protects the fields below
	frames [][]byte
	closed bool
	wake   chan struct{} // closed and replaced at every add and close
}

func NewSegment(info any) *Segment { return &Segment{info: info, wake: make(chan struct{})} }

// Add encodes events and appends them.
func (s *Segment) Add(events ...any) {
	if len(events) == 0 {
		return
	}
	frames := make([][]byte, 0, len(events))
	for _, e := range events {
		frames = append(frames, SSEFrame(e))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frames = append(s.frames, frames...)
	close(s.wake)
	s.wake = make(chan struct{})
}

func (s *Segment) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	close(s.wake)
	s.wake = make(chan struct{})
}

// from returns the frames from the i-th on, whether the segment is closed,
// and a channel closed at the next change.
func (s *Segment) from(i int) ([][]byte, bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames[i:], s.closed, s.wake
}

// RawData is an event written as it is, not as JSON: data: TEXT.
type RawData string

// done reports whether the segment was written to its end.
func (s *Segment) done() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// SSEFrame is one event as an SSE frame: data: JSON, then a blank line.
func SSEFrame(e any) []byte {
	if r, ok := e.(RawData); ok {
		return []byte("data: " + string(r) + "\n\n")
	}
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "errorText": "encoding an event: " + err.Error()})
	}
	frame := make([]byte, 0, len(b)+8)
	frame = append(frame, "data: "...)
	frame = append(frame, b...)
	return append(frame, '\n', '\n')
}

// Serve serves a request of the chat with id that streams a segment of
// a turn: begin, with the chat's set-up serialized (chat.op), sets up
// what the request asks and returns the segment to stream, and the
// session whose turn it is (nil for none); a client that goes away before
// the segment's end cancels the turn. An error is answered as JSON, what
// naming the chat ("chat", "thread"); headers are the response's extra
// headers, name and value.
func (cs *Chats) Serve(w http.ResponseWriter, r *http.Request, what, id string,
	begin func(context.Context, *Chat) (*Segment, *Session, error), headers ...string) {
	c := cs.get(id)
	c.op.Lock()
	seg, sess, err := begin(r.Context(), c)
	cs.forget(c)
	c.op.Unlock()
	if err != nil {
		WriteError(w, StatusOf(err), fmt.Sprintf("%s %s: %v", what, id, err))
		return
	}
	sseHeaders(w, headers...)
	if !streamSegment(r.Context(), w, seg) && !seg.done() && sess != nil {
		cs.abandon(c, sess) // the client went away: the turn is cancelled, and recorded so
	}
}

// ServeStream streams the running turn of the chat with id's current
// segment from its start, then as it goes on; 204 when no turn runs.
func (cs *Chats) ServeStream(w http.ResponseWriter, r *http.Request, id string, headers ...string) {
	seg := cs.SegmentOf(id)
	if seg == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	sseHeaders(w, headers...)
	streamSegment(r.Context(), w, seg)
}

// streamSegment writes seg to w as it grows, flushing after every batch, until
// seg is closed (true) or ctx is done or the client has gone (false).
func streamSegment(ctx context.Context, w http.ResponseWriter, seg *Segment) bool {
	rc := http.NewResponseController(w)
	for i := 0; ; {
		frames, closed, wake := seg.from(i)
		for _, f := range frames {
			if _, err := w.Write(f); err != nil {
				return false
			}
		}
		i += len(frames)
		if len(frames) > 0 {
			if err := rc.Flush(); err != nil {
				return false
			}
		}
		if closed && len(frames) == 0 {
			return true
		}
		if len(frames) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
}

// sseHeaders sets the headers of an SSE response; extra are name, value
// pairs.
func sseHeaders(w http.ResponseWriter, extra ...string) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	w.WriteHeader(http.StatusOK)
}
