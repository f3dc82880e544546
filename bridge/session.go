package bridge

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// Session is one ACP session: a native agent session, its running turn and
// its transcript.
type Session struct {
	m  *Manager
	id string

	life context.Context // the session's lifetime, handed to its agent.Native; ends at close
	end  context.CancelFunc
	bg   sync.WaitGroup // what runs for the session in the background (a subagent's cancel); close waits

	mu       sync.Mutex // protects the fields below
	backend  agent.Backend
	native   agent.Native // nil after a turn that would not stop was abandoned
	opts     agent.OpenOptions
	header   persist.Header
	turn     *liveTurn
	prompted bool              // the conversation has started; the agent can no longer change
	pending  map[string]string // NextTurn config values the agent has not taken yet
	closed   bool
	cancels  Order          // prompts that arrived before this are cancelled
	dropped  map[Order]bool // prompts cancelled one by one before their turn
	// queue holds the prompts waiting for the running turn to end, in the
	// order they run; free is signalled whenever one of them may go on
	// (the turn ended, a cancel, close). Tickets up to cancelTicket were
	// cancelled by a Cancel(0).
	queue        []*waiting
	free         *sync.Cond
	tickets      uint64
	cancelTicket uint64
	// lastActive is when the session last did something (see touch); an
	// agent idle for long is stopped, and idleConfig keeps its options to
	// show until the next prompt starts it again.
	lastActive time.Time
	idleConfig []agent.ConfigOption
	carry      *carried // set when the session was handed to another agent
	// children are the session's child sessions (subagents) by their
	// native ids; unannounced, the native ids of those the agent reported
	// without announcing them (said once).
	children    map[string]*child
	unannounced map[string]bool
	// edits is the edits option's value; router is set while edits go
	// through the editor (see setEdits). Every update reads it.
	edits  string
	router atomic.Pointer[router]
	// conn is the connection the session is attached to, nil for none
	// (see Conn); every update reads it.
	conn atomic.Pointer[Conn]

	sendMu         sync.Mutex // serialises updates: accumulator, transcript and client see one order
	acc            *Accumulator
	rec            recorder    // nil until the session is recorded
	keep           bool        // whether rec keeps entries, not just headers
	drafts         int64       // checkpoints written
	ckpt           *time.Timer // the pending checkpoint, if any
	turnDraftBytes int         // written by this turn's checkpoints
	recErr         error       // the turn's first failed write to the transcript
	readOnly       error       // set for a session replayed from a state directory it can't write
}

// newSession makes a session attached to connection c.
func newSession(m *Manager, c *Conn, b agent.Backend, h persist.Header, nextSeq int64) *Session {
	s := &Session{m: m, id: h.ID, backend: b, header: h, pending: map[string]string{}, dropped: map[Order]bool{}, acc: NewAccumulator(nextSeq, newID),
		children: map[string]*child{}, unannounced: map[string]bool{}}
	s.conn.Store(c)
	s.free = sync.NewCond(&s.mu)
	s.setEdits(h.Config[ConfigEdits])
	s.life, s.end = context.WithCancel(m.ctx)
	return s
}

// discard ends a session that could not be made: its native session and
// its lifetime.
func (s *Session) discard() {
	if err := s.native.Close(); err != nil {
		s.m.log.Warn("closing the agent of a session that could not be made", "session", s.id, "err", err)
	}
	s.end()
}

// ID is the bridge's id for the session.
func (s *Session) ID() string { return s.id }

// open opens the native session and takes its config into the header.
// For a new native session it also decides where history comes from:
// with --persist auto, the agent's own when it can return it.
func (s *Session) open(opts agent.OpenOptions) error {
	if err := takes(s.backend.Info(), opts); err != nil {
		return err
	}
	opts.Editor, opts.History = editor{s}, s.history
	if _, ok := opts.Config[ConfigEdits]; ok { // the bridge's, not the agent's
		opts.Config = maps.Clone(opts.Config)
		delete(opts.Config, ConfigEdits)
	}
	n, err := s.backend.Open(s.life, opts, events{s: s})
	if err != nil {
		return fmt.Errorf("starting %s: %w", s.backend.Info().Name, err)
	}
	cfg := values(n.Config())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.native, s.opts, s.idleConfig, s.lastActive = n, opts, nil, time.Now()
	s.header.NativeID = n.NativeID()
	s.header.Directories, s.header.SystemPrompt = opts.Directories, recordPrompt(opts.SystemPrompt)
	s.header.Config, s.header.Mode, s.header.Model = s.withEdits(cfg), "", ""
	if opts.NativeID == "" {
		s.header.NativeHistory = capsOf(n).History != nil && s.m.cfg.Persist == PersistAuto
	}
	return nil
}

func (s *Session) agentName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backend.Info().Name
}

func (s *Session) nativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header.NativeID
}

