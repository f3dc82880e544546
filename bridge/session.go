package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
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

	mu       sync.Mutex // protects the fields below
	backend  agent.Backend
	native   agent.Native // nil after a turn that would not stop was abandoned
	opts     agent.OpenOptions
	header   persist.Header
	turn     *turn
	prompted bool              // the conversation has started; the agent can no longer change
	pending  map[string]string // NextTurn config values the agent has not taken yet
	closed   bool
	cancels  Order // prompts that arrived before this are cancelled
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
	// edits is the edits option's value; router is set while edits go
	// through the editor (see setEdits). Every update reads it.
	edits  string
	router atomic.Pointer[router]

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

// carried is a handoff the next prompt tells the new agent about.
type carried struct {
	from  string // the agent that had the session
	since int64  // the new agent had it until this entry (-1: never)
	fork  string // set instead of from for a fork: the session it was forked from
}

// draftBudget is how much a turn's checkpoints write before each doubles
// the wait for the next: a turn that streams a long command's output for
// minutes rewrites it a few times, not once a second.
const draftBudget = 1 << 20

// Order is where a client's message arrived on its connection, counted
// from 1; 0 means unknown. The edge handles messages concurrently, so a
// cancel can be handled before a prompt that arrived ahead of it has begun
// its turn, or after one that arrived behind it has: Order lets a cancel
// stop exactly the prompts that arrived before it.
type Order uint64

// turn is one running prompt.
type turn struct {
	at        Order
	ctx       context.Context
	cancel    context.CancelFunc
	cancelled atomic.Bool
	done      chan struct{} // closed when the turn has ended and been recorded
}

// recorder is where a session's transcript goes: a persist.Writer, or
// memory with --persist never.
type recorder interface {
	Append(...persist.Entry) error
	SetHeader(persist.Header) error
	Sync() error
	Close() error
}

func newSession(m *Manager, b agent.Backend, h persist.Header, nextSeq int64) *Session {
	s := &Session{m: m, id: h.ID, backend: b, header: h, pending: map[string]string{}, acc: NewAccumulator(nextSeq, newID)}
	s.free = sync.NewCond(&s.mu)
	s.setEdits(h.Config[ConfigEdits])
	s.life, s.end = context.WithCancel(m.ctx)
	return s
}

// ID is the bridge's id for the session.
func (s *Session) ID() string { return s.id }

// open opens the native session and takes its config into the header.
// For a new native session it also decides where history comes from:
// with --persist auto, the agent's own when it can return it.
func (s *Session) open(opts agent.OpenOptions) error {
	opts.Editor, opts.History = editor{s}, s.history
	if _, ok := opts.Config[ConfigEdits]; ok { // the bridge's, not the agent's
		opts.Config = maps.Clone(opts.Config)
		delete(opts.Config, ConfigEdits)
	}
	n, err := s.backend.Open(s.life, opts, events{s})
	if err != nil {
		return fmt.Errorf("starting %s: %w", s.backend.Info().Name, err)
	}
	cfg := values(n.Config())
	s.mu.Lock()
	defer s.mu.Unlock()
	s.native, s.opts, s.idleConfig, s.lastActive = n, opts, nil, time.Now()
	s.header.NativeID = n.NativeID()
	s.header.Config, s.header.Mode, s.header.Model = s.withEdits(cfg), "", ""
	if opts.NativeID == "" {
		s.header.NativeHistory = capsOf(n).History != nil && s.m.cfg.Persist == PersistAuto
	}
	return nil
}

// startRecord begins recording to a new transcript in store, or to w (a
// reopened transcript), or to memory when both are nil.
func (s *Session) startRecord(store *persist.Store, w *persist.Writer) error {
	s.mu.Lock()
	h := s.header
	s.mu.Unlock()
	rec, err := newRecorder(store, w, h)
	if err != nil {
		return err
	}
	s.sendMu.Lock()
	s.rec, s.keep = rec, !h.NativeHistory
	s.sendMu.Unlock()
	return nil
}

