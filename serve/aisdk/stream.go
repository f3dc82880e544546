package aisdk

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// uiChunk is one chunk of the AI SDK's UI message stream (package ai,
// 5.x to 7.x; uiMessageChunkSchema): the fields of every chunk type the
// bridge sends, each set only for the types that have it.
type uiChunk struct {
	Type               string         `json:"type"`
	ID                 string         `json:"id,omitempty"`
	Delta              string         `json:"delta,omitempty"`
	MessageID          string         `json:"messageId,omitempty"`
	MessageMetadata    any            `json:"messageMetadata,omitempty"`
	ToolCallID         string         `json:"toolCallId,omitempty"`
	ToolName           string         `json:"toolName,omitempty"`
	Dynamic            bool           `json:"dynamic,omitempty"`
	ProviderExecuted   bool           `json:"providerExecuted,omitempty"`
	Title              string         `json:"title,omitempty"`
	Input              any            `json:"input,omitempty"`
	Output             any            `json:"output,omitempty"`
	ToolMetadata       map[string]any `json:"toolMetadata,omitempty"`
	ErrorText          string         `json:"errorText,omitempty"`
	ApprovalID         string         `json:"approvalId,omitempty"`
	ApprovalDescriptor any            `json:"approvalDescriptor,omitempty"`
	Data               any            `json:"data,omitempty"`
	URL                string         `json:"url,omitempty"`
	MediaType          string         `json:"mediaType,omitempty"`
	SourceID           string         `json:"sourceId,omitempty"`
	FinishReason       string         `json:"finishReason,omitempty"`
	Reason             string         `json:"reason,omitempty"`
}

// sseDone is the UI message stream's last frame, data: [DONE].
const sseDone = web.RawData("[DONE]")

// uiStream translates one turn's ACP events into UI message stream
// chunks: the assistant's reply is one UI message (messageID) across every
// segment of the turn. Agent message chunks are text parts (one per ACP
// message id, or per run of chunks), thoughts reasoning parts, tool calls
// dynamic tool parts the agent executes (providerExecuted) named by their
// kind, with title and kind kept, their raw input as input, and their
// content (text, diffs, terminals), raw output and locations as output; a
// permission ask is a tool approval request; the plan is one data-plan
// part, replaced as it changes; a notice is a data-notice part, a
// compaction a data-compaction part replaced as it changes (web.NoticeOf,
// web.Compactions); a subagent a data-subagent part replaced as it
// changes, and a subagent's permission ask a tool part of its own
// (web.Subagents, subagentAsk). It is not safe for concurrent use.
type uiStream struct {
	sessionID string
	messageID string

	text, reasoning web.Span
	tools           web.Tools
	asked           map[acp.ToolCallId]*web.Ask // the tool calls' permission asks
	compactions     web.Compactions
	subagents       web.Subagents
	childOf         map[acp.ToolCallId]string // a subagent's asked tool part (askedID) → the subagent
	seq             int                       // numbers the parts
}

func newUIStream(sessionID, messageID string) *uiStream {
	return &uiStream{sessionID: sessionID, messageID: messageID,
		asked: map[acp.ToolCallId]*web.Ask{}, compactions: web.Compactions{}, childOf: map[acp.ToolCallId]string{}}
}

var _ web.Translator = (*uiStream)(nil)

// Open begins a response: the message (the same one in every response of
// the turn) and a step.
func (t *uiStream) Open(any) []any {
	return []any{
		uiChunk{Type: "start", MessageID: t.messageID, MessageMetadata: map[string]any{"sessionId": t.sessionID}},
		uiChunk{Type: "start-step"},
	}
}

// Update is the chunks one session update adds.
func (t *uiStream) Update(u acp.SessionUpdate) []any {
	switch {
	case u.AgentMessageChunk != nil:
		return t.content(&t.text, "text", u.AgentMessageChunk.MessageId, u.AgentMessageChunk.Content)
	case u.AgentThoughtChunk != nil:
		return t.content(&t.reasoning, "reasoning", u.AgentThoughtChunk.MessageId, u.AgentThoughtChunk.Content)
	case u.ToolCall != nil:
		return t.toolCall(u.ToolCall)
	case u.ToolCallUpdate != nil:
		return t.toolCallUpdate(u.ToolCallUpdate)
	case u.Plan != nil:
		return append(t.closeParts(), uiChunk{Type: "data-plan", ID: "plan", Data: map[string]any{"entries": u.Plan.Entries}})
	case u.UsageUpdate != nil:
		return []any{uiChunk{Type: "message-metadata", MessageMetadata: map[string]any{
			"context": map[string]any{"used": u.UsageUpdate.Used, "size": u.UsageUpdate.Size}}}}
	case u.Notice != nil:
		return append(t.closeParts(), uiChunk{Type: "data-notice", Data: web.NoticeOf(u.Notice)})
	case u.SubagentUpdate != nil:
		return append(t.closeParts(), subagentChunk(t.subagents.Announce(u.SubagentUpdate)))
	case u.SessionMessage != nil:
		if d, ok := t.subagents.Message(u.SessionMessage); ok {
			return append(t.closeParts(), subagentChunk(d))
		}
		return nil
	}
	if c, ok := t.compactions.Fold(u); ok {
		return append(t.closeParts(), uiChunk{Type: "data-compaction", ID: c.ID, Data: c})
	}
	return nil
}

