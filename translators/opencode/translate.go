package opencode

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Translator turns the events of one OpenCode session into ACP session
// updates. It is not safe for concurrent use; the session serialises
// calls.
type Translator struct {
	cwd   string
	roles map[string]string  // message id → "user" or "assistant"
	parts map[string]*part   // text and reasoning parts by part id
	tools map[string]*callSt // tool calls by call id
	title string             // the last title reported

	compacting string            // the compaction under way: its part's id
	compacts   map[string]bool   // the compaction parts seen
	summaries  map[string]string // summary message id → its compaction's id

	own     string            // the session's OpenCode id (Own); "" until told
	isChild bool              // a child session's: its prompt is shown as the user's message
	kids    map[string]*kid   // child sessions by id (subagents.go)
	calls   map[string]string // task call id → the child session it runs
}

// part is a text or reasoning part: how much of its text the client has.
type part struct {
	kind string // "text" or "reasoning"
	sent int    // bytes of text sent
}

// callSt is what the client has been shown of a tool call.
type callSt struct {
	shown bool
	seen  string // the input and status last shown, to skip repeats
}

// NewTranslator returns a Translator for a session in cwd.
func NewTranslator(cwd string) *Translator {
	return &Translator{cwd: cwd, roles: map[string]string{}, parts: map[string]*part{}, tools: map[string]*callSt{}, summaries: map[string]string{}, compacts: map[string]bool{},
		kids: map[string]*kid{}, calls: map[string]string{}}
}

// Event is one event of OpenCode's SSE stream.
type Event struct {
	ID         string          `json:"id,omitempty"`
	Type       string          `json:"type"`
	Properties json.RawMessage `json:"properties"`
}

// Output is what one event means.
type Output struct {
	Updates []acp.SessionUpdate
	// Child, if set, is the child session (a subagent) the event is
	// about: Updates, Ask and Question are its, Busy and Idle say it
	// started and ended working; Parent are the session's own updates
	// about it (announcing it, ending it), to send first.
	Child  string
	Parent []acp.SessionUpdate
	// Abort says to abort the child: it started, and was to be stopped.
	Abort bool
	// Adopt names a child session a task call runs whose session.created
	// the translator did not see (the event stream dropped): its events
	// are to be routed to the session from now on.
	Adopt string
	// Busy is set when the session started working on a prompt, Idle when
	// it stopped: the end of a turn (OpenCode may repeat it after an abort).
	Busy, Idle bool
	// Answer is set by an assistant message: the prompt is being answered.
	Answer bool
	// Err is a session error: how the turn failed, or that it was aborted.
	Err *SessionError
	// Step is the token use and cost of one finished model step.
	Step *Tokens
	// Ask is a permission ask, Question a question for the user.
	Ask      *PermissionAsk
	Question *QuestionAsk
	// Replied names a permission or question answered (possibly elsewhere).
	Replied string
	// Reconnected is set when the event stream came back after a drop:
	// events may have been lost.
	Reconnected bool
	// Skipped names an event type the translator ignores.
	Skipped string
}

// SessionError is session.error's error.
type SessionError struct {
	Name string `json:"name"`
	Data struct {
		Message    string `json:"message"`
		StatusCode int    `json:"statusCode"`
	} `json:"data"`
}

// Aborted reports the error of a turn the bridge aborted.
func (e *SessionError) Aborted() bool { return e.Name == "MessageAbortedError" }

// Message is the error's text for the user.
func (e *SessionError) Message() string {
	msg := cmp.Or(e.Data.Message, e.Name)
	if e.Data.StatusCode != 0 {
		msg += fmt.Sprintf(" (HTTP %d)", e.Data.StatusCode)
	}
	return msg
}

// Tokens is a step's use.
type Tokens struct {
	Total     int `json:"total"`
	Input     int `json:"input"`
	Output    int `json:"output"`
	Reasoning int `json:"reasoning"`
	Cache     struct {
		Read  int `json:"read"`
		Write int `json:"write"`
	} `json:"cache"`
	Cost float64 `json:"-"`
}

// reconnectedEvent is the event the bridge adds to a session's stream
// when its event stream came back after a drop.
const reconnectedEvent = "acpbridge.reconnected"

// PermissionAsk is permission.asked.
type PermissionAsk struct {
	ID         string         `json:"id"`
	Permission string         `json:"permission"`
	Patterns   []string       `json:"patterns"`
	Metadata   agentkit.Input `json:"metadata"`
	Always     []string       `json:"always"`
	Tool       *toolRef       `json:"tool"`
}

// QuestionAsk is question.asked.
type QuestionAsk struct {
	ID        string     `json:"id"`
	Questions []Question `json:"questions"`
	Tool      *toolRef   `json:"tool"`
}