func newRecorder(store *persist.Store, w *persist.Writer, h persist.Header) (recorder, error) {
	switch {
	case store != nil:
		return store.Create(h)
	case w == nil:
		return &memRecorder{}, nil
	case w.Header().Equal(h):
		return w, nil // nothing changed since the last header line
	}
	if err := w.SetHeader(h); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// deliver folds an update into the transcript and sends it to the client.
func (s *Session) deliver(u acp.SessionUpdate) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.deliverLocked(u)
}

func (s *Session) deliverLocked(u acp.SessionUpdate) {
	out, done := s.acc.Add(u)
	s.record(done)
	s.observe(out)
	s.send(out)
	if s.ckpt == nil && s.keep {
		if _, onDisk := s.rec.(*persist.Writer); onDisk {
			s.ckpt = time.AfterFunc(checkpointDelay(s.m.cfg.Checkpoint, s.turnDraftBytes), s.checkpoint)
		}
	}
}

// checkpoint records what the running turn streamed and has not recorded
// as drafts. The write reaches the OS, not the disk: it survives the
// bridge being killed, which is what it is for.
func (s *Session) checkpoint() {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.ckpt == nil {
		return // stopped while it waited for the lock
	}
	s.ckpt = nil
	if es := s.acc.Checkpoint(s.drafts + 1); len(es) > 0 {
		s.drafts++
		s.turnDraftBytes += s.record(es)
	}
}

// checkpointDelay is how long after an update the next checkpoint waits,
// given what the turn's checkpoints have written.
func checkpointDelay(base time.Duration, written int) time.Duration {
	return base << min(written/draftBudget, 10)
}

// stopCheckpoint drops the pending checkpoint; s.sendMu must be held.
func (s *Session) stopCheckpoint() {
	if s.ckpt != nil {
		s.ckpt.Stop()
		s.ckpt = nil
	}
}

// record appends entries; s.sendMu must be held.
// It returns how many bytes of updates it wrote.
func (s *Session) record(es []Entry) int {
	if s.rec == nil || len(es) == 0 {
		return 0
	}
	if !s.keep {
		es = plans(es) // the agent's history has the rest, but not its plans
		if len(es) == 0 {
			return 0
		}
	}
	enc, err := Encode(es)
	if err == nil {
		err = s.rec.Append(enc...)
	}
	if err != nil {
		s.m.log.Error("recording transcript", "session", s.id, "err", err)
		if s.recErr == nil {
			s.recErr = err
		}
		return 0
	}
	n := 0
	for _, e := range enc {
		n += len(e.Update)
		for _, p := range e.Parts {
			n += len(p)
		}
	}
	return n
}

// observe keeps the header in step with updates that change it.
func (s *Session) observe(u acp.SessionUpdate) {
	if u.SessionInfoUpdate != nil && u.SessionInfoUpdate.Title != nil {
		s.mu.Lock()
		s.header.Title = *u.SessionInfoUpdate.Title
		s.mu.Unlock()
	}
}

func (s *Session) send(u acp.SessionUpdate) {
	c := s.m.getClient()
	if c == nil {
		return
	}
	err := c.SessionUpdate(s.m.ctx, acp.SessionNotification{SessionId: acp.SessionId(s.id), Update: u})
	if err != nil {
		s.m.log.Debug("sending update", "session", s.id, "err", err)
	}
}

