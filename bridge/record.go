package bridge

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// draftBudget is how much a turn's checkpoints write before each doubles
// the wait for the next: a turn that streams a long command's output for
// minutes rewrites it a few times, not once a second.
const draftBudget = 1 << 20

// recorder is where a session's transcript goes: a persist.Writer, or
// memory with --persist never.
type recorder interface {
	Append(...persist.Entry) error
	SetHeader(persist.Header) error
	Sync() error
	Close() error
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
// A notice is sent only: notices are not history. A compaction is
// recorded, and sent as it is only to a client that takes compaction
// updates, as its fallback to another (forClient).
func (s *Session) deliver(u acp.SessionUpdate) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if u.Notice != nil {
		s.send(s.noticeFor(u))
		return
	}
	s.deliverLocked(u)
}

// noticeFor is a notice as the client is to be sent it: as it is to a
// client that takes notices (clientCapabilities.session.notices), else as
// thought text, as the schema says to show one to a client that does not.
func (s *Session) noticeFor(u acp.SessionUpdate) acp.SessionUpdate {
	caps := s.conn.Load().Capabilities()
	if caps.Session != nil && caps.Session.Notices != nil {
		return u
	}
	return acp.UpdateAgentThoughtText(NoticeText(*u.Notice))
}

// NoticeText is a notice as text, for a client that takes no notices.
func NoticeText(n acp.SessionUpdateNotice) string {
	text := n.Title
	if n.Description != nil && *n.Description != "" {
		text += ": " + *n.Description
	}
	return text + "\n\n"
}

// deliverRaw records an update ACP's types here don't know and sends it
// to the client as it came; a client that can't take encoded updates (no
// Peer) can't be sent it.
func (s *Session) deliverRaw(u json.RawMessage) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.record(s.acc.Raw(u))
	p := s.conn.Load().peer()
	if p == nil {
		s.m.log.Debug("an update of a kind this client can't be sent was recorded only", "session", s.id)
		return
	}
	if err := p.SessionUpdatesRaw(s.id, []json.RawMessage{u}); err != nil {
		s.m.log.Debug("sending update", "session", s.id, "err", err)
	}
}

func (s *Session) deliverLocked(u acp.SessionUpdate) {
	switch {
	case u.SubagentUpdate != nil:
		s.deliverSubagent(u)
		return
	case u.SessionMessage != nil, u.SessionMessageChunk != nil:
		s.deliverMessage(u)
		return
	}
	out, done := s.acc.Add(u)
	s.record(done)
	s.observe(out)
	for _, o := range forClient(out, s.conn.Load().Capabilities()) {
		s.send(o)
	}
	s.scheduleCheckpoint()
}

// scheduleCheckpoint makes sure a checkpoint will record what was
// streamed; s.sendMu must be held.
func (s *Session) scheduleCheckpoint() {
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
	if es := append(s.acc.Checkpoint(s.drafts+1), s.childCheckpoints(s.drafts+1)...); len(es) > 0 {
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
		es = besideHistory(es) // the agent's history has the rest
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

func (s *Session) send(u acp.SessionUpdate) { s.sendTo(s.id, u) }

// sendTo sends an update under session id: the session's own, or a
// child's.
func (s *Session) sendTo(id string, u acp.SessionUpdate) {
	c := s.conn.Load().getClient()
	if c == nil {
		return
	}
	err := c.SessionUpdate(s.m.ctx, acp.SessionNotification{SessionId: acp.SessionId(id), Update: u})
	if err != nil {
		s.m.log.Debug("sending update", "session", s.id, "err", err)
	}
}

// recordUser records the prompt as the user's message and titles an
// untitled session after it.
func (s *Session) recordUser(prompt []acp.ContentBlock, id string) {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if id == "" {
		id = s.acc.newID()
	}
	entries := s.acc.UserAs(id, prompt)
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

// saveHeader records the current header with a fresh updatedAt and syncs
// the transcript.
func (s *Session) saveHeader() {
	cfg := values(s.options())
	s.mu.Lock()
	if s.native != nil {
		s.header.Config = s.withEdits(cfg)
		if id := s.native.NativeID(); id != "" {
			s.header.NativeID, s.header.ForkFrom = id, "" // a fork's agent named its own: resume that
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
