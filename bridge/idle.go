package bridge

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
)

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

// DefaultFilesIdle is how long a session has had no turn before its
// transcript and lock are let go (Config.FilesIdle).
const DefaultFilesIdle = time.Minute

// releaseFiles lets the session's transcript and its lock go if it has
// had no turn since before; the next write takes them back.
func (s *Session) releaseFiles(before time.Time) {
	s.mu.Lock()
	idle := s.turn == nil && !s.closed && !s.lastActive.After(before)
	s.mu.Unlock()
	if !idle {
		return
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	if w, ok := s.rec.(*persist.Writer); ok {
		if err := w.Release(); err != nil {
			s.m.log.Warn("letting an idle session's transcript go", "session", s.id, "err", err)
		}
	}
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

// reap stops idle agents, now and then, until Shutdown.
func (m *Manager) reap(ctx context.Context) {
	every := time.Minute
	for _, t := range []time.Duration{m.cfg.IdleTimeout, m.cfg.FilesIdle} {
		if t > 0 {
			every = min(max(t/4, 10*time.Millisecond), every)
		}
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			m.StopIdle(time.Now())
		}
	}
}

// StopIdle lets the transcripts of sessions idle past FilesIdle at now
// go, and stops the agents idle past IdleTimeout, then, while more than
// MaxAgents run, the least recently used idle ones.
func (m *Manager) StopIdle(now time.Time) {
	m.mu.Lock()
	sessions := slices.Collect(maps.Values(m.sessions))
	m.mu.Unlock()
	if m.cfg.FilesIdle > 0 {
		for _, s := range sessions {
			s.releaseFiles(now.Add(-m.cfg.FilesIdle))
		}
	}
	type idle struct {
		s     *Session
		since time.Time
	}
	var running []idle
	live := 0
	for _, s := range sessions {
		since, ok := s.idleSince()
		if !ok {
			if s.running() {
				live++
			}
			continue
		}
		if m.cfg.IdleTimeout > 0 && now.Sub(since) >= m.cfg.IdleTimeout && s.stopIfIdle(since) {
			continue
		}
		running = append(running, idle{s, since})
		live++
	}
	if m.cfg.MaxAgents <= 0 || live <= m.cfg.MaxAgents {
		return
	}
	slices.SortFunc(running, func(a, b idle) int { return a.since.Compare(b.since) })
	for _, r := range running {
		if live <= m.cfg.MaxAgents {
			return
		}
		if r.s.stopIfIdle(r.since) {
			live--
		}
	}
}
