package web

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/acp-go-sdk"
)

// A session of the web edges' peer: the turn it runs, whose updates,
// permission asks and end come through one queue in order, and its asks
// waiting for the web client's answer.

// Session is a session open on one of the peer's connections.
type Session struct {
	p    *peer
	conn *pconn
	ID   string
	cwd  string

	events queue // the running turn's updates, asks and end, in order

	mu      sync.Mutex // protects the fields below
	asks    map[string]*Ask
	turn    *turn
	replay  []Update // a load's replay, while collecting
	loading bool
}

func newPSession(p *peer, c *pconn, id, cwd string) *Session {
	return &Session{p: p, conn: c, ID: id, cwd: cwd, events: newQueue(), asks: map[string]*Ask{}}
}

// item is one thing a turn brings, in order: an update (of the session's
// or a subagent's, child its session id), a permission ask, or the turn's
// end.
type item struct {
	update *acp.SessionUpdate
	child  string
	ask    *Ask
	end    *TurnEnd
}

// TurnEnd is how a turn ended: the prompt's response, or its error.
type TurnEnd struct {
	Resp acp.PromptResponse
	Err  error
}

// AsToolUpdate is a tool_call as the update that sets every field it has,
// so that the web translators fold both kinds one way.
func AsToolUpdate(c *acp.SessionUpdateToolCall) *acp.SessionToolCallUpdate {
	u := &acp.SessionToolCallUpdate{ToolCallId: c.ToolCallId, Title: &c.Title, Kind: &c.Kind, Content: c.Content,
		Locations: c.Locations, RawInput: c.RawInput, RawOutput: c.RawOutput}
	if c.Status != "" {
		u.Status = &c.Status
	}
	return u
}

// Unfinished says why a tool call the turn left open has no result.
func (e TurnEnd) Unfinished() string {
	if e.Err == nil && e.Resp.StopReason != "" {
		return fmt.Sprintf("the turn ended (%s) before the tool call did", e.Resp.StopReason)
	}
	return "the turn ended before the tool call did"
}

// turn is a prompt running.
type turn struct {
	done chan struct{} // closed once its end is queued
}

// deliver takes an update for the session, or for its subagent child
// ("" for the session's own): into a load's replay, or the running turn's
// events; one that belongs to neither (a turn another client ran) is left
// to the transcript.
func (s *Session) deliver(child string, u acp.SessionUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.loading:
		s.replay = append(s.replay, Update{Child: child, SessionUpdate: u})
	case s.turn != nil:
		s.events.push(item{update: &u, child: child})
	}
}

// collect starts gathering a load's replay.
func (s *Session) collect() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return fmt.Errorf("session/load %s: %w", s.ID, ErrTurnRunning)
	}
	s.loading, s.replay = true, nil
	return nil
}

// collected ends the gathering and returns the replay.
func (s *Session) collected() []Update {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replay
	s.loading, s.replay = false, nil
	return r
}

// running is the turn running, or nil.
func (s *Session) running() *turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

// prompt starts a turn; its updates, asks and end come through s.events.
func (s *Session) prompt(blocks []acp.ContentBlock) (*turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil || s.loading {
		return nil, ErrTurnRunning
	}
	t := &turn{done: make(chan struct{})}
	s.turn = t
	s.p.tasks.Go(func() { s.runPrompt(t, blocks) })
	return t, nil
}

// runPrompt sends the prompt, taking the session over once if another
// client had it, and queues the turn's end.
func (s *Session) runPrompt(t *turn, blocks []acp.ContentBlock) {
	req := acp.PromptRequest{SessionId: acp.SessionId(s.ID), Prompt: blocks}
	resp, err := s.conn.cs.Prompt(s.p.ctx, req)
	if isNotAttached(err) {
		_, rerr := s.conn.cs.ResumeSession(s.p.ctx, acp.ResumeSessionRequest{SessionId: req.SessionId, Cwd: s.cwd, McpServers: []acp.McpServer{}})
		if rerr == nil {
			resp, err = s.conn.cs.Prompt(s.p.ctx, req)
		}
	}
	if err != nil {
		err = fmt.Errorf("session/prompt: %w", err)
	}
	s.mu.Lock()
	s.events.push(item{end: &TurnEnd{Resp: resp, Err: err}})
	s.turn = nil
	s.mu.Unlock()
	close(t.done)
}

// isNotAttached tells the bridge's answer to a request about a session that
// another client took over (-32600, "not attached").
func isNotAttached(err error) bool {
	var re *acp.RequestError
	return errors.As(err, &re) && re.Code == -32600 && strings.Contains(re.Message, "not attached")
}

// isNotFound tells the bridge's answer about a session it does not have.
func isNotFound(err error) bool {
	var re *acp.RequestError
	return errors.As(err, &re) && re.Code == -32002
}

// isBusy tells the bridge's answer to a load or resume while a turn runs.
func isBusy(err error) bool {
	var re *acp.RequestError
	return errors.Is(err, ErrTurnRunning) || errors.As(err, &re) && re.Code == -32600 && strings.Contains(re.Message, "busy")
}

