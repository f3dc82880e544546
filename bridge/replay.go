package bridge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// entries returns what the session has recorded.
func (s *Session) entries() ([]persist.Entry, error) {
	s.sendMu.Lock()
	rec := s.rec
	s.sendMu.Unlock()
	return s.entriesOf(rec)
}

// entriesLocked is entries with s.sendMu held.
func (s *Session) entriesLocked() ([]persist.Entry, error) { return s.entriesOf(s.rec) }

func (s *Session) entriesOf(rec recorder) ([]persist.Entry, error) {
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
			for _, o := range forClient(out, s.caps()) {
				s.send(o)
			}
		}
		if raw := Replay(entries); len(raw) > 0 { // its plans (see record)
			return s.sendRaw(s.id, raw[len(raw)-1:]) // the latest, which the agent's history lacks
		}
		return nil
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	return s.sendReplay(entries)
}

// takeOver attaches a session whose turn is running to connection c,
// replaying to it (if asked) what the turn has streamed so far, as drafts,
// after what was recorded before: no update is sent between the replay and
// the switch, so c sees the conversation whole and then the turn going on.
// Only for a session whose transcript the bridge keeps (the agent's own
// history would lack the running turn).
func (s *Session) takeOver(c *Conn, replay bool) error {
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	s.attachTo(c)
	if !replay {
		return nil
	}
	s.stopCheckpoint()
	if es := append(s.acc.Checkpoint(s.drafts+1), s.childCheckpoints(s.drafts+1)...); len(es) > 0 {
		s.drafts++
		s.turnDraftBytes += s.record(es)
	}
	entries, err := s.entriesLocked()
	if err != nil {
		return err
	}
	return s.sendReplay(entries)
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

// sendRaw sends encoded updates under session id (the session's or a
// child's), decoding them only for a Client that can't take them as they
// are. s.sendMu must be held.
func (s *Session) sendRaw(id string, raw []json.RawMessage) error {
	raw = rawForClient(raw, s.caps())
	if p := s.conn.Load().peer(); p != nil {
		return p.SessionUpdatesRaw(id, raw)
	}
	for _, r := range raw {
		var u acp.SessionUpdate
		if err := json.Unmarshal(r, &u); err != nil || u.Validate() != nil {
			s.m.log.Warn("skipping an undecodable transcript entry", "session", s.id, "err", err)
			continue
		}
		s.sendTo(id, u)
	}
	return nil
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