// toolRef is the tool call an ask is about.
type toolRef struct {
	MessageID string `json:"messageID"`
	CallID    string `json:"callID"`
}

// Question is one question of a question.asked.
type Question struct {
	Question string `json:"question"`
	Header   string `json:"header"`
	Multiple bool   `json:"multiple"`
	Options  []struct {
		Label       string `json:"label"`
		Description string `json:"description"`
	} `json:"options"`
}

// question is q as the toolkit asks it.
func (q Question) question() agent.Question {
	aq := agent.Question{Text: q.Question, Header: q.Header}
	for _, o := range q.Options {
		aq.Options = append(aq.Options, agent.QuestionOption{Label: o.Label, Description: o.Description})
	}
	return aq
}

// properties is the union of the properties the translator reads.
type properties struct {
	SessionID string          `json:"sessionID"`
	Info      json.RawMessage `json:"info"`
	Part      json.RawMessage `json:"part"`
	MessageID string          `json:"messageID"`
	PartID    string          `json:"partID"`
	Field     string          `json:"field"`
	Delta     string          `json:"delta"`
	Status    *struct {
		Type    string `json:"type"`
		Attempt int    `json:"attempt"`
		Message string `json:"message"`
	} `json:"status"`
	Error     *SessionError `json:"error"`
	Todos     []todo        `json:"todos"`
	RequestID string        `json:"requestID"`
	ID        string        `json:"id"`
}

type todo struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
}

// Translate turns one event into updates.
func (t *Translator) Translate(ev Event) (Output, error) {
	d, err := Decode(ev)
	if err != nil {
		return Output{}, err
	}
	return t.TranslateDecoded(d)
}

// Decoded is an event with its properties decoded, once: the backend
// routes it by its session id, then translates it.
type Decoded struct {
	Event
	props properties
}

// SessionID is the session the event is about, or "".
func (d Decoded) SessionID() string { return d.props.SessionID }

// Decode decodes an event's properties.
func Decode(ev Event) (Decoded, error) {
	d := Decoded{Event: ev}
	if len(ev.Properties) > 0 {
		if err := json.Unmarshal(ev.Properties, &d.props); err != nil {
			return d, fmt.Errorf("decoding %s: %w", ev.Type, err)
		}
	}
	return d, nil
}

// TranslateDecoded turns one decoded event into updates.
func (t *Translator) TranslateDecoded(d Decoded) (Output, error) {
	ev, p := d.Event, d.props
	if t.own != "" && p.SessionID != "" && p.SessionID != t.own {
		return t.childEvent(d)
	}
	switch ev.Type {
	case "message.updated":
		return t.message(p.Info)
	case "message.part.updated":
		return t.part(p.Part)
	case "message.part.delta":
		return t.delta(p), nil
	case "session.status":
		return t.status(p), nil
	case "session.idle":
		return Output{Idle: true}, nil
	case "session.error":
		return Output{Err: p.Error}, nil
	case "session.compacted":
		return t.compacted(p), nil
	case "session.updated", "session.created":
		return t.session(p.Info)
	case "todo.updated":
		return Output{Updates: []acp.SessionUpdate{plan(p.Todos)}}, nil
	case "permission.asked":
		var a PermissionAsk
		err := json.Unmarshal(ev.Properties, &a)
		return Output{Ask: &a}, err
	case "question.asked":
		var q QuestionAsk
		err := json.Unmarshal(ev.Properties, &q)
		return Output{Question: &q}, err
	case "permission.replied", "question.replied", "question.rejected":
		return Output{Replied: cmp.Or(p.RequestID, p.ID)}, nil
	case reconnectedEvent:
		return Output{Reconnected: true}, nil
	}
	return Output{Skipped: ev.Type}, nil
}

// message records who wrote a message; an assistant message also says
// which agent and model run it.
func (t *Translator) message(raw json.RawMessage) (Output, error) {
	var m struct {
		ID         string          `json:"id"`
		Role       string          `json:"role"`
		Agent      string          `json:"agent"`
		ModelID    string          `json:"modelID"`
		ProviderID string          `json:"providerID"`
		Summary    json.RawMessage `json:"summary"` // true on a compaction's summary; a user message's is an object
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return Output{}, fmt.Errorf("decoding a message: %w", err)
	}
	t.roles[m.ID] = m.Role
	if string(m.Summary) == "true" && m.Role == "assistant" {
		t.summaries[m.ID] = cmp.Or(t.compacting, m.ID)
	}
	return Output{Answer: m.Role == "assistant"}, nil
}

