package bridge

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// carried is a handoff the next prompt tells the new agent about.
type carried struct {
	from  string // the agent that had the session
	since int64  // the new agent had it until this entry (-1: never)
	fork  string // set instead of from for a fork: the session it was forked from
}

// handedOver is the prompt for a session's first turn on an agent it was
// handed to: the conversation the agent hasn't seen (everything, or what
// happened since it last had the session), then the prompt. The client
// is told, in a thought (note), what was carried. Any other turn's prompt
// is the prompt.
func (s *Session) handedOver(prompt []acp.ContentBlock) (toAgent []acp.ContentBlock, note string) {
	s.mu.Lock()
	c, info := s.carry, s.backend.Info()
	s.carry, s.header.Retell = nil, false // told now; the header is saved at the turn's end
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

// switchAgent moves a session that has not started its conversation to
// another backend.
func (s *Session) switchAgent(name string) error {
	b := s.m.backends[name]
	if b == nil {
		return fmt.Errorf("%w: agent %q is not available here; choose one of %s", agent.ErrInvalidParams, name, s.m.agentNames())
	}
	s.mu.Lock()
	old, opts, prompted := s.native, s.opts, s.prompted
	switch {
	case s.backend == b:
		s.mu.Unlock()
		return nil
	case s.turn != nil:
		s.mu.Unlock()
		return fmt.Errorf("%w: session %s has a prompt running; the agent changes between turns", ErrBusy, s.id)
	}
	prev := s.backend
	s.backend = b
	back, before := s.header.Handoffs[name]
	s.mu.Unlock()
	if !before {
		back.Seq = -1 // it has seen nothing
	}
	opts.NativeID, opts.Config = "", nil
	if prompted {
		opts.NativeID = back.NativeID // handed back: its own session goes on
	}
	if err := s.open(opts); err != nil {
		s.mu.Lock()
		s.backend = prev
		s.mu.Unlock()
		return err
	}
	if prompted {
		s.handOff(prev.Info().Name, old, back.Seq)
	}
	s.mu.Lock()
	s.header.Agent = name
	s.pending = map[string]string{}
	native := s.header.NativeHistory
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	s.sendMu.Lock()
	s.keep = !native
	s.sendMu.Unlock()
	s.saveHeader()
	return nil
}

// handOff records that the conversation left agent from (on native
// session old) and that the next prompt is to tell the new agent what
// was said: since seq, when the new agent had the session before. A
// transcript that kept only headers (the old agent's own history stood
// for it) gets that history first, since the new agent can't read it.
func (s *Session) handOff(from string, old agent.Native, since int64) {
	s.mu.Lock()
	native := s.header.NativeHistory
	s.header.NativeHistory = false
	s.mu.Unlock()
	if history := capsOf(old).History; history != nil && native {
		if updates, err := history(s.life); err == nil {
			s.sendMu.Lock()
			for _, u := range updates {
				_, done := s.acc.Add(u)
				s.keep = true
				s.record(done)
			}
			s.record(s.acc.Flush())
			s.sendMu.Unlock()
		} else {
			s.m.log.Warn("reading the agent's history for the next agent", "session", s.id, "err", err)
		}
	}
	s.sendMu.Lock()
	seq := *s.acc.nextSeq - 1
	s.sendMu.Unlock()
	s.mu.Lock()
	if s.header.Handoffs == nil {
		s.header.Handoffs = map[string]persist.Handoff{}
	}
	nid := ""
	if old != nil {
		nid = old.NativeID()
	}
	s.header.Handoffs[from] = persist.Handoff{NativeID: nid, Seq: seq}
	s.carry = &carried{from: from, since: since}
	s.mu.Unlock()
}
