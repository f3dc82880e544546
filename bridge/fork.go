package bridge

import (
	"context"
	"fmt"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
)

// Fork starts a session that begins as a copy of session id, which stays
// as it was: its transcript starts with the parent's entries (so a load
// replays the parent's conversation), it runs the parent's agent with the
// parent's options, and the agent's own session is forked where the
// agent can (agent.Caps.Forks), or else a new one is told the conversation so far
// with the first prompt. A parent whose history only its agent keeps
// (--persist auto) can be forked only by the agent, and so is its fork. The parent may be open, even in a turn (what it
// has recorded so far is copied), or only stored.
func (m *Manager) Fork(ctx context.Context, id string, st Setup) (*Session, error) {
	return m.fork(ctx, m.def, id, st)
}

// fork is Fork for connection c, which the fork is attached to.
func (m *Manager) fork(ctx context.Context, c *Conn, id string, st Setup) (*Session, error) {
	if err := m.restricted(id, "fork"); err != nil {
		return nil, err
	}
	if !persist.ValidID(id) {
		return nil, fmt.Errorf("%w: malformed session id %q", agent.ErrInvalidParams, id)
	}
	if err := st.check(); err != nil {
		return nil, err
	}
	parent, entries, err := m.snapshot(id)
	if err != nil {
		return nil, err
	}
	b := m.backends[parent.Agent]
	if b == nil {
		return nil, fmt.Errorf("%w: session %s belongs to agent %q, which this bridge does not run", agent.ErrAgentUnavailable, id, parent.Agent)
	}
	native := b.Info().Caps.Forks && parent.NativeID != ""
	// A parent whose agent never named its session has no conversation:
	// its fork is a new session.
	if parent.NativeHistory && !native && parent.NativeID != "" {
		return nil, fmt.Errorf("%w: session %s keeps no transcript of its own (its agent replays its history, and can't fork it; run with --persist always to fork it)", agent.ErrInvalidParams, id)
	}
	now := time.Now().UTC()
	h := persist.Header{ID: newID(), Agent: parent.Agent, Cwd: st.Cwd, Title: parent.Title, CreatedAt: now, UpdatedAt: now,
		Config: parent.ConfigValues(), ForkOf: id}
	s := newSession(m, c, b, h, MaxSeq(entries)+1)
	s.learnChildren(entries)
	s.prompted = len(entries) > 0 || parent.NativeID != ""
	opts := st.options(recordedPrompt(parent))
	opts.Config = h.Config
	if native {
		opts.ForkOf, s.header.ForkFrom = parent.NativeID, parent.NativeID
	} else if len(entries) > 0 {
		s.carry, s.header.Retell = &carried{since: -1, fork: id}, true
	}
	if err := s.open(opts); err != nil {
		s.end()
		return nil, err
	}
	// Where the fork's history comes from is where the parent's did: its
	// copied entries, or (--persist auto, an agent that replays its own)
	// the agent's forked session.
	s.mu.Lock()
	s.header.NativeHistory = parent.NativeHistory
	s.mu.Unlock()
	if err := s.startRecord(m.cfg.Store, nil); err != nil {
		s.discard()
		return nil, err
	}
	if err := s.copyEntries(entries); err != nil {
		s.close()
		return nil, err
	}
	m.mu.Lock()
	m.sessions[h.ID] = s
	m.mu.Unlock()
	return s, nil
}

// snapshot is a session's header and what it has recorded: the live
// session's if it is open here, else the stored transcript.
func (m *Manager) snapshot(id string) (persist.Header, []persist.Entry, error) {
	m.mu.Lock()
	s := m.sessions[id]
	m.mu.Unlock()
	if s != nil {
		entries, err := s.entries()
		if err != nil {
			return persist.Header{}, nil, err
		}
		cfg := values(s.options())
		s.mu.Lock()
		defer s.mu.Unlock()
		h := s.header
		h.Config = cfg
		return h, entries, nil
	}
	if m.cfg.Store == nil {
		return persist.Header{}, nil, fmt.Errorf("%w: %s (nothing is persisted with --persist never)", ErrSessionNotFound, id)
	}
	tr, err := m.cfg.Store.Read(id)
	if err != nil {
		return persist.Header{}, nil, fmt.Errorf("%w: %s: %v", ErrSessionNotFound, id, err)
	}
	return tr.Header, tr.Entries, nil
}

// copyEntries records a parent's entries as the start of s's transcript.
func (s *Session) copyEntries(entries []persist.Entry) error {
	if len(entries) == 0 {
		return nil
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if err := s.rec.Append(entries...); err != nil {
		return fmt.Errorf("%w: copying the parent's transcript: %v", ErrNotRecorded, err)
	}
	if err := s.rec.Sync(); err != nil {
		return fmt.Errorf("%w: copying the parent's transcript: %v", ErrNotRecorded, err)
	}
	return nil
}
