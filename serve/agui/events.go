package agui

import (
	"encoding/json"
	"maps"
	"strconv"

	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// event is one AG-UI 1.0 event (@ag-ui/core's EventSchema): the fields
// of every event type the bridge sends, each set only for the types that
// have it.
type event struct {
	Type            string     `json:"type"`
	ThreadID        string     `json:"threadId,omitempty"`
	RunID           string     `json:"runId,omitempty"`
	MessageID       string     `json:"messageId,omitempty"`
	Role            string     `json:"role,omitempty"`
	Delta           any        `json:"delta,omitempty"` // text, or a JSON Patch for STATE_DELTA
	ToolCallID      string     `json:"toolCallId,omitempty"`
	ToolCallName    string     `json:"toolCallName,omitempty"`
	ParentMessageID string     `json:"parentMessageId,omitempty"`
	Content         any        `json:"content,omitempty"`
	Snapshot        any        `json:"snapshot,omitempty"`
	Messages        *[]message `json:"messages,omitempty"`
	Outcome         *outcome   `json:"outcome,omitempty"`
	Result          any        `json:"result,omitempty"`
	Usage           []usage    `json:"usage,omitempty"`
	Message         string     `json:"message,omitempty"`
	Code            string     `json:"code,omitempty"`
	Name            string     `json:"name,omitempty"`         // CUSTOM
	Value           any        `json:"value,omitempty"`        // CUSTOM
	ActivityType    string     `json:"activityType,omitempty"` // ACTIVITY_SNAPSHOT
	Replace         *bool      `json:"replace,omitempty"`      // ACTIVITY_SNAPSHOT
}

// outcome is RUN_FINISHED's outcome: success, interrupt or cancelled.
type outcome struct {
	Type       string      `json:"type"`
	Interrupts []interrupt `json:"interrupts,omitempty"`
	// PendingToolCallIDs is empty on success: every tool call is the
	// agent's, none the application's to answer.
	PendingToolCallIDs *[]string `json:"pendingToolCallIds,omitempty"`
}

// succeeded is the success outcome.
func succeeded() *outcome { return &outcome{Type: "success", PendingToolCallIDs: &[]string{}} }

// interrupt is one thing a run waits for: here, a permission ask.
type interrupt struct {
	ID             string         `json:"id"`
	Reason         string         `json:"reason"`
	Message        string         `json:"message,omitempty"`
	ToolCallID     string         `json:"toolCallId,omitempty"`
	ResponseSchema map[string]any `json:"responseSchema,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
}

// usage is AG-UI's TokenUsage.
type usage struct {
	InputTokens       int  `json:"inputTokens"`
	OutputTokens      int  `json:"outputTokens"`
	TotalTokens       int  `json:"totalTokens"`
	ReasoningTokens   *int `json:"reasoningTokens,omitempty"`
	CachedInputTokens *int `json:"cachedInputTokens,omitempty"`
}

// message is an AG-UI message the bridge sends (MESSAGES_SNAPSHOT).
type message struct {
	ID           string     `json:"id"`
	Role         string     `json:"role"`
	Content      any        `json:"content,omitempty"`
	ToolCalls    []toolCall `json:"toolCalls,omitempty"`
	ToolCallID   string     `json:"toolCallId,omitempty"`
	Error        string     `json:"error,omitempty"`
	ActivityType string     `json:"activityType,omitempty"` // role activity
}

// toolCall is an assistant message's tool call.
type toolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// segment is what a run's request tells the translator of the segment
// it streams.
type segment struct {
	threadID, runID string
	state           any   // the run's input state, which a plan snapshot keeps
	preface         []any // events after RUN_STARTED (MESSAGES_SNAPSHOT)
}

// run translates one turn's ACP events into AG-UI runs: a run per
// segment (the turn's first, and one per resume after a permission ask,
// which ends a run with an interrupt). Agent message chunks are text
// messages (one per ACP message id, or per run of chunks), thoughts
// reasoning messages, tool calls tool calls named by their kind with their
// raw input as arguments and their output (content, raw output) as a
// result, the plan the state's "plan", a notice a CUSTOM event, a
// compaction an activity (web.NoticeOf, web.Compactions), and a subagent
// an activity of type "subagent" with its work so far (web.Subagents),
// whose permission ask is an interrupt like the session's own. It is not
// safe for concurrent use.
type run struct {
	sessionID       string
	seg             segment
	text, reasoning web.Span
	tools           web.Tools
	started, ended  map[acp.ToolCallId]bool // TOOL_CALL_START and _END sent, in this run
	asked           map[acp.ToolCallId]*web.Ask
	planSent        bool // a STATE_SNAPSHOT went out in this run
	compactions     web.Compactions
	subagents       web.Subagents
	seq             int
}

func newRun(sessionID string) *run {
	return &run{sessionID: sessionID, asked: map[acp.ToolCallId]*web.Ask{}, compactions: web.Compactions{}}
}

var _ web.Translator = (*run)(nil)

// Open begins a run.
func (t *run) Open(info any) []any {
	t.seg, _ = info.(segment)
	t.started, t.ended, t.planSent = map[acp.ToolCallId]bool{}, map[acp.ToolCallId]bool{}, false
	out := []any{event{Type: "RUN_STARTED", ThreadID: t.seg.threadID, RunID: t.seg.runID}}
	return append(out, t.seg.preface...)
}

// Update is the events one session update adds.
func (t *run) Update(u acp.SessionUpdate) []any {
	switch {
	case u.AgentMessageChunk != nil:
		return t.textChunk(u.AgentMessageChunk.MessageId, u.AgentMessageChunk.Content)
	case u.AgentThoughtChunk != nil:
		return t.thoughtChunk(u.AgentThoughtChunk.MessageId, u.AgentThoughtChunk.Content)
	case u.ToolCall != nil:
		return t.toolCallUpdate(web.AsToolUpdate(u.ToolCall))
	case u.ToolCallUpdate != nil:
		return t.toolCallUpdate(u.ToolCallUpdate)
	case u.Plan != nil:
		return append(t.closeMessages(), t.plan(u.Plan.Entries))
	case u.Notice != nil:
		return append(t.closeMessages(), event{Type: "CUSTOM", Name: "notice", Value: web.NoticeOf(u.Notice)})
	case u.SubagentUpdate != nil:
		return append(t.closeMessages(), subagentActivity(t.subagents.Announce(u.SubagentUpdate)))
	case u.SessionMessage != nil:
		if d, ok := t.subagents.Message(u.SessionMessage); ok {
			return append(t.closeMessages(), subagentActivity(d))
		}
		return nil
	}
	if c, ok := t.compactions.Fold(u); ok {
		return append(t.closeMessages(), compactionActivity(c))
	}
	return nil
}

// Child is the events an update of subagent id adds: its activity, whole.
func (t *run) Child(id string, u acp.SessionUpdate) []any {
	if d, ok := t.subagents.Fold(id, u); ok {
		return append(t.closeMessages(), subagentActivity(d))
	}
	return nil
}

// subagentActivity is a subagent's state as an AG-UI activity, whose
// message id is the subagent's session id: the whole of it, replacing
// what the message had.
func subagentActivity(d web.SubagentData) event {
	replace := true
	return event{Type: "ACTIVITY_SNAPSHOT", MessageID: d.ID, ActivityType: "subagent", Content: d, Replace: &replace}
}

// compactionActivity is a compaction's state as an AG-UI activity: the
// whole of it, replacing what the message had.
func compactionActivity(c web.CompactionData) event {
	replace := true
	return event{Type: "ACTIVITY_SNAPSHOT", MessageID: c.ID, ActivityType: "compaction", Content: c, Replace: &replace}
}

func (t *run) textChunk(acpID *acp.MessageId, c acp.ContentBlock) []any {
	if c.Text == nil || c.Text.Text == "" {
		return nil
	}
	var out []any
	if t.text.ID == "" || (web.Deref(acpID) != "" && t.text.ACPID != "" && web.Deref(acpID) != t.text.ACPID) {
		out = t.closeMessages()
		t.seq++
		t.text = web.Span{ID: "m_" + t.seg.runID + "_" + strconv.Itoa(t.seq), ACPID: web.Deref(acpID)}
		out = append(out, event{Type: "TEXT_MESSAGE_START", MessageID: t.text.ID, Role: "assistant"})
	}
	return append(out, event{Type: "TEXT_MESSAGE_CONTENT", MessageID: t.text.ID, Delta: c.Text.Text})
}

func (t *run) thoughtChunk(acpID *acp.MessageId, c acp.ContentBlock) []any {
	if c.Text == nil || c.Text.Text == "" {
		return nil
	}
	var out []any
	if t.reasoning.ID == "" || (web.Deref(acpID) != "" && t.reasoning.ACPID != "" && web.Deref(acpID) != t.reasoning.ACPID) {
		out = t.closeMessages()
		t.seq++
		t.reasoning = web.Span{ID: "r_" + t.seg.runID + "_" + strconv.Itoa(t.seq), ACPID: web.Deref(acpID)}
		out = append(out, event{Type: "REASONING_START", MessageID: t.reasoning.ID},
			event{Type: "REASONING_MESSAGE_START", MessageID: t.reasoning.ID, Role: "reasoning"})
	}
	return append(out, event{Type: "REASONING_MESSAGE_CONTENT", MessageID: t.reasoning.ID, Delta: c.Text.Text})
}

// closeMessages ends the open text and reasoning messages.
func (t *run) closeMessages() []any {
	var out []any
	if t.text.ID != "" {
		out = append(out, event{Type: "TEXT_MESSAGE_END", MessageID: t.text.ID})
		t.text = web.Span{}
	}
	if t.reasoning.ID != "" {
		out = append(out, event{Type: "REASONING_MESSAGE_END", MessageID: t.reasoning.ID},
			event{Type: "REASONING_END", MessageID: t.reasoning.ID})
		t.reasoning = web.Span{}
	}
	return out
}

// toolCallUpdate merges an update into its tool call: its arguments once
// known (or once it runs), its result once it ends.
func (t *run) toolCallUpdate(u *acp.SessionToolCallUpdate) []any {
	tool, _ := t.tools.Start(u.ToolCallId)
	tool.Merge(u)
	if tool.Done {
		return nil
	}
	st := acp.ToolCallStatus("")
	if u.Status != nil {
		st = *u.Status
	}
	var out []any
	if !tool.InputSent { // a call is started and ended in one run, never again
		out = t.startTool(u.ToolCallId, tool)
		if u.RawInput != nil || (st != "" && st != acp.ToolCallStatusPending) {
			out = append(out, t.endTool(u.ToolCallId, tool)...)
		}
	}
	if st == acp.ToolCallStatusCompleted || st == acp.ToolCallStatusFailed {
		tool.Done = true
		out = append(out, event{Type: "TOOL_CALL_RESULT", MessageID: "tr_" + string(u.ToolCallId),
			ToolCallID: string(u.ToolCallId), Role: "tool", Content: t.result(u.ToolCallId, tool, st)})
	}
	return out
}

// startTool opens a tool call not yet open in this run.
func (t *run) startTool(id acp.ToolCallId, tool *web.Tool) []any {
	if t.started[id] {
		return nil
	}
	t.started[id] = true
	out := t.closeMessages()
	return append(out, event{Type: "TOOL_CALL_START", ToolCallID: string(id), ToolCallName: web.ToolName(tool.Kind)})
}

// endTool sends a started tool call's arguments and closes it.
func (t *run) endTool(id acp.ToolCallId, tool *web.Tool) []any {
	if !t.started[id] || t.ended[id] {
		return nil
	}
	t.ended[id] = true
	var out []any
	if !tool.InputSent {
		tool.InputSent = true
		args, _ := json.Marshal(orEmpty(tool.RawInput))
		out = append(out, event{Type: "TOOL_CALL_ARGS", ToolCallID: string(id), Delta: string(args)})
	}
	return append(out, event{Type: "TOOL_CALL_END", ToolCallID: string(id)})
}

// result is a finished tool call's result as JSON text: its title, kind,
// status, content (text, diffs, terminals as ACP has them) and raw output,
// or its error; denied if its permission ask was rejected.
func (t *run) result(id acp.ToolCallId, tool *web.Tool, st acp.ToolCallStatus) string {
	r := map[string]any{"title": tool.Title, "kind": web.ToolName(tool.Kind), "status": st}
	maps.Copy(r, tool.Output())
	if st == acp.ToolCallStatusFailed {
		r["error"] = tool.Failure()
		if a := t.asked[id]; a != nil && a.Rejected() {
			r["denied"] = true
		}
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// plan is the plan as the state's "plan": a snapshot of the run's input
// state with it the first time in a run, then a patch replacing it.
func (t *run) plan(entries []acp.PlanEntry) event {
	if entries == nil {
		entries = []acp.PlanEntry{}
	}
	if t.planSent {
		return event{Type: "STATE_DELTA", Delta: []map[string]any{{"op": "replace", "path": "/plan", "value": entries}}}
	}
	t.planSent = true
	snap := map[string]any{}
	if m, ok := t.seg.state.(map[string]any); ok {
		maps.Copy(snap, m)
	}
	snap["plan"] = entries
	return event{Type: "STATE_SNAPSHOT", Snapshot: snap}
}

// closeAll ends what is open before a run finishes.
func (t *run) closeAll() []any {
	out := t.closeMessages()
	for _, id := range t.tools.IDs() {
		out = append(out, t.endTool(id, t.tools.Get(id))...)
	}
	return out
}

// Ask is a permission ask: it ends the run with an interrupt, answered by
// the next run's resume entry {"optionId": …} (an option of the ask's,
// which the response schema lists) or "cancelled".
//
// A subagent's ask is its activity, the call approval-requested, and an
// interrupt whose toolCallId is the subagent's call and whose metadata's
// "subagent" is the subagent's session id.
func (t *run) Ask(a *web.Ask) []any {
	tc := a.Req.ToolCall
	var out []any
	title := ""
	meta := map[string]any{"options": a.Req.Options}
	if d, ok := t.subagents.Ask(a); ok {
		out = append(t.closeMessages(), subagentActivity(d))
		title = t.subagents.Tool(a.Child, tc.ToolCallId).Title
		meta["subagent"] = a.Child
	} else {
		upd := &acp.SessionToolCallUpdate{ToolCallId: tc.ToolCallId, Title: tc.Title, Kind: tc.Kind, Content: tc.Content,
			Locations: tc.Locations, RawInput: tc.RawInput}
		out = t.toolCallUpdate(upd)
		t.asked[tc.ToolCallId] = a
		title = t.tools.Get(tc.ToolCallId).Title
	}
	out = append(out, t.closeAll()...)
	ids := make([]string, 0, len(a.Req.Options))
	for _, o := range a.Req.Options {
		ids = append(ids, string(o.OptionId))
	}
	in := interrupt{ID: a.ID, Reason: "permission", Message: title, ToolCallID: string(tc.ToolCallId),
		ResponseSchema: map[string]any{"type": "object", "required": []string{"optionId"}, "additionalProperties": false,
			"properties": map[string]any{"optionId": map[string]any{"type": "string", "enum": ids}}},
		Metadata: meta}
	return append(out, event{Type: "RUN_FINISHED", ThreadID: t.seg.threadID, RunID: t.seg.runID,
		Outcome: &outcome{Type: "interrupt", Interrupts: []interrupt{in}}})
}

// End ends the turn's last run: success (with its stop reason and usage),
// cancelled, or RUN_ERROR. Tool calls the turn left open get a result
// saying so.
func (t *run) End(e web.TurnEnd) []any {
	out := append(t.closeAll(), t.closeTools(e)...)
	switch {
	case e.Err != nil:
		return append(out, event{Type: "RUN_ERROR", Message: e.Err.Error(), Code: "agent_error"})
	case e.Resp.StopReason == acp.StopReasonCancelled:
		return append(out, event{Type: "RUN_FINISHED", ThreadID: t.seg.threadID, RunID: t.seg.runID,
			Outcome: &outcome{Type: "cancelled"}})
	}
	ev := event{Type: "RUN_FINISHED", ThreadID: t.seg.threadID, RunID: t.seg.runID,
		Outcome: succeeded(), Result: map[string]any{"stopReason": e.Resp.StopReason, "sessionId": t.sessionID}}
	if u := e.Resp.Usage; u != nil {
		ev.Usage = []usage{{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, TotalTokens: u.TotalTokens,
			ReasoningTokens: u.ThoughtTokens, CachedInputTokens: u.CachedReadTokens}}
	}
	return append(out, ev)
}

// closeTools gives the tool calls the turn left unfinished a result that
// says so.
func (t *run) closeTools(e web.TurnEnd) []any {
	var out []any
	for _, id := range t.tools.Unfinished() {
		tool := t.tools.Get(id)
		why := e.Unfinished()
		b, _ := json.Marshal(map[string]any{"title": tool.Title, "kind": web.ToolName(tool.Kind), "status": "unfinished", "error": why})
		out = append(out, event{Type: "TOOL_CALL_RESULT", MessageID: "tr_" + string(id), ToolCallID: string(id),
			Role: "tool", Content: string(b)})
	}
	return out
}

// orEmpty is v, or an empty object for nil.
func orEmpty(v any) any {
	if v == nil {
		return map[string]any{}
	}
	return v
}