// close cancels the turn, waits for it to be recorded, and releases the
// native session and the transcript.
func (s *Session) close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	t, n := s.turn, s.native
	s.free.Broadcast()
	s.mu.Unlock()
	if t != nil {
		t.cancelled.Store(true)
		t.cancel()
		<-t.done
	}
	var err error
	if n != nil {
		err = n.Close()
	}
	s.end()
	s.bg.Wait()
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.stopCheckpoint()
	if s.rec != nil {
		if cerr := s.rec.Close(); cerr != nil {
			err = cerr
		}
	}
	return err
}

// reattach serves session/load or session/resume of a session that is
// already open in this process.
func (s *Session) reattach(ctx context.Context, c *Conn, st Setup, replay bool) error {
	s.mu.Lock()
	busy, native := s.turn != nil, s.header.NativeHistory
	s.mu.Unlock()
	if busy && s.conn.Load() != c && !native {
		return s.takeOver(c, replay)
	}
	if busy {
		return fmt.Errorf("%w: session %s has a prompt running", ErrBusy, s.id)
	}
	if err := s.resetup(st); err != nil {
		return err
	}
	s.attachTo(c)
	if !replay {
		return nil
	}
	entries, err := s.entries()
	if err != nil {
		return err
	}
	return s.replay(ctx, entries)
}

// titleOf makes a session title from the first line of a prompt's text.
func titleOf(prompt []acp.ContentBlock) string {
	const max = 80
	for _, b := range prompt {
		if b.Text == nil {
			continue
		}
		line, _, _ := strings.Cut(strings.TrimSpace(b.Text.Text), "\n")
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		if utf8.RuneCountInString(line) > max {
			line = string([]rune(line)[:max-1]) + "…"
		}
		return line
	}
	return ""
}

// attachTo attaches the session to connection c. Where messages arrived
// (Order) is counted per connection, so the cancels another connection
// sent no longer apply.
func (s *Session) attachTo(c *Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn.Swap(c) != c {
		s.cancels = 0
		clear(s.dropped)
	}
}

// caps is what the client the session is attached to offers.
func (s *Session) caps() acp.ClientCapabilities { return s.conn.Load().Capabilities() }

// events is the Events a session hands its Native, or, with child set,
// the Events of the child session the agent calls that.
type events struct {
	s     *Session
	child string
}

func (e events) Update(u acp.SessionUpdate) {
	if r := e.s.router.Load(); r != nil {
		r.observe(u)
	}
	if e.child != "" {
		e.s.deliverChild(e.child, u)
		return
	}
	e.s.deliver(u)
}

func (e events) Child(id string) agent.Events { return events{e.s, id} }

func (e events) UpdateRaw(u json.RawMessage) { e.s.deliverRaw(u) }

// AskQuestion asks as a form where the client takes forms
// (clientCapabilities.elicitation.form), else as a permission ask.
func (e events) AskQuestion(ctx context.Context, call acp.ToolCallUpdate, q agent.Question) (agent.QuestionAnswer, error) {
	c := e.s.conn.Load()
	p, caps := c.peer(), c.Capabilities()
	if p == nil || caps.Elicitation == nil || caps.Elicitation.Form == nil {
		return agent.AskAsPermission(ctx, e.RequestPermission, call, q)
	}
	ctx, done := c.asks(ctx)
	defer done()
	if ctx.Err() != nil {
		return agent.QuestionAnswer{Cancelled: true}, nil
	}
	action, content, err := p.Elicit(ctx, e.s.askSession(e.child), string(call.ToolCallId), cmp.Or(q.Text, q.Header), questionForm(q))
	if err != nil || ctx.Err() != nil {
		return agent.QuestionAnswer{Cancelled: err == nil}, err
	}
	return formAnswer(q, action, content), nil
}

func (e events) ConfigChanged() {
	e.s.deliver(acp.SessionUpdate{ConfigOptionUpdate: &acp.SessionConfigOptionUpdate{ConfigOptions: e.s.State().ConfigOptions}})
}

func (e events) RequestPermission(ctx context.Context, call acp.ToolCallUpdate, options []acp.PermissionOption) (acp.RequestPermissionOutcome, error) {
	cancelled := acp.NewRequestPermissionOutcomeCancelled()
	conn := e.s.conn.Load()
	c := conn.getClient()
	if ctx.Err() != nil || c == nil {
		return cancelled, nil
	}
	ctx, done := conn.asks(ctx)
	defer done()
	resp, err := c.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: acp.SessionId(e.s.askSession(e.child)), ToolCall: call, Options: options})
	if ctx.Err() != nil {
		return cancelled, nil
	}
	if err != nil {
		return acp.RequestPermissionOutcome{}, fmt.Errorf("asking the client for permission: %w", err)
	}
	return resp.Outcome, nil
}