// Prompt runs one turn for a prompt that arrived at at. A prompt that
// comes while a turn runs waits for it, and prompts run in the order they
// arrived, each with its own result. A cancelled turn returns
// StopReasonCancelled and no error; a prompt cancelled before its turn
// began returns so without running. ctx carries values only: the turn
// ends on Cancel, close or Shutdown, not when a request's ctx is done.
func (s *Session) Prompt(ctx context.Context, at Order, prompt []acp.ContentBlock) (agent.TurnResult, error) {
	if err := s.checkPrompt(prompt); err != nil {
		return agent.TurnResult{}, err
	}
	t, n, err := s.beginTurn(at)
	if err != nil {
		return agent.TurnResult{}, err
	}
	if t == nil {
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
	toAgent, note := s.handedOver(prompt)
	s.recordUser(prompt)
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

func (s *Session) agentName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.backend.Info().Name
}

// beginTurn claims the session for a turn, reopening an abandoned native
// session first. It returns no turn and no error for a prompt already
// cancelled.
func (s *Session) beginTurn(at Order) (*turn, agent.Native, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, fmt.Errorf("%w: %s is closed", ErrSessionNotFound, s.id)
	}
	if s.readOnly != nil {
		s.mu.Unlock()
		return nil, nil, s.readOnly
	}
	if err := s.waitTurn(at); err != nil {
		s.mu.Unlock()
		if err == errCancelledWaiting {
			s.m.log.Debug("prompt cancelled before its turn began", "session", s.id)
			return nil, nil, nil
		}
		return nil, nil, err
	}
	t := &turn{at: at, done: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(s.m.ctx)
	s.turn, s.prompted, s.lastActive = t, true, time.Now()
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

// errCancelledWaiting: the prompt was cancelled before its turn began.
var errCancelledWaiting = errors.New("cancelled while queued")

// waitTurn, with s.mu held, waits until the session has no turn and the
// prompt that arrived at at is the first in the queue, or until it is
// cancelled (errCancelledWaiting) or the session can't take prompts.
func (s *Session) waitTurn(at Order) error {
	s.tickets++
	me := &waiting{at: at, ticket: s.tickets}
	i := len(s.queue)
	for i > 0 && me.before(s.queue[i-1]) {
		i--
	}
	s.queue = slices.Insert(s.queue, i, me)
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
		case at != 0 && at < s.cancels, me.ticket <= s.cancelTicket:
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

func (s *Session) nativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header.NativeID
}

// recordUser records the prompt as the user's message and titles an
// untitled session after it.
func (s *Session) recordUser(prompt []acp.ContentBlock) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	entries := s.acc.User(prompt)
	s.record(entries)
	s.mu.Lock()
	title := ""
	if s.header.Title == "" {
		title = titleOf(prompt)
		s.header.Title = title
	}
	s.mu.Unlock()
	if title != "" {
		s.send(acp.SessionUpdate{SessionInfoUpdate: &acp.SessionSessionInfoUpdate{Title: &title}})
	}
}

// run waits for the native turn; after a cancel it waits CancelGrace more,
// then closes the native session (the next prompt reopens it) and gives
// up on the turn.
func (s *Session) run(t *turn, n agent.Native, turn agent.Turn) (agent.TurnResult, error) {
	type result struct {
		tr  agent.TurnResult
		err error
	}
	ch := make(chan result, 1) // the goroutine never blocks, even if abandoned
	go func() {
		tr, err := n.Prompt(t.ctx, turn)
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
func (s *Session) endTurn(t *turn) {
	s.sendMu.Lock()
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

func (s *Session) finish(t *turn) {
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

// saveHeader records the current header with a fresh updatedAt and syncs
// the transcript.
func (s *Session) saveHeader() {
	cfg := values(s.options())
	s.mu.Lock()
	if s.native != nil {
		s.header.Config = s.withEdits(cfg)
		if id := s.native.NativeID(); id != "" {
			s.header.NativeID = id
		}
	}
	s.header.UpdatedAt = time.Now().UTC()
	h := s.header
	s.mu.Unlock()
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if s.rec == nil {
		return
	}
	err := s.rec.SetHeader(h)
	if err == nil {
		err = s.rec.Sync()
	}
	if err != nil {
		s.m.log.Error("recording the session's header", "session", s.id, "err", err)
		if s.recErr == nil {
			s.recErr = err
		}
	}
}

// takeRecordError returns and forgets the turn's failed write, if any.
func (s *Session) takeRecordError() error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	err := s.recErr
	s.recErr = nil
	return err
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
func (s *Session) reattach(ctx context.Context, replay bool) error {
	s.mu.Lock()
	busy := s.turn != nil
	s.mu.Unlock()
	if busy {
		return fmt.Errorf("%w: session %s has a prompt running", ErrBusy, s.id)
	}
	if !replay {
		return nil
	}
	entries, err := s.entries()
	if err != nil {
		return err
	}
	return s.replay(ctx, entries)
}

// entries returns what the session has recorded.
func (s *Session) entries() ([]persist.Entry, error) {
	s.sendMu.Lock()
	rec := s.rec
	s.sendMu.Unlock()
	if m, ok := rec.(*memRecorder); ok {
		return m.snapshot(), nil
	}
	tr, err := s.m.cfg.Store.Read(s.id)
	if err != nil {
		return nil, err
	}
	return tr.Entries, nil
}

// history is the conversation as recorded, in replay order; nil if it
// can't be read.
func (s *Session) history() []acp.SessionUpdate {
	entries, err := s.entries()
	if err != nil {
		s.m.log.Warn("reading the transcript for the agent", "session", s.id, "err", err)
		return nil
	}
	return decoded(Replay(entries))
}

// RawSender is implemented by a Client that can send updates already
// encoded as JSON, as stored, sparing session/load a decode and re-encode
// of every entry.
type RawSender interface {
	SessionUpdatesRaw(sessionID string, updates []json.RawMessage) error
}

// replay sends the recorded conversation, or the agent's own history when
// the transcript keeps none, to the client.
func (s *Session) replay(ctx context.Context, entries []persist.Entry) error {
	s.mu.Lock()
	n, native := s.native, s.header.NativeHistory
	s.mu.Unlock()
	if history := capsOf(n).History; history != nil && native {
		updates, err := history(ctx)
		if err != nil {
			return fmt.Errorf("reading %s history: %w", s.agentName(), err)
		}
		s.sendMu.Lock()
		defer s.sendMu.Unlock()
		acc := NewAccumulator(1, newID) // messages get ids, as live ones do
		for _, u := range updates {
			out, _ := acc.Add(u)
			s.send(out)
		}
		if raw := Replay(entries); len(raw) > 0 { // its plans (see record)
			return s.sendRaw(raw[len(raw)-1:]) // the latest, which the agent's history lacks
		}
		return nil
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.sendRaw(Replay(entries))
}

// plans are the plan entries among es: all that a session whose agent
// keeps its history records (--persist auto), as no agent's history holds
// its plans.
func plans(es []Entry) []Entry {
	var out []Entry
	for _, e := range es {
		if e.Update.Plan != nil {
			out = append(out, e)
		}
	}
	return out
}

// sendRaw sends encoded updates, decoding them only for a Client that
// can't take them as they are. s.sendMu must be held.
func (s *Session) sendRaw(raw []json.RawMessage) error {
	if rs, ok := s.m.getClient().(RawSender); ok {
		return rs.SessionUpdatesRaw(s.id, raw)
	}
	for _, r := range raw {
		var u acp.SessionUpdate
		if err := json.Unmarshal(r, &u); err != nil || u.Validate() != nil {
			s.m.log.Warn("skipping an undecodable transcript entry", "session", s.id, "err", err)
			continue
		}
		s.send(u)
	}
	return nil
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

// events is the Events a session hands its Native.
type events struct{ s *Session }

func (e events) Update(u acp.SessionUpdate) {
	if r := e.s.router.Load(); r != nil {
		r.observe(u)
	}
	e.s.deliver(u)
}

func (e events) ConfigChanged() {
	e.s.deliver(acp.SessionUpdate{ConfigOptionUpdate: &acp.SessionConfigOptionUpdate{ConfigOptions: e.s.State().ConfigOptions}})
}

func (e events) RequestPermission(ctx context.Context, call acp.ToolCallUpdate, options []acp.PermissionOption) (acp.RequestPermissionOutcome, error) {
	cancelled := acp.NewRequestPermissionOutcomeCancelled()
	c := e.s.m.getClient()
	if ctx.Err() != nil || c == nil {
		return cancelled, nil
	}
	resp, err := c.RequestPermission(ctx, acp.RequestPermissionRequest{
		SessionId: acp.SessionId(e.s.id), ToolCall: call, Options: options})
	if ctx.Err() != nil {
		return cancelled, nil
	}
	if err != nil {
		return acp.RequestPermissionOutcome{}, fmt.Errorf("asking the client for permission: %w", err)
	}
	return resp.Outcome, nil
}

// memRecorder keeps a transcript in memory (--persist never).
type memRecorder struct {
	mu      sync.Mutex
	entries []persist.Entry
}

func (r *memRecorder) Append(es ...persist.Entry) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range es {
		r.entries = append(r.entries, Joined(e))
	}
	return nil
}

func (r *memRecorder) snapshot() []persist.Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]persist.Entry(nil), r.entries...)
}

func (r *memRecorder) SetHeader(persist.Header) error { return nil }
func (r *memRecorder) Sync() error                    { return nil }
func (r *memRecorder) Close() error                   { return nil }

// stopIfIdle stops the session's agent if it has had no turn since
// before; the next prompt (or option change) starts it again, resuming its
// native session. A running turn is never touched. It reports whether it
// stopped one.
func (s *Session) stopIfIdle(before time.Time) bool {
	s.mu.Lock()
	n := s.native
	if n == nil || s.turn != nil || s.closed || s.readOnly != nil || s.lastActive.After(before) {
		s.mu.Unlock()
		return false
	}
	s.idleConfig = n.Config()
	s.native = nil
	s.mu.Unlock()
	s.saveHeader() // its native id and options, to resume with
	if err := n.Close(); err != nil {
		s.m.log.Warn("stopping an idle agent", "session", s.id, "err", err)
	}
	s.m.log.Info("stopped an idle agent; the next prompt starts it again", "session", s.id)
	return true
}

// idleSince returns when the session's agent last worked, and whether it
// runs and is idle.
func (s *Session) idleSince() (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastActive, s.native != nil && s.turn == nil && !s.closed
}

// running reports whether the session's agent runs (a turn, or idle).
func (s *Session) running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.native != nil && !s.closed
}

// reopening is the options to open the native session again with: an
// agent stopped while idle gets the option values it had. Call with s.mu
// held.
func (s *Session) reopening() agent.OpenOptions {
	opts := s.opts
	if s.idleConfig != nil {
		opts.Config = values(s.idleConfig)
	}
	return opts
}

// handedOver is the prompt for a session's first turn on an agent it was
// handed to: the conversation the agent hasn't seen (everything, or what
// happened since it last had the session), then the prompt. The client
// is told, in a thought (note), what was carried. Any other turn's prompt
// is the prompt.
func (s *Session) handedOver(prompt []acp.ContentBlock) (toAgent []acp.ContentBlock, note string) {
	s.mu.Lock()
	c, info := s.carry, s.backend.Info()
	s.carry = nil
	s.mu.Unlock()
	if c == nil {
		return prompt, ""
	}
	entries, err := s.entries()
	if err != nil {
		s.m.log.Warn("reading the transcript for the next agent", "session", s.id, "err", err)
		return prompt, ""
	}
	var since []persist.Entry
	for _, e := range entries {
		if e.Seq > c.since {
			since = append(since, e)
		}
	}
	intro := fmt.Sprintf("Until now another coding agent (%s) worked on this session with the user; here is what was said (from acpbridge's transcript). Go on from there.", c.from)
	switch {
	case c.fork != "":
		intro = agent.ForkIntro
	case c.since >= 0:
		intro = fmt.Sprintf("You had this session before; since then another coding agent (%s) worked on it with the user. Here is what was said meanwhile (from acpbridge's transcript). Go on from there.", c.from)
	}
	text := agent.HistoryText(decoded(Replay(since)), agent.HistoryBudget, intro)
	if text == "" {
		return prompt, ""
	}
	what := "so far"
	if c.since >= 0 {
		what = "since it last had the session"
	}
	note = fmt.Sprintf("Handed over from %s to %s: it was given the conversation %s (%d KB).", c.from, info.Title, what, (len(text)+1023)/1024)
	if c.fork != "" {
		note = fmt.Sprintf("Forked from session %s: %s was given the conversation so far (%d KB).", c.fork, info.Title, (len(text)+1023)/1024)
	}
	if strings.Contains(text, "earlier lines left out]") {
		note += " The oldest part did not fit and was left out."
	}
	return append([]acp.ContentBlock{acp.TextBlock(text)}, prompt...), note
}

// decoded decodes recorded updates, skipping any that don't decode.
func decoded(raw []json.RawMessage) []acp.SessionUpdate {
	us := make([]acp.SessionUpdate, 0, len(raw))
	for _, r := range raw {
		var u acp.SessionUpdate
		if json.Unmarshal(r, &u) == nil {
			us = append(us, u)
		}
	}
	return us
}
