package bridge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// A child is a child session of a session: a subagent its agent delegated
// to (see agent.Events.Child). Its entries are kept in its parent's
// transcript, tagged with its native id; a client that takes subagents
// (clientCapabilities.subagents) is sent its updates under its own session
// id, the parent's id, a dot and the native id, which is the same at every
// replay; another is shown its tool calls on the parent, as before ACP had
// subagents.
type child struct {
	native string // the agent's id for it
	id     string // the bridge's, for the client
	// acc folds its updates; used with the session's sendMu held.
	acc *Accumulator
	// cancel says its agent can stop it alone; running, that it works.
	cancel, running bool
}

// ErrRestricted is the error for what the client may not ask of a child
// session (-32602): it takes no prompt, no change of mode or model, no
// close, delete, fork, load or resume of its own; its parent does. Only
// session/cancel is allowed, where its agent can stop it alone.
var ErrRestricted = errors.New("restricted session")

// takesSubagents reports whether a client offered
// clientCapabilities.subagents.
func takesSubagents(caps acp.ClientCapabilities) bool { return caps.Subagents != nil }

// childID is the session id the bridge gives the child its parent's agent
// calls native: anything in native but letters, digits, '-' and '_' is
// '_', so that the id names nothing on disk.
func childID(parent, native string) string {
	clean := strings.Map(func(r rune) rune {
		if 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, native)
	return parent + "." + clean
}

// splitChild splits a child's session id into its parent's and the rest;
// ok is false for an id that is not a child's.
func splitChild(id string) (parent, rest string, ok bool) {
	parent, rest, ok = strings.Cut(id, ".")
	return parent, rest, ok && persist.ValidID(parent) && rest != ""
}

// childByID is the session's child with the bridge's id, or nil.
func (s *Session) childByID(id string) *child {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.children {
		if c.id == id {
			return c
		}
	}
	return nil
}

// childNamed is the child the agent calls native, or nil if it was never
// announced. A child the agent never announced is shown as the session's
// own, which is said once.
func (s *Session) childNamed(native string) *child {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.children[native]
	if c == nil && !s.unannounced[native] {
		s.unannounced[native] = true
		s.m.log.Warn("the agent reported a subagent it never announced; showing its work as the session's", "session", s.id, "subagent", native)
	}
	return c
}

// announce registers the child a subagent_update names, or patches it.
func (s *Session) announce(u *acp.SessionSubagentUpdate) *child {
	native := string(u.SessionId)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.children[native]
	if c == nil {
		c = &child{native: native, id: childID(s.id, native), acc: s.acc.Child(native)}
		s.children[native] = c
	}
	if u.Capabilities != nil {
		c.cancel = u.Capabilities.Cancel != nil
	}
	if st := u.State; st != nil {
		c.running = st.Idle == nil
	}
	return c
}

// deliverSubagent records a child's announcement (or a patch of it), with
// its native id, and sends it with the child's session id to a client
// that takes subagents. s.sendMu must be held.
func (s *Session) deliverSubagent(u acp.SessionUpdate) {
	c := s.announce(u.SubagentUpdate)
	_, done := s.acc.Add(u)
	s.record(done)
	if takesSubagents(s.caps()) {
		s.sendTo(s.id, withSessionID(u, c.id))
	}
	s.scheduleCheckpoint()
}

// deliverMessage records a message between the session and a child
// (session_message, or a chunk of one) and sends it, the sessions named
// by their ids, to a client that takes subagents; another is sent nothing
// of it. s.sendMu must be held.
func (s *Session) deliverMessage(u acp.SessionUpdate) {
	_, done := s.acc.Add(u)
	s.record(done)
	if takesSubagents(s.caps()) {
		s.sendTo(s.id, s.messageFor(u))
	}
	s.scheduleCheckpoint()
}

// messageFor is a session_message as the client is sent it: a child named
// by the agent's id is named by the child's session id, and a sender or
// recipient left out (beside one that is named) is the session itself.
func (s *Session) messageFor(u acp.SessionUpdate) acp.SessionUpdate {
	m := u.SessionMessage
	if m == nil {
		return u
	}
	mm := *m
	self := acp.SessionId(s.id)
	from, to := s.sessionRef(m.SenderSessionId), s.sessionRef(m.RecipientSessionId)
	switch {
	case from == nil && to != nil:
		from = &self
	case to == nil && from != nil:
		to = &self
	}
	mm.SenderSessionId, mm.RecipientSessionId = from, to
	return acp.SessionUpdate{SessionMessage: &mm}
}

// sessionRef is the session id of the child the agent calls *native, or
// native itself if no child is called that; nil for nil.
func (s *Session) sessionRef(native *acp.SessionId) *acp.SessionId {
	if native == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.children[string(*native)]; c != nil {
		id := acp.SessionId(c.id)
		return &id
	}
	return native
}

// withSessionID is a subagent_update naming the child by id.
func withSessionID(u acp.SessionUpdate, id string) acp.SessionUpdate {
	su := *u.SubagentUpdate
	su.SessionId = acp.SessionId(id)
	return acp.SessionUpdate{SubagentUpdate: &su}
}

// deliverChild folds a child's update into its entries and sends it: with
// the child's id to a client that takes subagents, a tool call on the
// parent to another, and nothing else of it. A notice is the parent's.
func (s *Session) deliverChild(native string, u acp.SessionUpdate) {
	if u.Notice != nil || u.SubagentUpdate != nil { // a subagent's subagent is its parent's
		s.deliver(u)
		return
	}
	s.sendMu.Lock()
	defer s.sendMu.Unlock()
	c := s.childNamed(native)
	if c == nil {
		s.deliverLocked(u)
		return
	}
	s.deliverChildLocked(c, u)
}

func (s *Session) deliverChildLocked(c *child, u acp.SessionUpdate) {
	out, done := c.acc.Add(u)
	s.record(done)
	caps := s.caps()
	switch {
	case takesSubagents(caps):
		for _, o := range forClient(out, caps) {
			s.sendTo(c.id, o)
		}
	case out.ToolCall != nil || out.ToolCallUpdate != nil:
		s.sendTo(s.id, out)
	}
	s.scheduleCheckpoint()
}

// endChildren ends the children's part of a turn, as endTurn does the
// session's: their open tool calls failed, their entries flushed, and
// those still at work when a cancelled turn ends said to be idle,
// cancelled. s.sendMu must be held.
func (s *Session) endChildren(cancelled bool) {
	for _, c := range s.childList() {
		for _, u := range c.acc.Unfinished() {
			s.deliverChildLocked(c, u)
		}
		s.record(c.acc.Flush())
		if cancelled && s.isRunning(c) {
			s.deliverSubagent(subagentIdle(c.native, acp.StopReasonCancelled))
		}
	}
}

func subagentIdle(native string, why acp.StopReason) acp.SessionUpdate {
	r := string(why)
	return acp.SessionUpdate{SubagentUpdate: &acp.SessionSubagentUpdate{SessionId: acp.SessionId(native),
		State: &acp.StateUpdate{Idle: &acp.StateUpdateIdle{State: "idle", StopReason: &r}}}}
}

func (s *Session) isRunning(c *child) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return c.running
}

