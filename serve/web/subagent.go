package web

import (
	"strings"

	"github.com/coder/acp-go-sdk"
)

// Subagents on the web edges. The web edge's connection takes them
// (clientCapabilities.subagents), so the bridge sends a child session of
// a session as ACP has it: announced by a subagent_update on the parent
// (the _meta's acpbridge.toolCallId names the parent's tool call that
// started it), then its updates and permission asks under the child's
// session id, which the peer routes to the parent's Session (Update.Child,
// Ask.Child). Subagents folds a child's announcement and updates into its
// state so far, SubagentData, which both web protocols send whole each
// time it changes, keyed by the child's session id: the AI SDK stream as a
// data-subagent part, AG-UI as an ACTIVITY_SNAPSHOT of activity type
// "subagent". A child's ask is answered as the session's own are.

// Update is one update a Session brings: the session's own, or (Child
// set) that of a subagent of it, Child its session id.
type Update struct {
	Child string
	acp.SessionUpdate
}

// SubagentData is what a web client is told of a subagent: who it is,
// which of the parent's tool calls started it, its state, and its work
// so far as parts shaped like the AI SDK's UIMessage parts (text,
// reasoning, dynamic-tool, data-plan; and prompt and message, the task it
// was given and the messages between it and its parent), so that a client
// draws them as it draws a message's.
type SubagentData struct {
	ID          string         `json:"id"`
	ToolCallID  string         `json:"toolCallId,omitempty"`
	Title       string         `json:"title,omitempty"`
	Description string         `json:"description,omitempty"`
	State       string         `json:"state,omitempty"` // running, idle, requires_action, unknown
	StopReason  string         `json:"stopReason,omitempty"`
	Error       string         `json:"error,omitempty"`
	Parts       []SubagentPart `json:"parts"`
}

// SubagentPart is one part of a subagent's work: the fields of each type
// are the AI SDK's UIMessage part's of that type.
type SubagentPart struct {
	Type string `json:"type"`
	Text string `json:"text,omitempty"`

	ToolCallID   string            `json:"toolCallId,omitempty"`
	ToolName     string            `json:"toolName,omitempty"`
	Title        string            `json:"title,omitempty"`
	State        string            `json:"state,omitempty"`
	Input        any               `json:"input,omitempty"`
	Output       any               `json:"output,omitempty"`
	ErrorText    string            `json:"errorText,omitempty"`
	ToolMetadata map[string]any    `json:"toolMetadata,omitempty"`
	Approval     *SubagentApproval `json:"approval,omitempty"`

	Direction string `json:"direction,omitempty"` // a message's: "in" (to the subagent) or "out"
	Data      any    `json:"data,omitempty"`      // a data-plan's {entries}
}

// SubagentApproval is a subagent's tool call's permission ask: its id,
// and once answered whether it was approved.
type SubagentApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved,omitempty"`
}

// Subagents folds a turn's (or a replay's) subagents, by session id.
type Subagents struct {
	byID     map[string]*subagent
	messages map[acp.MessageId]*subagent // a session_message's subagent, by its id
}

// subagent is one child's state: what was said of it, and its work, in
// order.
type subagent struct {
	data  SubagentData
	parts []*subagentEntry
	tools Tools
	asked map[acp.ToolCallId]*Ask
}

// subagentEntry is one part of a child's work as it is kept: a text, a
// tool call (named by id, its state in tools), or the plan.
type subagentEntry struct {
	part  SubagentPart
	acpID string         // the ACP message id a text streams
	tool  acp.ToolCallId // for a dynamic-tool
	msgID acp.MessageId  // for a message
}

// child is the subagent with id, made if it is new.
func (ss *Subagents) child(id string) *subagent {
	if ss.byID == nil {
		ss.byID, ss.messages = map[string]*subagent{}, map[acp.MessageId]*subagent{}
	}
	c := ss.byID[id]
	if c == nil {
		c = &subagent{data: SubagentData{ID: id}, asked: map[acp.ToolCallId]*Ask{}}
		ss.byID[id] = c
	}
	return c
}

// Known reports whether id is a subagent announced here.
func (ss *Subagents) Known(id string) bool { return ss.byID[id] != nil }