// content streams a message or thought chunk into p: text as deltas,
// images as file parts, links as sources.
func (t *uiStream) content(p *web.Span, kind string, acpID *acp.MessageId, c acp.ContentBlock) []any {
	switch {
	case c.Text != nil:
		if c.Text.Text == "" {
			return nil
		}
		out := t.openPart(p, kind, web.Deref(acpID))
		return append(out, uiChunk{Type: kind + "-delta", ID: p.ID, Delta: c.Text.Text})
	case c.Image != nil && kind == "text":
		url := c.Image.Data
		if url != "" {
			url = "data:" + c.Image.MimeType + ";base64," + url
		} else {
			url = web.Deref(c.Image.Uri)
		}
		return append(t.closeParts(), uiChunk{Type: "file", URL: url, MediaType: c.Image.MimeType})
	case c.ResourceLink != nil && kind == "text":
		t.seq++
		return append(t.closeParts(), uiChunk{Type: "source-url", SourceID: "src" + strconv.Itoa(t.seq),
			URL: c.ResourceLink.Uri, Title: c.ResourceLink.Name})
	}
	return nil
}

// openPart opens a text or reasoning part in p unless the one open there
// streams the same ACP message, closing any other part open first.
func (t *uiStream) openPart(p *web.Span, kind, acpID string) []any {
	if p.ID != "" && (acpID == "" || p.ACPID == "" || acpID == p.ACPID) {
		return nil
	}
	out := t.closeParts()
	t.seq++
	p.ID, p.ACPID = kind[:1]+strconv.Itoa(t.seq), acpID
	return append(out, uiChunk{Type: kind + "-start", ID: p.ID})
}

// closeParts ends the open text and reasoning parts.
func (t *uiStream) closeParts() []any {
	var out []any
	for _, p := range []struct {
		part *web.Span
		kind string
	}{{&t.text, "text"}, {&t.reasoning, "reasoning"}} {
		if p.part.ID != "" {
			out = append(out, uiChunk{Type: p.kind + "-end", ID: p.part.ID})
			*p.part = web.Span{}
		}
	}
	return out
}

// subagentChunk is a subagent's state as its data-subagent part.
func subagentChunk(d web.SubagentData) uiChunk {
	return uiChunk{Type: "data-subagent", ID: d.ID, Data: d}
}

// askedID is the id of the tool part of a subagent's tool call asked
// about: the subagent's session id, a slash and the call's id, which no
// tool call of the session's has.
func askedID(child string, call acp.ToolCallId) acp.ToolCallId {
	return acp.ToolCallId(child + "/" + string(call))
}

// Child is the chunks an update of subagent id adds: its data-subagent
// part, and the output of its tool part if it was asked about.
func (t *uiStream) Child(id string, u acp.SessionUpdate) []any {
	d, ok := t.subagents.Fold(id, u)
	if !ok {
		return nil
	}
	out := append(t.closeParts(), subagentChunk(d))
	var tu *acp.SessionToolCallUpdate
	switch {
	case u.ToolCall != nil:
		tu = web.AsToolUpdate(u.ToolCall)
	case u.ToolCallUpdate != nil:
		tu = u.ToolCallUpdate
	}
	if tu != nil && t.tools.Get(askedID(id, tu.ToolCallId)) != nil {
		v := *tu
		v.ToolCallId = askedID(id, tu.ToolCallId)
		out = append(out, t.toolCallUpdate(&v)...)
	}
	return out
}

// toolCall starts a tool part (or updates it, for an id already seen).
func (t *uiStream) toolCall(c *acp.SessionUpdateToolCall) []any {
	return t.toolCallUpdate(web.AsToolUpdate(c))
}

