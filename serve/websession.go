package serve

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// A session of the web edges' peer: the turn it runs, whose updates,
// permission asks and end come through one queue in order, and its asks
// waiting for the web client's answer.

// psession is a session open on one of the peer's connections.
type psession struct {
	p    *peer
	conn *pconn
	id   string
	cwd  string

	events queue // the running turn's updates, asks and end, in order

	mu      sync.Mutex // protects the fields below
	asks    map[string]*ask
	turn    *turn
	replay  []sdk.SessionUpdate // a load's replay, while collecting
	loading bool
}

func newPSession(p *peer, c *pconn, id, cwd string) *psession {
	return &psession{p: p, conn: c, id: id, cwd: cwd, events: newQueue(), asks: map[string]*ask{}}
}

// item is one thing a turn brings, in order: an update, a permission ask,
// or the turn's end.
type item struct {
	update *sdk.SessionUpdate
	ask    *ask
	end    *turnEnd
}

// turnEnd is how a turn ended: the prompt's response, or its error.
type turnEnd struct {
	resp sdk.PromptResponse
	err  error
}

// asToolUpdate is a tool_call as the update that sets every field it has,
// so that the web translators fold both kinds one way.
func asToolUpdate(c *sdk.SessionUpdateToolCall) *sdk.SessionToolCallUpdate {
	u := &sdk.SessionToolCallUpdate{ToolCallId: c.ToolCallId, Title: &c.Title, Kind: &c.Kind, Content: c.Content,
		Locations: c.Locations, RawInput: c.RawInput, RawOutput: c.RawOutput}
	if c.Status != "" {
		u.Status = &c.Status
	}
	return u
}

// unfinished says why a tool call the turn left open has no result.
func (e turnEnd) unfinished() string {
	if e.err == nil && e.resp.StopReason != "" {
		return fmt.Sprintf("the turn ended (%s) before the tool call did", e.resp.StopReason)
	}
	return "the turn ended before the tool call did"
}

// turn is a prompt running.
type turn struct {
	done chan struct{} // closed once its end is queued
}

// deliver takes an update for the session: into a load's replay, or the
// running turn's events; one that belongs to neither (a turn another
// client ran) is left to the transcript.
func (s *psession) deliver(u sdk.SessionUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.loading:
		s.replay = append(s.replay, u)
	case s.turn != nil:
		s.events.push(item{update: &u})
	}
}

// collect starts gathering a load's replay.
func (s *psession) collect() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return fmt.Errorf("session/load %s: %w", s.id, errTurnRunning)
	}
	s.loading, s.replay = true, nil
	return nil
}

// collected ends the gathering and returns the replay.
func (s *psession) collected() []sdk.SessionUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replay
	s.loading, s.replay = false, nil
	return r
}

// running is the turn running, or nil.
func (s *psession) running() *turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

// prompt starts a turn; its updates, asks and end come through s.events.
func (s *psession) prompt(blocks []sdk.ContentBlock) (*turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil || s.loading {
		return nil, errTurnRunning
	}
	t := &turn{done: make(chan struct{})}
	s.turn = t
	s.p.tasks.Go(func() { s.runPrompt(t, blocks) })
	return t, nil
}

// runPrompt sends the prompt, taking the session over once if another
// client had it, and queues the turn's end.
func (s *psession) runPrompt(t *turn, blocks []sdk.ContentBlock) {
	req := sdk.PromptRequest{SessionId: sdk.SessionId(s.id), Prompt: blocks}
	resp, err := s.conn.cs.Prompt(s.p.ctx, req)
	if isNotAttached(err) {
		_, rerr := s.conn.cs.ResumeSession(s.p.ctx, sdk.ResumeSessionRequest{SessionId: req.SessionId, Cwd: s.cwd, McpServers: []sdk.McpServer{}})
		if rerr == nil {
			resp, err = s.conn.cs.Prompt(s.p.ctx, req)
		}
	}
	if err != nil {
		err = fmt.Errorf("session/prompt: %w", err)
	}
	s.mu.Lock()
	s.events.push(item{end: &turnEnd{resp: resp, err: err}})
	s.turn = nil
	s.mu.Unlock()
	close(t.done)
}

// isNotAttached tells the bridge's answer to a request about a session that
// another client took over (-32600, "not attached").
func isNotAttached(err error) bool {
	var re *sdk.RequestError
	return errors.As(err, &re) && re.Code == -32600 && strings.Contains(re.Message, "not attached")
}

// isNotFound tells the bridge's answer about a session it does not have.
func isNotFound(err error) bool {
	var re *sdk.RequestError
	return errors.As(err, &re) && re.Code == -32002
}

// isBusy tells the bridge's answer to a load or resume while a turn runs.
func isBusy(err error) bool {
	var re *sdk.RequestError
	return errors.Is(err, errTurnRunning) || errors.As(err, &re) && re.Code == -32600 && strings.Contains(re.Message, "busy")
}

