package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// Entry is a transcript entry as the Accumulator makes it, before encoding.
type Entry struct {
	Seq int64
	// Session is the native id of the child session the entry belongs to
	// ("" for the session's own; see persist.Entry.Session).
	Session string
	Draft   int64 // the checkpoint it belongs to; 0 for a final entry
	Update  acp.SessionUpdate
	// Raw, when set instead of Update, is an update of a kind ACP's types
	// here don't know, recorded as it came (Accumulator.Raw).
	Raw json.RawMessage
}

// Encode encodes entries for the store. A large message chunk comes as
// Parts (see encodeChunk), which only a persist.Writer takes; Joined makes
// an entry of one piece.
func Encode(es []Entry) ([]persist.Entry, error) {
	out := make([]persist.Entry, len(es))
	for i, e := range es {
		out[i] = persist.Entry{Seq: e.Seq, Draft: e.Draft, Session: e.Session}
		if e.Raw != nil {
			out[i].Update = e.Raw
			continue
		}
		if parts, ok := encodeChunk(e.Update); ok {
			out[i].Parts = parts
		} else if b, err := json.Marshal(e.Update); err == nil {
			out[i].Update = b
		} else {
			return nil, fmt.Errorf("encoding transcript entry: %w", err)
		}
		if tc := e.Update.ToolCall; tc != nil {
			out[i].Tool = string(tc.ToolCallId)
		}
	}
	return out, nil
}

// Joined is e with its Parts, if any, joined into Update.
func Joined(e persist.Entry) persist.Entry {
	if e.Parts != nil {
		e.Update, e.Parts = bytes.Join(e.Parts, nil), nil
	}
	return e
}

// An Accumulator folds a session's live updates into complete transcript
// entries: the chunks of one message merged (consecutive text joined), a
// tool call merged into its final state, and the latest plan of a turn.
// It is not safe for concurrent use; the session serialises calls.
type Accumulator struct {
	nextSeq *int64 // shared with its children's (Child)
	newID   func() string
	session string // the child session whose entries it makes, "" for the session's own

	msg      *message              // the message being streamed, if any
	tools    map[string]*toolEntry // tool calls not yet completed or failed
	finished map[string]*toolEntry // this turn's finished tool calls, for late updates
	plan     *planEntry            // this turn's plan, if any

	compactions map[acp.CompactionId]*compactionEntry // this turn's compactions
}

type message struct {
	kind   string // user_message_chunk, agent_message_chunk, agent_thought_chunk
	id     string
	seq    int64
	blocks []acp.ContentBlock
}

type toolEntry struct {
	seq  int64
	call acp.SessionUpdateToolCall
}

type planEntry struct {
	seq  int64
	plan acp.SessionUpdatePlan
}

// NewAccumulator returns an Accumulator whose entries are numbered from
// nextSeq and whose new messages get ids from newID.
func NewAccumulator(nextSeq int64, newID func() string) *Accumulator {
	return newAccumulator(&nextSeq, newID, "")
}

func newAccumulator(nextSeq *int64, newID func() string, session string) *Accumulator {
	return &Accumulator{nextSeq: nextSeq, newID: newID, session: session, tools: make(map[string]*toolEntry), finished: make(map[string]*toolEntry), compactions: make(map[acp.CompactionId]*compactionEntry)}
}

// Child returns the Accumulator of a child session of a's (a subagent),
// which the agent calls native: its entries are numbered with a's, so
// that a replay keeps the order of both, and tagged with native.
func (a *Accumulator) Child(native string) *Accumulator {
	return newAccumulator(a.nextSeq, a.newID, native)
}

// Raw records an update of a kind ACP's types here don't know, as it came,
// after what came before it.
func (a *Accumulator) Raw(u json.RawMessage) []Entry {
	return a.tag([]Entry{{Seq: a.seq(), Raw: u}})
}

func (a *Accumulator) seq() int64 {
	*a.nextSeq++
	return *a.nextSeq - 1
}

// tag marks entries as the child session's of a, if a is a child's.
func (a *Accumulator) tag(es []Entry) []Entry {
	if a.session != "" {
		for i := range es {
			es[i].Session = a.session
		}
	}
	return es
}

// User records a user prompt as one complete message and returns the
// entries it completes.
func (a *Accumulator) User(blocks []acp.ContentBlock) []Entry {
	return a.UserAs(a.newID(), blocks)
}