// Announce folds a subagent_update of the parent's and returns the
// subagent's state.
func (ss *Subagents) Announce(u *acp.SessionSubagentUpdate) SubagentData {
	c := ss.child(string(u.SessionId))
	d := &c.data
	if u.Title != nil {
		d.Title = *u.Title
	}
	if u.Description != nil {
		d.Description = *u.Description
	}
	if id := parentToolCall(u.Meta); id != "" {
		d.ToolCallID = id
	}
	if u.State != nil {
		d.State, d.StopReason, d.Error = stateOf(u.State)
	}
	return c.snapshot()
}

// parentToolCall is the tool call a subagent_update's _meta names
// (agent.SubagentOf), or "".
func parentToolCall(meta map[string]any) string {
	m, _ := meta["acpbridge"].(map[string]any)
	id, _ := m["toolCallId"].(string)
	return id
}

// stateOf is a subagent's state as its name, stop reason and error.
func stateOf(st *acp.StateUpdate) (state, stop, errText string) {
	switch {
	case st.Running != nil:
		return "running", "", ""
	case st.Idle != nil:
		if st.Idle.Error != nil {
			errText = st.Idle.Error.Message
		}
		return "idle", Deref(st.Idle.StopReason), errText
	case st.RequiresAction != nil:
		return "requires_action", "", ""
	case st.Unknown != nil:
		return "unknown", "", ""
	case st.Other != nil:
		return st.Other.State, "", ""
	}
	return "", "", ""
}

// Message folds a session_message between the parent and a subagent into
// that subagent's parts; ok is false when it names no subagent known here.
func (ss *Subagents) Message(m *acp.SessionUpdateSessionMessage) (d SubagentData, ok bool) {
	c, dir := ss.messages[m.MessageId], ""
	if to := m.RecipientSessionId; to != nil && ss.Known(string(*to)) {
		c, dir = ss.byID[string(*to)], "in"
	} else if from := m.SenderSessionId; from != nil && ss.Known(string(*from)) {
		c, dir = ss.byID[string(*from)], "out"
	}
	if c == nil {
		return SubagentData{}, false
	}
	ss.messages[m.MessageId] = c
	e := c.message(m.MessageId, dir)
	if m.Content != nil {
		e.part.Text = textOf(m.Content)
	}
	return c.snapshot(), true
}

// message is the subagent's entry of message id, added if it is new.
func (c *subagent) message(id acp.MessageId, dir string) *subagentEntry {
	for _, e := range c.parts {
		if e.part.Type == "message" && e.msgID == id {
			if dir != "" {
				e.part.Direction = dir
			}
			return e
		}
	}
	e := &subagentEntry{part: SubagentPart{Type: "message", Direction: dir}, msgID: id}
	c.parts = append(c.parts, e)
	return e
}

// textOf joins the text of blocks.
func textOf(blocks []acp.ContentBlock) string {
	var b strings.Builder
	for _, c := range blocks {
		if c.Text != nil {
			b.WriteString(c.Text.Text)
		}
	}
	return b.String()
}

// Fold folds an update of subagent id's own and returns its state; ok
// is false for an update that changes nothing shown.
func (ss *Subagents) Fold(id string, u acp.SessionUpdate) (d SubagentData, ok bool) {
	c := ss.child(id)
	switch {
	case u.UserMessageChunk != nil:
		ok = c.say("prompt", nil, u.UserMessageChunk.Content)
	case u.AgentMessageChunk != nil:
		ok = c.say("text", u.AgentMessageChunk.MessageId, u.AgentMessageChunk.Content)
	case u.AgentThoughtChunk != nil:
		ok = c.say("reasoning", u.AgentThoughtChunk.MessageId, u.AgentThoughtChunk.Content)
	case u.ToolCall != nil:
		ok = c.toolCall(AsToolUpdate(u.ToolCall))
	case u.ToolCallUpdate != nil:
		ok = c.toolCall(u.ToolCallUpdate)
	case u.Plan != nil:
		ok = c.plan(u.Plan.Entries)
	}
	if !ok {
		return SubagentData{}, false
	}
	return c.snapshot(), true
}