// cancel answers the open asks cancelled and cancels the running turn
// (session/cancel).
func (s *Session) cancel() {
	s.mu.Lock()
	asks := s.asks
	s.asks = map[string]*Ask{}
	s.mu.Unlock()
	for _, a := range asks {
		a.Give(acp.NewRequestPermissionOutcomeCancelled())
	}
	if err := s.conn.cs.Cancel(s.p.ctx, acp.CancelNotification{SessionId: acp.SessionId(s.ID)}); err != nil {
		s.p.log.Debug("web edge: session/cancel", "session", s.ID, "err", err)
	}
}

// Ask is a permission request waiting for the web client.
type Ask struct {
	ID     string
	Req    acp.RequestPermissionRequest
	Child  string                            // the subagent's session id whose ask it is, "" for the session's own
	answer chan acp.RequestPermissionOutcome // 1-buffered; sent to once
	over   chan struct{}                     // closed when answered, cancelled or timed out

	mu      sync.Mutex                    // protects outcome
	outcome *acp.RequestPermissionOutcome // the web client's answer, once given
}

// NewAsk is an open ask of id for req.
func NewAsk(id string, req acp.RequestPermissionRequest) *Ask {
	return &Ask{ID: id, Req: req, answer: make(chan acp.RequestPermissionOutcome, 1), over: make(chan struct{})}
}

// Give sends the ask its answer; the caller has taken it out of the
// session's open asks, so it is given once.
func (a *Ask) Give(out acp.RequestPermissionOutcome) {
	a.mu.Lock()
	a.outcome = &out
	a.mu.Unlock()
	a.answer <- out
}

// open reports whether the ask still waits.
func (a *Ask) open() bool {
	select {
	case <-a.over:
		return false
	default:
		return true
	}
}

// option is the ask's option with id, or nil.
func (a *Ask) option(id string) *acp.PermissionOption {
	for i := range a.Req.Options {
		if string(a.Req.Options[i].OptionId) == id {
			return &a.Req.Options[i]
		}
	}
	return nil
}

// optionOf is the first of the ask's options of one of kinds, in that
// order, or nil.
func (a *Ask) optionOf(kinds ...acp.PermissionOptionKind) *acp.PermissionOption {
	for _, k := range kinds {
		for i := range a.Req.Options {
			if a.Req.Options[i].Kind == k {
				return &a.Req.Options[i]
			}
		}
	}
	return nil
}

// request queues a permission ask of the session's, or of its subagent
// child's ("" for the session's own), for the running turn and waits for
// its answer, its cancellation (ctx: the bridge withdrew it), the peer's
// end, or the ask timeout; all but an answer are the cancelled outcome.
func (s *Session) request(ctx context.Context, child string, req acp.RequestPermissionRequest) acp.RequestPermissionOutcome {
	a := NewAsk("ask_"+RandomID(), req)
	a.Child = child
	s.mu.Lock()
	if s.turn == nil {
		s.mu.Unlock()
		return acp.NewRequestPermissionOutcomeCancelled()
	}
	s.asks[a.ID] = a
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
		s.p.log.Info("web edge: a permission ask went unanswered; cancelling it", "session", s.ID, "timeout", s.p.askTimeout)
	}
	s.mu.Lock()
	delete(s.asks, a.ID)
	s.mu.Unlock()
	return acp.NewRequestPermissionOutcomeCancelled()
}

// AskAnswer is a web client's answer to one ask: its id, and the outcome
// it gives the ask.
type AskAnswer struct {
	ID      string
	Outcome func(*Ask) (acp.RequestPermissionOutcome, error)
}

// AnswerAsks answers the session's open asks; answers to asks that are
// gone are passed over, unless none is left: ErrNoAsk, saying which
// (what names them, for the client).
func (s *Session) AnswerAsks(what string, answers []AskAnswer) error {
	var gone []string
	answered := 0
	for _, ans := range answers {
		a := s.openAsk(ans.ID)
		if a == nil {
			gone = append(gone, ans.ID)
			continue
		}
		out, err := ans.Outcome(a)
		if err != nil {
			return err
		}
		if err := s.answerAsk(a.ID, out); err != nil {
			gone = append(gone, a.ID)
			continue
		}
		answered++
	}
	if answered == 0 {
		return fmt.Errorf("%w: the %s %s (the turn ended, the ask timed out, or it was answered already)",
			ErrNoAsk, what, strings.Join(gone, ", "))
	}
	return nil
}

// answerAsk answers the open ask with id.
func (s *Session) answerAsk(id string, out acp.RequestPermissionOutcome) error {
	s.mu.Lock()
	a := s.asks[id]
	delete(s.asks, id)
	s.mu.Unlock()
	if a == nil {
		return fmt.Errorf("%w: %q", ErrNoAsk, id)
	}
	a.Give(out)
	return nil
}

// openAsk returns the open ask with id, or nil.
func (s *Session) openAsk(id string) *Ask {
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
