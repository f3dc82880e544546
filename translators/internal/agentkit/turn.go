package agentkit

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// InterruptTimeout bounds how long an agent may take to acknowledge an
// interrupt; the turn then waits for its end as usual (the bridge gives
// up on it after its own grace period and closes the session).
const InterruptTimeout = 5 * time.Second

// Turns is a session's running turn, if any: the bridge runs one at a
// time, and the agent's reader reports its end here. E is how the agent
// says a turn ended. It is safe for concurrent use.
type Turns[E any] struct {
	life context.Context // the session's; asks outside a turn use it

	mu  sync.Mutex
	cur *Ongoing[E]
}

// Ongoing is one running prompt of a Turns.
type Ongoing[E any] struct {
	ctx   context.Context // the client's, or Stop's
	stop  context.CancelCauseFunc
	life  context.Context
	end   chan E // buffered: the first end reported wins
	turns *Turns[E]
}

// errStopped marks a turn's context ended by Stop rather than the client.
type errStopped struct{ err error }

func (e errStopped) Error() string { return e.err.Error() }
func (e errStopped) Unwrap() error { return e.err }

// NewTurns returns the Turns of a session that lives as long as life.
func NewTurns[E any](life context.Context) *Turns[E] {
	return &Turns[E]{life: life}
}

// Begin makes a turn with ctx (cancelled when the client cancels) the
// running one. Call Done when it has ended.
func (ts *Turns[E]) Begin(ctx context.Context) *Ongoing[E] {
	t := &Ongoing[E]{life: ts.life, end: make(chan E, 1), turns: ts}
	t.ctx, t.stop = context.WithCancelCause(ctx)
	ts.mu.Lock()
	ts.cur = t
	ts.mu.Unlock()
	return t
}

// Done clears the running turn.
func (t *Ongoing[E]) Done() {
	t.turns.mu.Lock()
	defer t.turns.mu.Unlock()
	if t.turns.cur == t {
		t.turns.cur = nil
	}
	t.stop(nil)
}

// Stop gives up on the running turn, if any, for err: the agent is
// interrupted as if the client had cancelled, and the turn fails with err
// (Run returns it). The reader calls it when the agent will not end the
// turn by itself (a provider it retries without end, say).
func (ts *Turns[E]) Stop(err error) {
	if t := ts.Running(); t != nil {
		t.stop(errStopped{err})
	}
}

// stopped is the error Stop gave up on the turn for, or nil.
func (t *Ongoing[E]) stopped() error {
	var s errStopped
	if errors.As(context.Cause(t.ctx), &s) {
		return s.err
	}
	return nil
}

// Context is the turn's context.
func (t *Ongoing[E]) Context() context.Context { return t.ctx }

// Running returns the running turn, or nil.
func (ts *Turns[E]) Running() *Ongoing[E] {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.cur
}

// Context is the running turn's context, or the session's between turns:
// what a permission ask should be withdrawn with.
func (ts *Turns[E]) Context() context.Context {
	if t := ts.Running(); t != nil {
		return t.ctx
	}
	return ts.life
}

// End reports how the running turn ended; it reports whether there was
// one to tell. Later ends of the same turn are dropped.
func (ts *Turns[E]) End(e E) bool {
	t := ts.Running()
	if t == nil {
		return false
	}
	t.Finish(e)
	return true
}

// Finish reports how this turn ended, if nothing has yet.
func (t *Ongoing[E]) Finish(e E) {
	select {
	case t.end <- e:
	default:
	}
}

// Wait waits for the turn's end. If the client cancels first, it calls
// interrupt (with InterruptTimeout) and waits on for the end the
// interrupted agent reports; if the session ends meanwhile, it returns
// gone.
func (t *Ongoing[E]) Wait(interrupt func(context.Context) error, gone E) (E, error) {
	select {
	case e := <-t.end:
		return e, nil
	case <-t.ctx.Done():
	}
	ictx, cancel := context.WithTimeout(t.life, InterruptTimeout)
	err := interrupt(ictx)
	cancel()
	select {
	case e := <-t.end:
		return e, err
	case <-t.life.Done():
		return gone, err
	}
}

// TurnSpec is how an agent runs a turn, for Run. C is what the turn is
// sent on (a process, a server connection).
type TurnSpec[E, C any] struct {
	// Ready waits until the agent can take the turn: started, resumed.
	Ready func(ctx context.Context) (C, error)
	// Send hands the agent the prompt.
	Send func(ctx context.Context, c C) error
	// Interrupt asks the agent to stop the turn.
	Interrupt func(ctx context.Context, c C) error
	// Gone is the end of a turn whose session closed while it waited.
	Gone E
	// Outcome makes the turn's result of how it ended; ctx tells whether
	// the client cancelled it.
	Outcome func(ctx context.Context, end E) (agent.TurnResult, error)
}

// Run runs one turn: it waits for the agent, begins the turn, sends the
// prompt and waits for the end the agent reports through ts.End,
// interrupting the agent if ctx is cancelled (a failed interrupt is
// logged to log, if not nil). A turn cancelled before it was sent ends
// cancelled.
func Run[E, C any](ctx context.Context, ts *Turns[E], log *slog.Logger, spec TurnSpec[E, C]) (agent.TurnResult, error) {
	c, err := spec.Ready(ctx)
	if ctx.Err() != nil {
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
	if err != nil {
		return agent.TurnResult{}, err
	}
	t := ts.Begin(ctx)
	defer t.Done()
	if err := spec.Send(ctx, c); err != nil {
		return agent.TurnResult{}, err
	}
	end, err := t.Wait(func(ctx context.Context) error { return spec.Interrupt(ctx, c) }, spec.Gone)
	if err != nil && log != nil {
		log.Warn("interrupting the agent", "err", err)
	}
	if err := t.stopped(); err != nil && ctx.Err() == nil {
		return agent.TurnResult{}, err
	}
	return spec.Outcome(ctx, end)
}