// say adds text to the subagent's last part if it is of kind and streams
// the same ACP message, else as a new part.
func (c *subagent) say(kind string, acpID *acp.MessageId, b acp.ContentBlock) bool {
	if b.Text == nil || b.Text.Text == "" {
		return false
	}
	id := Deref(acpID)
	if n := len(c.parts); n > 0 {
		last := c.parts[n-1]
		if last.part.Type == kind && (id == "" || last.acpID == "" || id == last.acpID) {
			last.part.Text += b.Text.Text
			return true
		}
	}
	c.parts = append(c.parts, &subagentEntry{part: SubagentPart{Type: kind, Text: b.Text.Text}, acpID: id})
	return true
}

// toolCall folds a tool call update of the subagent's.
func (c *subagent) toolCall(u *acp.SessionToolCallUpdate) bool {
	tool, added := c.tools.Start(u.ToolCallId)
	if added {
		c.parts = append(c.parts, &subagentEntry{part: SubagentPart{Type: "dynamic-tool"}, tool: u.ToolCallId})
	}
	tool.Merge(u)
	return true
}

// plan keeps the subagent's plan, one part replaced as it changes.
func (c *subagent) plan(entries []acp.PlanEntry) bool {
	if entries == nil {
		entries = []acp.PlanEntry{}
	}
	data := map[string]any{"entries": entries}
	for _, e := range c.parts {
		if e.part.Type == "data-plan" {
			e.part.Data = data
			return true
		}
	}
	c.parts = append(c.parts, &subagentEntry{part: SubagentPart{Type: "data-plan", Data: data}})
	return true
}

// Ask folds a permission ask of a subagent's (a.Child) into its tool
// call's part, which is then approval-requested; ok is false for an ask of
// no subagent.
func (ss *Subagents) Ask(a *Ask) (d SubagentData, ok bool) {
	if a.Child == "" {
		return SubagentData{}, false
	}
	c := ss.child(a.Child)
	tc := a.Req.ToolCall
	c.toolCall(&acp.SessionToolCallUpdate{ToolCallId: tc.ToolCallId, Title: tc.Title, Kind: tc.Kind,
		Content: tc.Content, Locations: tc.Locations, RawInput: tc.RawInput})
	c.asked[tc.ToolCallId] = a
	return c.snapshot(), true
}

// Tool is what is known of subagent id's tool call, or nil.
func (ss *Subagents) Tool(id string, call acp.ToolCallId) *Tool {
	if c := ss.byID[id]; c != nil {
		return c.tools.Get(call)
	}
	return nil
}

// snapshot is the subagent's state, its parts as they are now.
func (c *subagent) snapshot() SubagentData {
	d := c.data
	d.Parts = make([]SubagentPart, 0, len(c.parts))
	for _, e := range c.parts {
		p := e.part
		if p.Type == "dynamic-tool" {
			p = c.toolPart(e.tool)
		}
		d.Parts = append(d.Parts, p)
	}
	return d
}

// toolPart is a tool call of the subagent's as a dynamic-tool part.
func (c *subagent) toolPart(id acp.ToolCallId) SubagentPart {
	tool := c.tools.Get(id)
	p := SubagentPart{Type: "dynamic-tool", ToolCallID: string(id), ToolName: ToolName(tool.Kind), Title: tool.Title,
		Input: tool.RawInput, ToolMetadata: map[string]any{"kind": ToolName(tool.Kind)}}
	if len(tool.Locations) > 0 {
		p.ToolMetadata["locations"] = tool.Locations
	}
	a := c.asked[id]
	if a != nil {
		p.Approval = &SubagentApproval{ID: a.ID}
		if answered, approved := a.Answer(); answered {
			p.Approval.Approved = &approved
		}
	}
	switch {
	case tool.Status == acp.ToolCallStatusCompleted:
		p.State, p.Output = "output-available", tool.Output()
	case tool.Status == acp.ToolCallStatusFailed && a != nil && a.Rejected():
		p.State = "output-denied"
	case tool.Status == acp.ToolCallStatusFailed:
		p.State, p.ErrorText = "output-error", tool.Failure()
	case a != nil && p.Approval.Approved == nil:
		p.State = "approval-requested"
	case a != nil:
		p.State = "approval-responded"
	case tool.RawInput != nil || tool.Status == acp.ToolCallStatusInProgress:
		p.State = "input-available"
	default:
		p.State = "input-streaming"
	}
	if p.Input == nil && p.State != "input-streaming" {
		p.Input = map[string]any{}
	}
	return p
}