// cancel answers the open asks cancelled and cancels the running turn
// (session/cancel).
func (s *psession) cancel() {
	s.mu.Lock()
	asks := s.asks
	s.asks = map[string]*ask{}
	s.mu.Unlock()
	for _, a := range asks {
		a.give(sdk.NewRequestPermissionOutcomeCancelled())
	}
	if err := s.conn.cs.Cancel(s.p.ctx, sdk.CancelNotification{SessionId: sdk.SessionId(s.id)}); err != nil {
		s.p.log.Debug("web edge: session/cancel", "session", s.id, "err", err)
	}
}

// ask is a permission request waiting for the web client.
type ask struct {
	id     string
	req    sdk.RequestPermissionRequest
	answer chan sdk.RequestPermissionOutcome // 1-buffered; sent to once
	over   chan struct{}                     // closed when answered, cancelled or timed out

	mu      sync.Mutex                    // protects outcome
	outcome *sdk.RequestPermissionOutcome // the web client's answer, once given
}

// newAsk is an open ask of id for req.
func newAsk(id string, req sdk.RequestPermissionRequest) *ask {
	return &ask{id: id, req: req, answer: make(chan sdk.RequestPermissionOutcome, 1), over: make(chan struct{})}
}

// give sends the ask its answer; the caller has taken it out of the
// session's open asks, so it is given once.
func (a *ask) give(out sdk.RequestPermissionOutcome) {
	a.mu.Lock()
	a.outcome = &out
	a.mu.Unlock()
	a.answer <- out
}

// open reports whether the ask still waits.
func (a *ask) open() bool {
	select {
	case <-a.over:
		return false
	default:
		return true
	}
}

// option is the ask's option with id, or nil.
func (a *ask) option(id string) *sdk.PermissionOption {
	for i := range a.req.Options {
		if string(a.req.Options[i].OptionId) == id {
			return &a.req.Options[i]
		}
	}
	return nil
}

// optionOf is the first of the ask's options of one of kinds, in that
// order, or nil.
func (a *ask) optionOf(kinds ...sdk.PermissionOptionKind) *sdk.PermissionOption {
	for _, k := range kinds {
		for i := range a.req.Options {
			if a.req.Options[i].Kind == k {
				return &a.req.Options[i]
			}
		}
	}
	return nil
}

// request queues a permission ask for the running turn and waits for its
// answer, its cancellation (ctx: the bridge withdrew it), the peer's end,
// or the ask timeout; all but an answer are the cancelled outcome.
func (s *psession) request(ctx context.Context, req sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
	a := newAsk("ask_"+randomID(), req)
	s.mu.Lock()
	if s.turn == nil {
		s.mu.Unlock()
		return sdk.NewRequestPermissionOutcomeCancelled()
	}
	s.asks[a.id] = a
	s.events.push(item{ask: a})
	s.mu.Unlock()
	defer close(a.over)
	timer := time.NewTimer(s.p.askTimeout)
	defer timer.Stop()
	select {
	case out := <-a.answer:
		return out
	case <-ctx.Done():
	case <-s.p.ctx.Done():
	case <-timer.C:
		s.p.log.Info("web edge: a permission ask went unanswered; cancelling it", "session", s.id, "timeout", s.p.askTimeout)
	}
	s.mu.Lock()
	delete(s.asks, a.id)
	s.mu.Unlock()
	return sdk.NewRequestPermissionOutcomeCancelled()
}

// askAnswer is a web client's answer to one ask: its id, and the outcome
// it gives the ask.
type askAnswer struct {
	id      string
	outcome func(*ask) (sdk.RequestPermissionOutcome, error)
}

// answerAsks answers the session's open asks; answers to asks that are
// gone are passed over, unless none is left: errNoAsk, saying which
// (what names them, for the client).
func (s *psession) answerAsks(what string, answers []askAnswer) error {
	var gone []string
	answered := 0
	for _, ans := range answers {
		a := s.openAsk(ans.id)
		if a == nil {
			gone = append(gone, ans.id)
			continue
		}
		out, err := ans.outcome(a)
		if err != nil {
			return err
		}
		if err := s.answerAsk(a.id, out); err != nil {
			gone = append(gone, a.id)
			continue
		}
		answered++
	}
	if answered == 0 {
		return fmt.Errorf("%w: the %s %s (the turn ended, the ask timed out, or it was answered already)",
			errNoAsk, what, strings.Join(gone, ", "))
	}
	return nil
}

// answerAsk answers the open ask with id.
func (s *psession) answerAsk(id string, out sdk.RequestPermissionOutcome) error {
	s.mu.Lock()
	a := s.asks[id]
	delete(s.asks, id)
	s.mu.Unlock()
	if a == nil {
		return fmt.Errorf("%w: %q", errNoAsk, id)
	}
	a.give(out)
	return nil
}

// openAsk returns the open ask with id, or nil.
func (s *psession) openAsk(id string) *ask {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asks[id]
}

// queue is an unbounded FIFO of items with one reader: the updates of a
// turn must never block the connection that delivers every session's.
type queue struct {
	mu    sync.Mutex
	items []item
	ready chan struct{} // 1-buffered: something was pushed
}

func newQueue() queue { return queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(it item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// Next waits for the next item; false when ctx is done first.
func (q *queue) next(ctx context.Context) (item, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items[0] = item{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return it, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return item{}, false
		}
	}
}