// toolCallUpdate merges an update into its tool part: its input once
// known (or once the call runs), its output once it ends.
func (t *uiStream) toolCallUpdate(u *acp.SessionToolCallUpdate) []any {
	tool, out := t.tool(u.ToolCallId, u.Title, u.Kind)
	before := tool.RawInput
	tool.Merge(u)
	if tool.Done {
		return out
	}
	st := acp.ToolCallStatus("")
	if u.Status != nil {
		st = *u.Status
	}
	// A part asked about keeps the input it was approved with: the AI SDK
	// looks for a tool's part to update in the current step only, and a
	// tool-input-available after the approval's step would make a second
	// part, leaving the approved one without its output.
	if t.asked[u.ToolCallId] == nil && inputNews(tool, before, u.RawInput, st) {
		out = append(out, t.inputAvailable(u.ToolCallId, tool))
	}
	switch st {
	case acp.ToolCallStatusCompleted:
		tool.Done = true
		out = append(out, uiChunk{Type: "tool-output-available", ToolCallID: string(u.ToolCallId), Dynamic: true,
			ProviderExecuted: true, Output: tool.Output()})
	case acp.ToolCallStatusFailed:
		tool.Done = true
		out = append(out, t.failed(u.ToolCallId, tool))
	}
	return out
}

// tool is the tool part of id, started (tool-input-start) if it is new.
func (t *uiStream) tool(id acp.ToolCallId, title *string, kind *acp.ToolKind) (*web.Tool, []any) {
	tool, added := t.tools.Start(id)
	if !added {
		return tool, nil
	}
	if title != nil {
		tool.Title = *title
	}
	if kind != nil {
		tool.Kind = *kind
	}
	out := t.closeParts()
	return tool, append(out, uiChunk{Type: "tool-input-start", ToolCallID: string(id), ToolName: web.ToolName(tool.Kind),
		Dynamic: true, ProviderExecuted: true, Title: tool.Title, ToolMetadata: t.toolMetadata(id, tool)})
}

func (t *uiStream) inputAvailable(id acp.ToolCallId, tool *web.Tool) uiChunk {
	tool.InputSent = true
	input := tool.RawInput
	if input == nil {
		input = map[string]any{}
	}
	return uiChunk{Type: "tool-input-available", ToolCallID: string(id), ToolName: web.ToolName(tool.Kind), Dynamic: true,
		ProviderExecuted: true, Title: tool.Title, Input: input, ToolMetadata: t.toolMetadata(id, tool)}
}

// inputNews tells whether a tool part's input is news: the first time it
// is known or needed (the call runs), or when it changed.
func inputNews(tool *web.Tool, before, raw any, st acp.ToolCallStatus) bool {
	if !tool.InputSent {
		return raw != nil || (st != "" && st != acp.ToolCallStatusPending)
	}
	return raw != nil && !sameJSON(before, raw)
}

