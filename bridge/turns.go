package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// waiting is a prompt in the queue.
type waiting struct {
	at     Order
	ticket uint64
}

// before reports whether w runs before o: by arrival on the connection,
// then by when it reached the session.
func (w *waiting) before(o *waiting) bool {
	if w.at != o.at {
		return w.at < o.at
	}
	return w.ticket < o.ticket
}

// Order is where a client's message arrived on its connection, counted
// from 1; 0 means unknown. The edge handles messages concurrently, so a
// cancel can be handled before a prompt that arrived ahead of it has begun
// its turn, or after one that arrived behind it has: Order lets a cancel
// stop exactly the prompts that arrived before it.
type Order uint64

// liveTurn is one running prompt.
type liveTurn struct {
	at        Order
	ctx       context.Context
	cancel    context.CancelFunc
	cancelled atomic.Bool
	done      chan struct{} // closed when the turn has ended and been recorded
}

// Arrival is where a prompt arrived on its connection, and whom to tell
// once it holds its place in the session's queue.
type Arrival struct {
	At Order
	// Queued, if not nil, is called once: when the prompt holds its place
	// in the session's queue, or when it never will (it was refused, or
	// the session closed). An edge that hands prompts to the session
	// concurrently holds a later prompt of the session back until then, so
	// that the earlier one is in the queue first.
	Queued func()
	// AwaitEarlier, if not nil, is called as the prompt's turn begins,
	// before the agent sees the prompt, with no lock held: it returns once
	// the client has the responses of the session's prompts that arrived
	// before this one. An edge that writes a prompt's response after
	// Prompt returns (the ACP SDK does, from the prompt's own goroutine)
	// thus keeps the next turn, its updates and its response behind that
	// response: once the turn has ended, nothing but the goroutine
	// scheduler orders the one response against the next turn.
	AwaitEarlier func()
	// MessageID, if not "", is the id the prompt's user message is
	// recorded with (and replayed with): ACP v2 answers session/prompt
	// with it before the turn begins. "" has the bridge make one.
	MessageID string
}