// session reports a new title. (The agent and model it names are the ones
// the bridge sent with the prompt.)
func (t *Translator) session(raw json.RawMessage) (Output, error) {
	var s struct {
		Title string `json:"title"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return Output{}, fmt.Errorf("decoding a session: %w", err)
	}
	var out Output
	if s.Title != "" && s.Title != t.title && !strings.HasPrefix(s.Title, "New session - ") {
		t.title = s.Title
		title := s.Title
		out.Updates = append(out.Updates, acp.SessionUpdate{SessionInfoUpdate: &acp.SessionSessionInfoUpdate{Title: &title}})
	}
	return out, nil
}

// partDoc is a message part, decoded leniently.
type partDoc struct {
	ID        string  `json:"id"`
	MessageID string  `json:"messageID"`
	Type      string  `json:"type"`
	Text      string  `json:"text"`
	Tool      string  `json:"tool"`
	CallID    string  `json:"callID"`
	State     toolDoc `json:"state"`
	Tokens    *Tokens `json:"tokens"`
	Cost      float64 `json:"cost"`
	Synthetic bool    `json:"synthetic"`
}

// toolDoc is a tool part's state.
type toolDoc struct {
	Status   string         `json:"status"`
	Input    agentkit.Input `json:"input"`
	Output   string         `json:"output"`
	Title    string         `json:"title"`
	Error    string         `json:"error"`
	Metadata agentkit.Input `json:"metadata"`
}

func (t *Translator) part(raw json.RawMessage) (Output, error) {
	var p partDoc
	if err := json.Unmarshal(raw, &p); err != nil {
		return Output{}, fmt.Errorf("decoding a part: %w", err)
	}
	if p.Type == "compaction" { // on a user message of its own
		return Output{Updates: t.compaction(p.ID)}, nil
	}
	if t.roles[p.MessageID] == "user" {
		if t.isChild && p.Type == "text" && !p.Synthetic { // a subagent's prompt, from its parent
			return Output{Updates: t.text(p.ID, "user", p.Text)}, nil
		}
		return Output{}, nil // the prompt, echoed
	}
	switch p.Type {
	case "text", "reasoning":
		return Output{Updates: t.summary(p.MessageID, t.text(p.ID, p.Type, p.Text))}, nil
	case "tool":
		out := Output{Updates: t.tool(p)}
		if p.Tool == "task" {
			more, adopt := t.taskPart(p)
			out.Updates, out.Adopt = append(out.Updates, more...), adopt
		}
		return out, nil
	case "step-finish":
		if p.Tokens != nil {
			tk := *p.Tokens
			tk.Cost = p.Cost
			return Output{Step: &tk}, nil
		}
	}
	return Output{}, nil
}

// text sends what a part's text adds to what was sent.
func (t *Translator) text(id, kind, text string) []acp.SessionUpdate {
	st := t.parts[id]
	if st == nil {
		st = &part{kind: kind}
		t.parts[id] = st
	}
	if len(text) <= st.sent {
		return nil
	}
	more := text[st.sent:]
	st.sent = len(text)
	return []acp.SessionUpdate{chunk(kind, more)}
}

func (t *Translator) delta(p properties) Output {
	if p.Field != "text" || p.Delta == "" || t.roles[p.MessageID] == "user" {
		return Output{}
	}
	st := t.parts[p.PartID]
	if st == nil {
		st = &part{kind: "text"}
		t.parts[p.PartID] = st
	}
	st.sent += len(p.Delta)
	return Output{Updates: t.summary(p.MessageID, []acp.SessionUpdate{chunk(st.kind, p.Delta)})}
}

// compaction starts the compaction a compaction part asks for (OpenCode's
// own when the context fills, or a summarize); the part is sent again on
// every change.
func (t *Translator) compaction(id string) []acp.SessionUpdate {
	if t.compacts[id] {
		return nil
	}
	t.compacting, t.compacts[id] = id, true
	return []acp.SessionUpdate{agentkit.Compaction(id, acp.CompactionStatusInProgress, "", "")}
}

// compacted completes the compaction under way.
func (t *Translator) compacted(p properties) Output {
	id := cmp.Or(t.compacting, "compaction-"+p.SessionID)
	t.compacting = ""
	return Output{Updates: []acp.SessionUpdate{agentkit.Compaction(id, acp.CompactionStatusCompleted, "", "")}}
}

// summary is a summary message's text as its compaction's summary, the
// agent text it was shown as before the fallback; other messages' updates
// are left as they are.
func (t *Translator) summary(messageID string, us []acp.SessionUpdate) []acp.SessionUpdate {
	id, ok := t.summaries[messageID]
	if !ok {
		return us
	}
	for i, u := range us {
		if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil {
			us[i] = agentkit.SummaryChunk(id, c.Content.Text.Text, u)
		}
	}
	return us
}

func chunk(kind, text string) acp.SessionUpdate {
	switch kind {
	case "reasoning":
		return acp.UpdateAgentThoughtText(text)
	case "user":
		return acp.UpdateUserMessageText(text)
	}
	return acp.UpdateAgentMessageText(text)
}

func (t *Translator) status(p properties) Output {
	if p.Status == nil {
		return Output{}
	}
	switch p.Status.Type {
	case "busy":
		return Output{Busy: true}
	case "retry":
		title := fmt.Sprintf("OpenCode is retrying the model request (attempt %d)", p.Status.Attempt)
		return Output{Updates: []acp.SessionUpdate{agentkit.Notice(acp.NoticeSeverityWarning, title, p.Status.Message)}}
	}
	return Output{}
}

// tool shows a tool part: announced at first sight, refreshed while it
// runs (with live output), finished once it completes or fails.
func (t *Translator) tool(p partDoc) []acp.SessionUpdate {
	if p.CallID == "" || p.Tool == "todowrite" { // the todo list is shown as the plan
		return nil
	}
	st := t.tools[p.CallID]
	if st == nil {
		st = &callSt{}
		t.tools[p.CallID] = st
	}
	info := tools.Describe(p.Tool, p.State.Input, t.cwd)
	info.RawInput = p.State.Input
	if info.RawInput == nil {
		info.RawInput = map[string]any{}
	}
	status := toolStatus(p.State.Status)
	var out []acp.SessionUpdate
	if !st.shown {
		st.shown = true
		out = append(out, info.Start(p.CallID, status))
		if status != acp.ToolCallStatusCompleted && status != acp.ToolCallStatusFailed {
			return append(out, t.running(p)...)
		}
	} else if p.State.Status == "running" || p.State.Status == "pending" {
		if seen := fmt.Sprint(status, info.Title, p.State.Input); seen != st.seen {
			st.seen = seen
			out = append(out, info.Refresh(p.CallID, acp.WithUpdateStatus(status)))
		}
		return append(out, t.running(p)...)
	}
	return append(out, finish(p))
}

// Announce makes sure a tool call exists for a permission ask about a
// call the events have not shown (yet).
func (t *Translator) Announce(id string, info agentkit.ToolInfo) []acp.SessionUpdate {
	st := t.tools[id]
	if st != nil && st.shown {
		return nil
	}
	t.tools[id] = &callSt{shown: true}
	return []acp.SessionUpdate{info.Start(id, acp.ToolCallStatusPending)}
}

// AnnounceIn is Announce for a call of the child session child ("" for
// the session's own).
func (t *Translator) AnnounceIn(child, id string, info agentkit.ToolInfo) []acp.SessionUpdate {
	if k := t.kids[child]; k != nil {
		return k.tr.Announce(id, info)
	}
	return t.Announce(id, info)
}

// running is a running call's live output, if it has any.
func (t *Translator) running(p partDoc) []acp.SessionUpdate {
	if p.State.Status != "running" {
		return nil
	}
	if out := p.State.Metadata.Str("output"); out != "" && p.Tool == "bash" {
		return []acp.SessionUpdate{acp.UpdateToolCall(acp.ToolCallId(p.CallID), agentkit.Named(p.Tool), acp.WithUpdateContent(agentkit.Console(out)))}
	}
	return nil
}

func toolStatus(s string) acp.ToolCallStatus {
	switch s {
	case "running":
		return acp.ToolCallStatusInProgress
	case "completed":
		return acp.ToolCallStatusCompleted
	case "error":
		return acp.ToolCallStatusFailed
	}
	return acp.ToolCallStatusPending
}

// finish is a finished call's last update: its status, output and raw
// output. Edits keep their diff (content replaces the whole collection).
func finish(p partDoc) acp.SessionUpdate {
	opts := []acp.ToolCallUpdateOpt{agentkit.Named(p.Tool), acp.WithUpdateStatus(toolStatus(p.State.Status))}
	if p.State.Status == "error" {
		opts = append(opts, acp.WithUpdateContent(agentkit.Texts(p.State.Error)),
			acp.WithUpdateRawOutput(map[string]any{"error": p.State.Error}))
		return acp.UpdateToolCall(acp.ToolCallId(p.CallID), opts...)
	}
	if content := resultContent(p.Tool, p.State.Output); content != nil {
		opts = append(opts, acp.WithUpdateContent(content))
	}
	raw := map[string]any{"output": p.State.Output}
	if p.State.Metadata != nil {
		raw["metadata"] = p.State.Metadata
	}
	opts = append(opts, acp.WithUpdateRawOutput(raw))
	return acp.UpdateToolCall(acp.ToolCallId(p.CallID), opts...)
}

func plan(todos []todo) acp.SessionUpdate {
	entries := make([]acp.PlanEntry, 0, len(todos))
	for _, td := range todos {
		entries = append(entries, agentkit.PlanEntry(td.Content, td.Status, td.Priority))
	}
	return acp.UpdatePlan(entries...)
}