// childList is the session's children, in no order.
func (s *Session) childList() []*child {
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := make([]*child, 0, len(s.children))
	for _, c := range s.children {
		cs = append(cs, c)
	}
	return cs
}

// childCheckpoints are the children's drafts numbered n (see
// Accumulator.Checkpoint). s.sendMu must be held.
func (s *Session) childCheckpoints(n int64) []Entry {
	var es []Entry
	for _, c := range s.childList() {
		es = append(es, c.acc.Checkpoint(n)...)
	}
	return es
}

// learnChildren registers the children a reopened session's transcript
// names, so that their ids stay theirs (ErrRestricted) and their updates
// go on under them.
func (s *Session) learnChildren(entries []persist.Entry) {
	for _, e := range entries {
		native := e.Session
		if native == "" && isSubagentEntry(e.Update) {
			var u struct {
				SessionID string `json:"sessionId"`
			}
			json.Unmarshal(e.Update, &u)
			native = u.SessionID
		}
		if native != "" {
			s.announce(&acp.SessionSubagentUpdate{SessionId: acp.SessionId(native)})
		}
	}
}

func isSubagentEntry(u json.RawMessage) bool { return bytes.Contains(u, subagentKey) }

// sendReplay sends recorded entries: flattened (Replay) to a client that
// takes no subagents, else the session's and its children's updates,
// each under its own session id, the announcements naming the children
// by theirs. s.sendMu must be held.
func (s *Session) sendReplay(entries []persist.Entry) error {
	return s.sendTree(ReplayTree(entries))
}