// Prompt runs one turn for a prompt that arrived at a.At. A prompt that
// comes while a turn runs waits for it, and prompts run in the order they
// arrived, each with its own result. A cancelled turn returns
// StopReasonCancelled and no error; a prompt cancelled before its turn
// began returns so without running. ctx carries values only: the turn
// ends on Cancel, close or Shutdown, not when a request's ctx is done.
func (s *Session) Prompt(ctx context.Context, a Arrival, prompt []acp.ContentBlock) (agent.TurnResult, error) {
	queued := sync.OnceFunc(func() {
		if a.Queued != nil {
			a.Queued()
		}
	})
	defer queued()
	if err := s.checkPrompt(prompt); err != nil {
		return agent.TurnResult{}, err
	}
	t, n, err := s.beginTurn(a, queued)
	if err != nil {
		return agent.TurnResult{}, err
	}
	if t == nil {
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
	toAgent, note := s.handedOver(prompt)
	s.recordUser(prompt, a.MessageID)
	if note != "" {
		s.deliver(acp.UpdateAgentThoughtText(note))
	}
	res, err := s.run(t, n, agent.Turn{Prompt: toAgent, Config: s.takePending()})
	s.endTurn(t)
	if rerr := s.takeRecordError(); rerr != nil {
		return agent.TurnResult{}, fmt.Errorf("%w (the session goes on once its transcript can be written again): %v", ErrNotRecorded, rerr)
	}
	if t.cancelled.Load() {
		if err != nil {
			s.m.log.Debug("cancelled turn ended with", "session", s.id, "err", err)
		}
		res.StopReason = acp.StopReasonCancelled
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("%s: %w", s.agentName(), err)
	}
	if res.StopReason == "" {
		res.StopReason = acp.StopReasonEndTurn
	}
	return res, nil
}

// checkPrompt refuses content the agent cannot take rather than drop it.
func (s *Session) checkPrompt(prompt []acp.ContentBlock) error {
	s.mu.Lock()
	caps := s.backend.Info().Prompt
	s.mu.Unlock()
	for i, b := range prompt {
		var what string
		switch {
		case b.Image != nil && !caps.Image:
			what = "images"
		case b.Audio != nil && !caps.Audio:
			what = "audio"
		case b.Resource != nil && !caps.EmbeddedContext:
			what = "embedded resources"
		case b.Validate() != nil:
			return fmt.Errorf("%w: prompt block %d has no known content type", agent.ErrInvalidParams, i)
		}
		if what != "" {
			return fmt.Errorf("%w: agent %s does not accept %s (prompt block %d)", agent.ErrInvalidParams, s.agentName(), what, i)
		}
	}
	return nil
}

// beginTurn claims the session for a turn, waits for the client to have
// the responses of the prompts before it (a.AwaitEarlier), and reopens an
// abandoned native session. It returns no turn and no error for a prompt
// already cancelled.
func (s *Session) beginTurn(a Arrival, queued func()) (*liveTurn, agent.Native, error) {
	t, err := s.claimTurn(a.At, queued)
	if t == nil || err != nil {
		return nil, nil, err
	}
	if a.AwaitEarlier != nil {
		a.AwaitEarlier()
	}
	if t.cancelled.Load() {
		s.m.log.Debug("prompt cancelled before its turn began", "session", s.id)
		s.finish(t)
		return nil, nil, nil
	}
	s.mu.Lock()
	n, opts := s.native, s.reopening()
	s.mu.Unlock()
	if n != nil {
		return t, n, nil
	}
	opts.NativeID = s.nativeID()
	if err := s.open(opts); err != nil {
		s.finish(t)
		return nil, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return t, s.native, nil
}

// claimTurn makes the prompt that arrived at at the session's turn once
// the prompts before it in the queue have had theirs. It returns no turn
// and no error for a prompt cancelled while it waited.
func (s *Session) claimTurn(at Order, queued func()) (*liveTurn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: %s is closed", ErrSessionNotFound, s.id)
	}
	if s.readOnly != nil {
		return nil, s.readOnly
	}
	if err := s.waitTurn(at, queued); err != nil {
		if err == errCancelledWaiting {
			s.m.log.Debug("prompt cancelled before its turn began", "session", s.id)
			return nil, nil
		}
		return nil, err
	}
	t := &liveTurn{at: at, done: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(s.m.ctx)
	s.turn, s.prompted, s.lastActive = t, true, time.Now()
	return t, nil
}

// errCancelledWaiting: the prompt was cancelled before its turn began.
var errCancelledWaiting = errors.New("cancelled while queued")

// waitTurn, with s.mu held, queues the prompt that arrived at at (and
// calls queued), then waits until the session has no turn and the prompt
// is the first in the queue, or until it is cancelled
// (errCancelledWaiting) or the session can't take prompts.
func (s *Session) waitTurn(at Order, queued func()) error {
	s.tickets++
	me := &waiting{at: at, ticket: s.tickets}
	i := len(s.queue)
	for i > 0 && me.before(s.queue[i-1]) {
		i--
	}
	s.queue = slices.Insert(s.queue, i, me)
	queued()
	defer func() {
		s.queue = slices.DeleteFunc(s.queue, func(w *waiting) bool { return w == me })
		s.free.Broadcast() // the next in line may go on
	}()
	for {
		switch {
		case s.closed:
			return fmt.Errorf("%w: %s is closed", ErrSessionNotFound, s.id)
		case s.readOnly != nil:
			return s.readOnly
		case at != 0 && at < s.cancels, me.ticket <= s.cancelTicket, s.dropped[at]:
			delete(s.dropped, at)
			return errCancelledWaiting
		case s.turn == nil && s.queue[0] == me:
			return nil
		}
		if s.turn != nil && len(s.queue) > 0 {
			s.m.log.Debug("prompt queued behind the running turn", "session", s.id, "ahead", slices.Index(s.queue, me))
		}
		s.free.Wait()
	}
}

// run waits for the native turn; after a cancel it waits CancelGrace more,
// then closes the native session (the next prompt reopens it) and gives
// up on the turn.
func (s *Session) run(t *liveTurn, n agent.Native, in agent.Turn) (agent.TurnResult, error) {
	type result struct {
		tr  agent.TurnResult
		err error
	}
	ch := make(chan result, 1) // the goroutine never blocks, even if abandoned
	go func() {
		tr, err := n.Prompt(t.ctx, in)
		ch <- result{tr, err}
	}()
	select {
	case r := <-ch:
		return r.tr, r.err
	case <-t.ctx.Done():
	}
	timer := time.NewTimer(s.m.cfg.CancelGrace)
	defer timer.Stop()
	select {
	case r := <-ch:
		return r.tr, r.err
	case <-timer.C:
		s.m.log.Warn("agent did not stop within the grace period; closing it", "session", s.id, "grace", s.m.cfg.CancelGrace)
		s.abandon(n)
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
}

func (s *Session) abandon(n agent.Native) {
	s.mu.Lock()
	if s.native == n {
		s.native = nil
	}
	s.mu.Unlock()
	if err := n.Close(); err != nil {
		s.m.log.Warn("closing abandoned agent session", "session", s.id, "err", err)
	}
}

// endTurn fails tool calls the turn left open, records what is left of the
// turn, syncs the transcript and updates the header.
func (s *Session) endTurn(t *liveTurn) {
	s.sendMu.Lock()
	s.endChildren(t.cancelled.Load())
	for _, u := range s.acc.Unfinished() {
		s.deliverLocked(u)
	}
	s.record(s.acc.Flush())
	s.stopCheckpoint()
	s.turnDraftBytes = 0
	s.sendMu.Unlock()
	s.saveHeader()
	s.finish(t)
}

func (s *Session) finish(t *liveTurn) {
	s.mu.Lock()
	if s.turn == t {
		s.turn = nil
	}
	s.lastActive = time.Now()
	s.free.Broadcast()
	s.mu.Unlock()
	t.cancel()
	close(t.done)
}

// CancelPrompt cancels the one prompt that arrived at at: its turn if it
// runs, else it answers cancelled without running when its turn would
// begin. It returns at once.
func (s *Session) CancelPrompt(at Order) {
	if at == 0 {
		return
	}
	s.mu.Lock()
	t := s.turn
	running := t != nil && t.at == at
	if !running {
		s.dropped[at] = true
		s.free.Broadcast()
	}
	s.mu.Unlock()
	if running {
		t.cancelled.Store(true)
		t.cancel()
	}
}

// Cancel cancels the prompts that arrived before at: the running turn, and
// those queued or not yet begun, which answer cancelled without running.
// With at 0 it cancels the running turn and every prompt queued now,
// whenever they arrived. It returns at once.
func (s *Session) Cancel(at Order) {
	s.mu.Lock()
	t := s.turn
	if at > s.cancels {
		s.cancels = at
	}
	if at == 0 {
		s.cancelTicket = s.tickets
	}
	s.free.Broadcast()
	s.mu.Unlock()
	if t != nil && (at == 0 || t.at < at) {
		t.cancelled.Store(true)
		t.cancel()
	}
}