// UserAs is User with the message's id.
func (a *Accumulator) UserAs(id string, blocks []acp.ContentBlock) []Entry {
	done := a.closeMessage()
	m := &message{kind: "user_message_chunk", id: id, seq: a.seq()}
	for _, b := range blocks {
		m.add(b)
	}
	return a.tag(append(done, m.entries()...))
}

// Add folds one live update. It returns the update to send to the client
// (message chunks without a messageId get the id of the message they
// belong to) and the entries that the update completed.
func (a *Accumulator) Add(u acp.SessionUpdate) (acp.SessionUpdate, []Entry) {
	out, done := a.add(u)
	return out, a.tag(done)
}

func (a *Accumulator) add(u acp.SessionUpdate) (acp.SessionUpdate, []Entry) {
	switch {
	case u.UserMessageChunk != nil:
		c := *u.UserMessageChunk
		done := a.chunk("user_message_chunk", c.Content, &c.MessageId)
		return acp.SessionUpdate{UserMessageChunk: &c}, done
	case u.AgentMessageChunk != nil:
		c := *u.AgentMessageChunk
		done := a.chunk("agent_message_chunk", c.Content, &c.MessageId)
		return acp.SessionUpdate{AgentMessageChunk: &c}, done
	case u.AgentThoughtChunk != nil:
		c := *u.AgentThoughtChunk
		done := a.chunk("agent_thought_chunk", c.Content, &c.MessageId)
		return acp.SessionUpdate{AgentThoughtChunk: &c}, done
	case u.ToolCall != nil:
		return u, append(a.closeMessage(), a.toolCall(*u.ToolCall)...)
	case u.ToolCallUpdate != nil:
		return u, a.toolUpdate(*u.ToolCallUpdate)
	case u.Plan != nil:
		a.setPlan(*u.Plan)
	case u.CompactionUpdate != nil, u.CompactionSummaryChunk != nil:
		return u, a.compaction(u)
	case u.SubagentUpdate != nil, u.SessionMessage != nil, u.SessionMessageChunk != nil: // each one, as it came: they patch what the last said
		return u, []Entry{{Seq: a.seq(), Update: u}}
	}
	return u, nil
}

// chunk adds a message chunk, starting a new message when the kind or the
// messageId changes, and stamps *id with the message's id.
func (a *Accumulator) chunk(kind string, b acp.ContentBlock, id **acp.MessageId) []Entry {
	var done []Entry
	if m := a.msg; m != nil && (m.kind != kind || (*id != nil && string(**id) != m.id)) {
		done = a.closeMessage()
	}
	if a.msg == nil {
		mid := a.newID()
		if *id != nil {
			mid = string(**id)
		}
		a.msg = &message{kind: kind, id: mid, seq: a.seq()}
	}
	a.msg.add(b)
	mid := acp.MessageId(a.msg.id)
	*id = &mid
	return done
}

func (a *Accumulator) closeMessage() []Entry {
	m := a.msg
	a.msg = nil
	if m == nil {
		return nil
	}
	return m.entries()
}

func (a *Accumulator) toolCall(c acp.SessionUpdateToolCall) []Entry {
	id := string(c.ToolCallId)
	if t, ok := a.tools[id]; ok {
		t.call = c // announced again: the newer announcement is the state
	} else {
		a.tools[id] = &toolEntry{seq: a.seq(), call: c}
	}
	return a.finishTool(id)
}

func (a *Accumulator) toolUpdate(u acp.SessionToolCallUpdate) []Entry {
	id := string(u.ToolCallId)
	t, ok := a.tools[id]
	switch {
	case ok:
	case a.finished[id] != nil: // updated after it finished: the whole call again, at its place
		done := *a.finished[id]
		t = &done
		a.tools[id] = t
	default:
		t = &toolEntry{seq: a.seq(), call: acp.SessionUpdateToolCall{ToolCallId: u.ToolCallId}}
		a.tools[id] = t
	}
	agent.FoldToolCall(&t.call, u)
	return a.finishTool(id)
}

// finishTool emits a tool call that has reached a final status.
func (a *Accumulator) finishTool(id string) []Entry {
	t := a.tools[id]
	if !terminal(t.call.Status) {
		return nil
	}
	delete(a.tools, id)
	a.finished[id] = t
	return []Entry{t.entry()}
}