// sameJSON reports whether a and b encode alike.
func sameJSON(a, b any) bool {
	ja, erra := json.Marshal(a)
	jb, errb := json.Marshal(b)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// failed is a failed tool call's end: denied if its ask was rejected,
// else an error.
func (t *uiStream) failed(id acp.ToolCallId, tool *web.Tool) uiChunk {
	if a := t.asked[id]; a != nil && a.Rejected() {
		return uiChunk{Type: "tool-output-denied", ToolCallID: string(id)}
	}
	return uiChunk{Type: "tool-output-error", ToolCallID: string(id), Dynamic: true, ProviderExecuted: true,
		ErrorText: tool.Failure()}
}

// Ask is a permission ask: the tool part's approval request, which ends
// the response (the turn waits for the answer the next request brings).
func (t *uiStream) Ask(a *web.Ask) []any {
	if a.Child != "" {
		return t.subagentAsk(a)
	}
	return append(t.closeParts(), t.approval(a, a.Req.ToolCall)...)
}

// subagentAsk is a permission ask of a subagent's: its data-subagent part
// (the call approval-requested), then, in a step of its own, a tool part
// of the call (askedID; toolMetadata.subagent names the subagent) with
// the approval request. The AI SDK answers approvals on tool parts only,
// and sends the answer by itself once every tool part of the last step
// is answered or done: the parent's tool call that runs the subagent is
// neither, so it is left in the step before.
func (t *uiStream) subagentAsk(a *web.Ask) []any {
	out := t.closeParts()
	d, _ := t.subagents.Ask(a)
	out = append(out, subagentChunk(d), uiChunk{Type: "finish-step"}, uiChunk{Type: "start-step"})
	tc := a.Req.ToolCall
	id := askedID(a.Child, tc.ToolCallId)
	t.childOf[id] = a.Child
	if known := t.subagents.Tool(a.Child, tc.ToolCallId); known != nil {
		kind := known.Kind
		tc.Title, tc.Kind = &known.Title, &kind
		if tc.RawInput == nil {
			tc.RawInput = known.RawInput
		}
		if tc.Content == nil {
			tc.Content = known.Content
		}
		if tc.Locations == nil {
			tc.Locations = known.Locations
		}
	}
	tc.ToolCallId = id
	return append(out, t.approval(a, tc)...)
}

// approval is tool call tc's part (started if it is new) with a's
// approval request, and the end of the response.
func (t *uiStream) approval(a *web.Ask, tc acp.ToolCallUpdate) []any {
	tool, out := t.tool(tc.ToolCallId, tc.Title, tc.Kind)
	before := tool.RawInput
	tool.Merge(&acp.SessionToolCallUpdate{ToolCallId: tc.ToolCallId, Title: tc.Title, Kind: tc.Kind,
		Content: tc.Content, Locations: tc.Locations, RawInput: tc.RawInput})
	t.asked[tc.ToolCallId] = a
	if inputNews(tool, before, tc.RawInput, acp.ToolCallStatusInProgress) {
		out = append(out, t.inputAvailable(tc.ToolCallId, tool))
	}
	req := a.Req
	req.ToolCall = tc
	out = append(out,
		uiChunk{Type: "tool-approval-request", ApprovalID: a.ID, ToolCallID: string(tc.ToolCallId),
			ApprovalDescriptor: approvalDescriptor(tool.Title, req)},
		uiChunk{Type: "finish-step"},
		uiChunk{Type: "finish", FinishReason: "tool-calls"},
		sseDone)
	return out
}

// approvalDescriptor says what an approval is for: the tool call's title,
// the ask's options, and the call's content (an edit's diff), so that a
// client can show what it approves before it does.
func approvalDescriptor(title string, req acp.RequestPermissionRequest) map[string]any {
	d := map[string]any{"title": title, "options": req.Options}
	if len(req.ToolCall.Content) > 0 {
		d["content"] = req.ToolCall.Content
	}
	return d
}

// End ends the turn: its tool calls still open, the step, and the message
// with its stop reason and usage; an error is an error chunk, a
// cancellation an abort.
func (t *uiStream) End(e web.TurnEnd) []any {
	out := append(t.closeParts(), t.closeTools(e)...)
	out = append(out, uiChunk{Type: "finish-step"})
	meta := map[string]any{"sessionId": t.sessionID}
	switch {
	case e.Err != nil:
		return append(out, uiChunk{Type: "error", ErrorText: e.Err.Error()},
			uiChunk{Type: "finish", FinishReason: "error", MessageMetadata: meta}, sseDone)
	case e.Resp.StopReason == acp.StopReasonCancelled:
		meta["stopReason"] = e.Resp.StopReason
		return append(out, uiChunk{Type: "message-metadata", MessageMetadata: meta},
			uiChunk{Type: "abort", Reason: "cancelled"}, sseDone)
	}
	meta["stopReason"] = e.Resp.StopReason
	if e.Resp.Usage != nil {
		meta["usage"] = e.Resp.Usage
	}
	return append(out, uiChunk{Type: "finish", FinishReason: finishReason(e.Resp.StopReason), MessageMetadata: meta}, sseDone)
}

// closeTools ends the tool parts the turn left open: denied if their ask
// was rejected, else an error saying the turn ended first.
func (t *uiStream) closeTools(e web.TurnEnd) []any {
	var out []any
	for _, id := range t.tools.Unfinished() {
		tool := t.tools.Get(id)
		if !tool.InputSent {
			out = append(out, t.inputAvailable(id, tool))
		}
		if a := t.asked[id]; a != nil && a.Rejected() {
			out = append(out, uiChunk{Type: "tool-output-denied", ToolCallID: string(id)})
			continue
		}
		why := e.Unfinished()
		out = append(out, uiChunk{Type: "tool-output-error", ToolCallID: string(id), Dynamic: true, ProviderExecuted: true, ErrorText: why})
	}
	return out
}

// finishReason maps an ACP stop reason onto the AI SDK's.
func finishReason(r acp.StopReason) string {
	switch r {
	case acp.StopReasonEndTurn:
		return "stop"
	case acp.StopReasonMaxTokens, acp.StopReasonMaxTurnRequests:
		return "length"
	case acp.StopReasonRefusal:
		return "content-filter"
	}
	return "other"
}

// toolMetadata keeps what the AI SDK's tool part has no field for: the
// ACP kind, the locations, and for a subagent's call asked about the
// subagent's session id and the call's own id.
func (t *uiStream) toolMetadata(id acp.ToolCallId, tool *web.Tool) map[string]any {
	m := map[string]any{"kind": web.ToolName(tool.Kind)}
	if len(tool.Locations) > 0 {
		m["locations"] = tool.Locations
	}
	if child := t.childOf[id]; child != "" {
		m["subagent"] = child
		m["subagentToolCallId"] = strings.TrimPrefix(string(id), child+"/")
	}
	return m
}