// sendTree is sendReplay of a replay tree.
func (s *Session) sendTree(tree []Replayed) error {
	if !takesSubagents(s.caps()) {
		return s.sendRaw(s.id, flatten(tree))
	}
	for i := 0; i < len(tree); {
		j := i
		var run []json.RawMessage
		for ; j < len(tree) && tree[j].Session == tree[i].Session; j++ {
			run = append(run, s.replayedFor(tree[j]))
		}
		id := s.id
		if native := tree[i].Session; native != "" {
			id = childID(s.id, native)
		}
		if err := s.sendRaw(id, run); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// replayedFor is a replayed update as the client is sent it: an
// announcement, and a message between sessions, name the child by its
// session id.
func (s *Session) replayedFor(r Replayed) json.RawMessage {
	if r.Session == "" && bytes.Contains(r.Update, messageKey) {
		var u acp.SessionUpdate
		if json.Unmarshal(r.Update, &u) != nil {
			return r.Update
		}
		b, err := json.Marshal(s.messageFor(u))
		if err != nil {
			return r.Update
		}
		return b
	}
	if r.Session != "" || !isSubagentEntry(r.Update) {
		return r.Update
	}
	var m map[string]any
	if json.Unmarshal(r.Update, &m) != nil {
		return r.Update
	}
	native, _ := m["sessionId"].(string)
	m["sessionId"] = childID(s.id, native)
	b, err := json.Marshal(m)
	if err != nil {
		return r.Update
	}
	return b
}

// askSession is the session id an ask of the child the agent calls
// native (the session's own for "") is put to the client under.
func (s *Session) askSession(native string) string {
	if native == "" || !takesSubagents(s.caps()) {
		return s.id
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.children[native]; c != nil {
		return c.id
	}
	return s.id
}

// cancelChild stops the current work of child c where its agent can stop
// it alone, in the background (session/cancel must return at once); it
// is ignored where it can't.
func (s *Session) cancelChild(c *child) {
	s.mu.Lock()
	defer s.mu.Unlock() // held while bg grows: close waits for bg once closed is set
	stop := capsOf(s.native).CancelChild
	if !c.cancel || stop == nil || s.closed {
		s.m.log.Debug("ignoring a cancel of a subagent its agent can't stop alone", "session", c.id)
		return
	}
	s.bg.Go(func() {
		if err := stop(s.life, c.native); err != nil && s.life.Err() == nil {
			s.m.log.Warn("stopping a subagent", "session", c.id, "err", err)
		}
	})
}

// child finds the live child session id and its parent; err says what is
// wrong with an id that is a child's but not a live child's (-32602), and
// ok is false for an id that is no child's.
func (m *Manager) child(id string) (*Session, *child, bool, error) {
	parent, _, ok := splitChild(id)
	if !ok {
		return nil, nil, false, nil
	}
	m.mu.Lock()
	s := m.sessions[parent]
	m.mu.Unlock()
	var c *child
	if s != nil {
		c = s.childByID(id)
	}
	if c == nil {
		return nil, nil, true, fmt.Errorf("%w: %s is no subagent session of an open session", agent.ErrInvalidParams, id)
	}
	return s, c, true, nil
}

// restricted is the error for a request about session id other than a
// cancel: ErrRestricted for a live child, -32602 for an id that is a
// child's but no live child's, nil for another id.
func (m *Manager) restricted(id, what string) error {
	s, _, ok, err := m.child(id)
	switch {
	case !ok:
		return nil
	case err != nil:
		return err
	}
	return fmt.Errorf("%w: %s is a subagent session of %s, which it belongs to: ACP lets a client ask no %s of it", ErrRestricted, id, s.id, what)
}

// cancelChild is session/cancel of a child session: only the child stops,
// where its agent can stop it alone. ok is false for an id that is no
// child's.
func (m *Manager) cancelChild(c *Conn, id string) (ok bool) {
	s, ch, ok, err := m.child(id)
	if !ok {
		return false
	}
	switch {
	case err != nil:
		m.log.Debug("ignoring a cancel of an unknown subagent session", "session", id)
	case c != nil && c.owns(s) != nil:
		m.log.Debug("ignoring a cancel from a connection the session is not attached to", "session", id)
	default:
		s.cancelChild(ch)
	}
	return true
}
