package bridge

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

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
		return s.sendNative(updates, ReplayTree(entries))
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

// sendNative sends the agent's own history with what the bridge recorded
// beside it (tree): each child's announcement and updates right after the
// tool call that started it (any whose call the history lacks after the
// history), then the latest plan. The recorded announcements stand for
// any the history makes, which have no child's updates under them and
// name the child by the agent's id, not the bridge's (a session recorded
// before the bridge kept its subagents replays none).
// s.sendMu must be held.
func (s *Session) sendNative(updates []acp.SessionUpdate, tree []Replayed) error {
	parts, order, plan := bySpawn(tree)
	updates = slices.DeleteFunc(slices.Clone(updates), isSubagentTraffic)
	acc := NewAccumulator(1, newID) // messages get ids, as live ones do
	for _, u := range updates {
		out, _ := acc.Add(u)
		for _, o := range forClient(out, s.caps()) {
			s.send(o)
		}
		if call := toolCallOf(u); call != "" && parts[call] != nil {
			if err := s.sendTree(parts[call]); err != nil {
				return err
			}
			delete(parts, call)
		}
	}
	for _, call := range order {
		if part := parts[call]; part != nil {
			if err := s.sendTree(part); err != nil {
				return err
			}
		}
	}
	if plan != nil {
		return s.sendRaw(s.id, []json.RawMessage{plan})
	}
	return nil
}

// bySpawn cuts a tree recorded beside the agent's own history into its
// children's parts, each keyed by the tool call that started (or ran
// again) its child, as its announcement says (agent.SubagentOf), in the
// order they came; and finds the session's latest plan. A message between
// sessions goes with the part before it.
func bySpawn(tree []Replayed) (parts map[string][]Replayed, order []string, plan json.RawMessage) {
	parts = make(map[string][]Replayed)
	callOf := make(map[string]string) // by child: the call of its latest part
	current := ""
	for _, r := range tree {
		switch {
		case r.Session == "" && bytes.Contains(r.Update, planKey):
			plan = r.Update
			continue
		case r.Session == "" && isSubagentEntry(r.Update):
			child, call := announced(r.Update)
			if call == "" {
				call = cmp.Or(callOf[child], "\x00"+child)
			}
			callOf[child], current = call, call
		case r.Session != "":
			current = cmp.Or(callOf[r.Session], "\x00"+r.Session)
		}
		if _, ok := parts[current]; !ok {
			order = append(order, current)
		}
		parts[current] = append(parts[current], r)
	}
	return parts, order, plan
}

// announced is the child an encoded subagent_update names, and the tool
// call its _meta says started it ("" if none).
func announced(raw json.RawMessage) (child, call string) {
	var u struct {
		SessionID string `json:"sessionId"`
		Meta      struct {
			Bridge struct {
				ToolCallID string `json:"toolCallId"`
			} `json:"acpbridge"`
		} `json:"_meta"`
	}
	json.Unmarshal(raw, &u)
	return u.SessionID, u.Meta.Bridge.ToolCallID
}

// toolCallOf is the id of the tool call u starts or updates, or "".
func toolCallOf(u acp.SessionUpdate) string {
	switch {
	case u.ToolCall != nil:
		return string(u.ToolCall.ToolCallId)
	case u.ToolCallUpdate != nil:
		return string(u.ToolCallUpdate.ToolCallId)
	}
	return ""
}

// isSubagentTraffic: u announces a child, or is a message between
// sessions.
func isSubagentTraffic(u acp.SessionUpdate) bool {
	return u.SubagentUpdate != nil || u.SessionMessage != nil || u.SessionMessageChunk != nil
}

// besideHistory are the entries among es that a session whose agent
// keeps its history records (--persist auto): what no agent's history
// holds, its plans and its subagents (their announcements, the messages
// between sessions and the children's own updates).
func besideHistory(es []Entry) []Entry {
	var out []Entry
	for _, e := range es {
		if e.Update.Plan != nil || e.Session != "" || isSubagentTraffic(e.Update) {
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