func terminal(s acp.ToolCallStatus) bool {
	return s == acp.ToolCallStatusCompleted || s == acp.ToolCallStatusFailed
}

func (a *Accumulator) setPlan(p acp.SessionUpdatePlan) {
	if a.plan == nil {
		a.plan = &planEntry{seq: a.seq()}
	}
	a.plan.plan = p
}

// Unfinished returns a failing update for every tool call that has not
// reached a final status, for the session to send (and Add) when a turn
// ends without them.
func (a *Accumulator) Unfinished() []acp.SessionUpdate {
	var us []acp.SessionUpdate
	for _, t := range a.openTools() {
		us = append(us, acp.UpdateToolCall(t.call.ToolCallId,
			acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateRawOutput(map[string]any{"error": "the turn ended before the tool call finished"})))
	}
	return us
}

// Flush ends the turn: every open message, tool call and plan is returned
// as entries, in the order they started.
func (a *Accumulator) Flush() []Entry {
	done := a.closeMessage()
	for _, t := range a.openTools() {
		done = append(done, t.entry())
	}
	clear(a.tools)
	clear(a.finished) // a tool call id names a call within its turn
	if a.plan != nil {
		p := a.plan.plan
		done = append(done, Entry{Seq: a.plan.seq, Update: acp.SessionUpdate{Plan: &p}})
		a.plan = nil
	}
	done = append(done, a.compactionEntries()...)
	clear(a.compactions)
	sort.SliceStable(done, func(i, j int) bool { return done[i].Seq < done[j].Seq })
	return a.tag(done)
}

// Checkpoint returns, as drafts numbered n, what the running turn has
// streamed and not recorded yet: the open message so far, the open tool
// calls (failed, as they would be if the bridge stopped now) and the plan.
// It changes nothing; Flush's final entries replace the drafts on replay.
func (a *Accumulator) Checkpoint(n int64) []Entry {
	var es []Entry
	if a.msg != nil {
		es = a.msg.entries()
	}
	for _, t := range a.openTools() {
		c := t.call
		c.Status = acp.ToolCallStatusFailed
		c.RawOutput = map[string]any{"error": "the bridge stopped before the tool call finished"}
		es = append(es, Entry{Seq: t.seq, Update: acp.SessionUpdate{ToolCall: &c}})
	}
	if a.plan != nil {
		p := a.plan.plan
		es = append(es, Entry{Seq: a.plan.seq, Update: acp.SessionUpdate{Plan: &p}})
	}
	es = append(es, a.compactionEntries()...)
	for i := range es {
		es[i].Draft = n
	}
	sort.SliceStable(es, func(i, j int) bool { return es[i].Seq < es[j].Seq })
	return a.tag(es)
}

func (a *Accumulator) compactionEntries() []Entry {
	var es []Entry
	for _, c := range a.compactions {
		es = append(es, c.entry(a.newID))
	}
	return es
}

func (a *Accumulator) openTools() []*toolEntry {
	ts := make([]*toolEntry, 0, len(a.tools))
	for _, t := range a.tools {
		ts = append(ts, t)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].seq < ts[j].seq })
	return ts
}

func (t *toolEntry) entry() Entry {
	c := t.call
	return Entry{Seq: t.seq, Update: acp.SessionUpdate{ToolCall: &c}}
}

// add appends a block, joining consecutive text.
func (m *message) add(b acp.ContentBlock) { m.blocks = agent.AppendBlock(m.blocks, b) }

func (m *message) entries() []Entry {
	es := make([]Entry, len(m.blocks))
	for i, b := range m.blocks {
		es[i] = Entry{Seq: m.seq, Update: chunkUpdate(m.kind, m.id, b)}
	}
	return es
}

func chunkUpdate(kind, mid string, b acp.ContentBlock) acp.SessionUpdate {
	id := acp.MessageId(mid)
	switch kind {
	case "user_message_chunk":
		return acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: b, MessageId: &id}}
	case "agent_thought_chunk":
		return acp.SessionUpdate{AgentThoughtChunk: &acp.SessionUpdateAgentThoughtChunk{Content: b, MessageId: &id}}
	}
	return acp.SessionUpdate{AgentMessageChunk: &acp.SessionUpdateAgentMessageChunk{Content: b, MessageId: &id}}
}

