package agentkit

import (
	"context"
	"sync"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Asks are a session's permission asks waiting for the client: the agent
// asks, the client answers, the answer goes back to the agent. An ask is
// withdrawn (answered cancelled on the ACP side) when its context ends,
// that is when the turn is cancelled, when the agent takes it back
// (Withdraw) or when the agent exits (WithdrawAll).
type Asks struct {
	ev agent.Events

	mu      sync.Mutex
	pending map[string]context.CancelFunc
}

// NewAsks returns the asks of a session that reports through ev.
func NewAsks(ev agent.Events) *Asks {
	return &Asks{ev: ev, pending: map[string]context.CancelFunc{}}
}

// Answer is the client's answer to an ask.
type Answer struct {
	Outcome acp.RequestPermissionOutcome
	Err     error // the client could not be asked
	// Withdrawn is set when the agent took the ask back or exited while
	// the client thought: the agent wants no answer.
	Withdrawn bool
}

// Chosen is the option the client picked, or "" if the ask was
// cancelled or failed.
func (a Answer) Chosen() string {
	if a.Err != nil || a.Outcome.Selected == nil {
		return ""
	}
	return string(a.Outcome.Selected.OptionId)
}

// Ask puts the agent's ask key (unique among the session's pending asks)
// about call to the client, and waits for the answer. ctx is the turn's.
func (as *Asks) Ask(ctx context.Context, key string, call acp.ToolCallUpdate, options []acp.PermissionOption) Answer {
	return as.AskIn(ctx, "", key, call, options)
}

// AskIn is Ask for the child session child (a subagent; see
// agent.Events.Child), "" for the session's own: the client is asked as
// the child's.
func (as *Asks) AskIn(ctx context.Context, child, key string, call acp.ToolCallUpdate, options []acp.PermissionOption) Answer {
	ev := as.ev
	if child != "" {
		ev = ev.Child(child)
	}
	ctx, done := as.pend(ctx, key)
	out, err := ev.RequestPermission(ctx, call, options)
	return Answer{Outcome: out, Err: err, Withdrawn: done()}
}

// pend makes ask key pending under a context Withdraw ends, and returns
// it with what to call once the client has answered: it reports whether
// the ask was withdrawn meanwhile.
func (as *Asks) pend(ctx context.Context, key string) (context.Context, func() (withdrawn bool)) {
	ctx, cancel := context.WithCancel(ctx)
	as.mu.Lock()
	as.pending[key] = cancel
	as.mu.Unlock()
	return ctx, func() bool {
		defer cancel()
		as.mu.Lock()
		defer as.mu.Unlock()
		_, live := as.pending[key]
		delete(as.pending, key)
		return !live
	}
}

// Withdraw takes back one ask.
func (as *Asks) Withdraw(key string) {
	as.mu.Lock()
	cancel := as.pending[key]
	delete(as.pending, key)
	as.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// WithdrawAll takes back every pending ask.
func (as *Asks) WithdrawAll() {
	as.mu.Lock()
	pending := as.pending
	as.pending = map[string]context.CancelFunc{}
	as.mu.Unlock()
	for _, cancel := range pending {
		cancel()
	}
}

// Updates serialises a session's translator and the updates it makes, so
// that the client sees them in the order the agent sent them: hold it
// while translating, and Send what the translator made.
type Updates struct {
	sync.Mutex
	ev agent.Events
}

// NewUpdates returns the Updates of a session that reports through ev.
func NewUpdates(ev agent.Events) *Updates { return &Updates{ev: ev} }

// Send delivers updates in order; call it with the lock held.
func (u *Updates) Send(us []acp.SessionUpdate) { u.SendIn("", us) }

// SendIn is Send for the child session child (a subagent; see
// agent.Events.Child), "" for the session's own.
func (u *Updates) SendIn(child string, us []acp.SessionUpdate) {
	ev := u.ev
	if child != "" && len(us) > 0 {
		ev = ev.Child(child)
	}
	for _, up := range us {
		ev.Update(up)
	}
}