// Replay orders stored entries for session/load: by start, a tool call
// recorded more than once in a turn (updated after it finished, or
// checkpointed) only once, in its last state at its first place, and of a
// checkpointed message or plan only its final entries, or its last draft
// if the bridge stopped before the turn ended. A tool call id names a call
// within its turn: agents number their calls afresh (after a restart, say).
// The updates stay encoded. Child sessions (subagents) are flattened, as a
// client that takes no subagents is shown them live: their tool calls are
// the session's, and their announcements, their messages and the messages
// between sessions are left out (ReplayTree keeps them).
func Replay(entries []persist.Entry) []json.RawMessage {
	return flatten(ReplayTree(entries))
}

// flatten is a replay tree as a client that takes no subagents is shown
// it: the session's own updates and its children's tool calls, without
// announcements or messages between sessions.
func flatten(tree []Replayed) []json.RawMessage {
	var out []json.RawMessage
	for _, r := range tree {
		if r.Session == "" && !bytes.Contains(r.Update, subagentKey) && !bytes.Contains(r.Update, messageKey) || r.Session != "" && r.Tool {
			out = append(out, r.Update)
		}
	}
	return out
}

// Replayed is one update of a replay, and the session it belongs to: the
// native id of a child session, "" for the session's own.
type Replayed struct {
	Session string
	Tool    bool // a tool call
	Update  json.RawMessage
}

// ReplayTree is Replay with the child sessions' updates kept: each with
// its child's native id, and their announcements (subagent_update, whose
// sessionId is the native id too) on the session's own.
func ReplayTree(entries []persist.Entry) []Replayed {
	sorted := dropSuperseded(entries)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	out := make([]Replayed, 0, len(sorted))
	type key struct{ session, tool string }
	toolAt := make(map[key]int)
	for _, e := range sorted {
		if e.Session == "" && bytes.Contains(e.Update, userChunkKey) { // a turn begins
			clear(toolAt)
		}
		if e.Tool != "" {
			k := key{e.Session, e.Tool}
			if i, ok := toolAt[k]; ok {
				out[i].Update = e.Update
				continue
			}
			toolAt[k] = len(out)
		}
		out = append(out, Replayed{Session: e.Session, Tool: e.Tool != "", Update: e.Update})
	}
	return out
}

// subagentKey marks a child session's announcement, messageKey a message
// between sessions or a chunk of one (see userChunkKey).
var (
	subagentKey = []byte(`"sessionUpdate":"subagent_update"`)
	messageKey  = []byte(`"sessionUpdate":"session_message`)
	planKey     = []byte(`"sessionUpdate":"plan"`)
)

// userChunkKey marks a user message's entry: in encoded JSON these bytes
// can only be the key itself (quotes inside strings are escaped).
var userChunkKey = []byte(`"sessionUpdate":"user_message_chunk"`)

// dropSuperseded returns a copy of entries without the drafts of messages
// and plans that a later draft or final entries replaced. (Tool calls need
// nothing: their last entry wins.)
func dropSuperseded(entries []persist.Entry) []persist.Entry {
	type latest struct {
		final bool
		draft int64
	}
	var bySeq map[int64]latest
	for _, e := range entries {
		if e.Draft == 0 || e.Tool != "" {
			continue
		}
		if bySeq == nil {
			bySeq = make(map[int64]latest)
		}
		l := bySeq[e.Seq]
		l.draft = max(l.draft, e.Draft)
		bySeq[e.Seq] = l
	}
	if bySeq == nil { // no drafts: the usual case
		return append([]persist.Entry(nil), entries...)
	}
	for _, e := range entries {
		if l, ok := bySeq[e.Seq]; ok && e.Draft == 0 && e.Tool == "" {
			l.final = true
			bySeq[e.Seq] = l
		}
	}
	out := make([]persist.Entry, 0, len(entries))
	for _, e := range entries {
		if l, ok := bySeq[e.Seq]; ok && e.Tool == "" && (l.final && e.Draft != 0 || !l.final && e.Draft != l.draft) {
			continue
		}
		out = append(out, e)
	}
	return out
}

// MaxSeq is the largest Seq in entries, so that a reopened session's
// Accumulator numbers on from it.
func MaxSeq(entries []persist.Entry) int64 {
	var m int64
	for _, e := range entries {
		m = max(m, e.Seq)
	}
	return m
}
