package claude

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Translator turns the messages Claude Code prints in stream-json mode into
// ACP session updates. It is not safe for concurrent use; the session's
// read loop owns it. Control messages are not its business.
type Translator struct {
	cwd string

	streamed map[string]bool        // message ids whose text arrived as stream deltas
	msgID    string                 // the message being streamed
	blocks   map[int]string         // content-block index → tool_use id, while streaming
	tools    map[string]*tool       // tool calls by tool_use id
	tasks    tasks                  // the task list (TaskCreate/TaskUpdate, TodoWrite)
	inputs   map[int][]byte         // content-block index → partial tool input JSON
	stop     string                 // the last message_delta stop_reason
	commands []acp.AvailableCommand // the slash commands last sent

	compacting string // the compaction under way (its status line's uuid)
	summaryOf  string // the compaction whose summary the next user line is

	subs   agentkit.Subagents // announced subagents (task ids), by the tool_use that started them
	subMsg map[string]string  // the message a subagent streams, by its tool_use id
}

// tool is what the translator knows of one tool_use.
type tool struct {
	name   string
	input  map[string]any
	hidden bool // a task-list tool: shown as the plan, not as a tool call
}

// NewTranslator returns a Translator for a session in cwd.
func NewTranslator(cwd string) *Translator {
	return &Translator{cwd: cwd, streamed: map[string]bool{}, blocks: map[int]string{},
		tools: map[string]*tool{}, inputs: map[int][]byte{},
		subMsg: map[string]string{}}
}

// Output is what one stream-json message means.
type Output struct {
	Updates []acp.SessionUpdate
	// Child is the child session (a subagent; see agent.Events.Child)
	// that Updates belong to, "" for the session's own.
	Child string
	// SessionID is Claude's session id, when the message tells it.
	SessionID string
	// Mode is the permission mode, when the message reports it.
	Mode string
	// Model is the model Claude runs, when the message reports it.
	Model string
	// Result is set by the message that ends a turn.
	Result *Result
	// Skipped names a message type the translator does not know.
	Skipped string
}

// Result is how a turn ended, from Claude's result message.
type Result struct {
	StopReason acp.StopReason
	// Err is the turn's failure (an API error, an aborted turn) or "".
	Err          string
	AuthRequired bool
	Aborted      bool // the turn was interrupted (error_during_execution)
	Exited       bool // the process died before the turn ended
	Usage        *acp.Usage
	CostUSD      float64 // cumulative for the process
	Context      int     // tokens in context after the turn
	Window       int     // the model's context window, 0 if unknown
}

// message is one stream-json line: a stream_event's event, a user line's
// tool_use_result, the replay and synthetic marks, and the fields of the
// system lines beside the envelope.
type message struct {
	agentkit.Line
	Event         json.RawMessage `json:"event"`
	ToolUseResult json.RawMessage `json:"tool_use_result"`
	IsReplay      bool            `json:"isReplay"`
	IsSynthetic   bool            `json:"isSynthetic"`
	system

	// system/api_retry (read from the line again: other lines' keys of
	// these names may hold other types)
	Raw []byte `json:"-"`
}

// system is the fields of system/init and system/status lines.
type system struct {
	Model          string       `json:"model"`
	PermissionMode string       `json:"permissionMode"`
	SlashCommands  []string     `json:"slash_commands"`
	CompactMeta    *compactMeta `json:"compact_metadata"`
}

// retry is a system/api_retry line's own fields.
type retry struct {
	Attempt      int     `json:"attempt"`
	MaxRetries   int     `json:"max_retries"`
	RetryDelayMs float64 `json:"retry_delay_ms"`
	ErrorStatus  *int    `json:"error_status"`
	Error        string  `json:"error"`
}

// compactStatus is a system/status line's compaction fields.
type compactStatus struct {
	UUID          string  `json:"uuid"`
	Status        *string `json:"status"`
	CompactResult string  `json:"compact_result"`
	CompactError  string  `json:"compact_error"`
}

type compactMeta struct {
	Trigger    string `json:"trigger"`
	PreTokens  int    `json:"pre_tokens"`
	PostTokens int    `json:"post_tokens"`
}

// Translate decodes one line of Claude's stdout.
func (t *Translator) Translate(line []byte) (Output, error) {
	var m message
	if err := json.Unmarshal(line, &m); err != nil {
		return Output{}, fmt.Errorf("decoding claude output: %w", err)
	}
	m.Raw = line
	switch m.Type {
	case "stream_event":
		return t.streamEvent(m)
	case "assistant":
		return t.assistant(m)
	case "user":
		return t.user(m)
	case "result":
		return t.result(line)
	case "system":
		return t.system(m), nil
	case "rate_limit_event":
		return rateLimit(line), nil
	}
	return Output{Skipped: m.Type}, nil
}

func (t *Translator) system(m message) Output {
	switch m.Subtype {
	case "init":
		out := Output{SessionID: m.SessionID, Mode: m.PermissionMode, Model: m.Model}
		if len(t.commands) == 0 { // the initialize response's list, with descriptions, wins
			out.Updates = t.Commands(commandsNamed(m.SlashCommands))
		}
		return out
	case "status":
		return Output{Mode: m.PermissionMode, Updates: t.compactStatus(m)}
	case "compact_boundary":
		return Output{Updates: t.compactBoundary(m)}
	case "api_retry":
		return Output{Updates: []acp.SessionUpdate{apiRetry(m)}}
	case "task_started":
		return t.taskStarted(m)
	case "task_updated", "task_notification":
		return t.taskEnded(m)
	case "thinking_tokens", "task_progress", "hook_started", "hook_response":
		return Output{}
	}
	return Output{Skipped: "system/" + m.Subtype}
}

// compactStatus is the compaction a system/status line starts or ends:
// status "compacting" starts one, compact_result ends it.
func (t *Translator) compactStatus(m message) []acp.SessionUpdate {
	var c compactStatus
	json.Unmarshal(m.Raw, &c) // what does not decode is left out
	switch {
	case c.Status != nil && *c.Status == "compacting":
		t.compacting = cmp.Or(c.UUID, "compaction")
		return []acp.SessionUpdate{agentkit.Compaction(t.compacting, acp.CompactionStatusInProgress, "", "")}
	case c.CompactResult == "success":
		return []acp.SessionUpdate{agentkit.Compaction(cmp.Or(t.compacting, c.UUID), acp.CompactionStatusCompleted, "", "")}
	case c.CompactResult != "":
		id := cmp.Or(t.compacting, c.UUID)
		t.compacting = ""
		return []acp.SessionUpdate{agentkit.Compaction(id, acp.CompactionStatusFailed, "", cmp.Or(c.CompactError, c.CompactResult))}
	}
	return nil
}

// compactBoundary completes the compaction, with its tokens; a client that
// takes no compaction updates is told in the agent's text, as before.
func (t *Translator) compactBoundary(m message) []acp.SessionUpdate {
	var line struct {
		UUID string `json:"uuid"`
	}
	json.Unmarshal(m.Raw, &line)
	id := cmp.Or(t.compacting, line.UUID, "compaction")
	t.compacting, t.summaryOf = "", id
	c := m.CompactMeta
	if c == nil {
		return []acp.SessionUpdate{agentkit.Compaction(id, acp.CompactionStatusCompleted, "", "")}
	}
	text := fmt.Sprintf("\n\n*Conversation compacted (%s): %d → %d tokens.*\n\n", c.Trigger, c.PreTokens, c.PostTokens)
	u := agentkit.Compaction(id, acp.CompactionStatusCompleted, "", "", acp.UpdateAgentMessageText(text))
	maps.Copy(u.CompactionUpdate.Meta, map[string]any{"trigger": c.Trigger, "preTokens": c.PreTokens, "postTokens": c.PostTokens})
	return []acp.SessionUpdate{u}
}

// compactSummary is the summary of the compaction just completed, from the
// synthetic user line ("This session is being continued …") that follows
// its boundary; nil for any other line.
func (t *Translator) compactSummary(m message) []acp.SessionUpdate {
	id := t.summaryOf
	t.summaryOf = ""
	var msg struct {
		Content string `json:"content"`
	}
	if !m.IsSynthetic || json.Unmarshal(m.Message, &msg) != nil || msg.Content == "" {
		return nil
	}
	return []acp.SessionUpdate{agentkit.Compaction(id, acp.CompactionStatusCompleted, msg.Content, "")}
}

// apiRetry is the notice that Claude Code retries a failed model request.
func apiRetry(msg message) acp.SessionUpdate {
	var m retry
	json.Unmarshal(msg.Raw, &m) // what does not decode is left out
	title := fmt.Sprintf("Claude Code is retrying the model request (%d/%d)", m.Attempt, m.MaxRetries)
	why := m.Error
	if m.ErrorStatus != nil {
		why = strings.TrimSpace(fmt.Sprintf("HTTP %d %s", *m.ErrorStatus, m.Error))
	}
	if m.RetryDelayMs > 0 {
		why = strings.TrimPrefix(why+fmt.Sprintf("; next try in %.1f s", m.RetryDelayMs/1000), "; ")
	}
	return agentkit.Notice(acp.NoticeSeverityWarning, title, why)
}

// rateLimit is the notice for a rate_limit_event near or at a limit of
// the account (none while it is allowed). Its fields are as third-party
// typings have them; no event was captured (it needs a subscription).
func rateLimit(line []byte) Output {
	var ev struct {
		Info struct {
			Status   string  `json:"status"`
			Type     string  `json:"rateLimitType"`
			ResetsAt float64 `json:"resetsAt"`
		} `json:"rate_limit_info"`
	}
	json.Unmarshal(line, &ev) // what does not decode is left out
	severity := acp.NoticeSeverityWarning
	switch ev.Info.Status {
	case "allowed_warning":
	case "rejected":
		severity = acp.NoticeSeverityError
	default:
		return Output{}
	}
	title := "Claude Code is near its usage limit"
	if severity == acp.NoticeSeverityError {
		title = "Claude Code reached its usage limit"
	}
	why := strings.ReplaceAll(ev.Info.Type, "_", " ")
	if ev.Info.ResetsAt > 0 {
		why = strings.TrimPrefix(why+"; resets "+time.Unix(int64(ev.Info.ResetsAt), 0).UTC().Format(time.RFC3339), "; ")
	}
	return Output{Updates: []acp.SessionUpdate{agentkit.Notice(severity, title, why)}}
}

// Commands records the slash commands and returns an update if they
// changed.
func (t *Translator) Commands(cmds []acp.AvailableCommand) []acp.SessionUpdate {
	if len(cmds) == 0 || slices.EqualFunc(cmds, t.commands, func(a, b acp.AvailableCommand) bool {
		return a.Name == b.Name && a.Description == b.Description
	}) {
		return nil
	}
	t.commands = cmds
	return []acp.SessionUpdate{{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}}
}

// commandsNamed lists slash commands by name, as system/init gives them.
func commandsNamed(names []string) []acp.AvailableCommand {
	cmds := make([]acp.AvailableCommand, 0, len(names))
	for _, n := range names {
		cmds = append(cmds, acp.AvailableCommand{Name: n, Description: "/" + n})
	}
	return cmds
}

// streamEvent translates one raw Messages API streaming event.
func (t *Translator) streamEvent(m message) (Output, error) {
	var ev struct {
		Type    string `json:"type"`
		Index   int    `json:"index"`
		Message struct {
			ID string `json:"id"`
		} `json:"message"`
		ContentBlock struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"content_block"`
		Delta struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Thinking    string `json:"thinking"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
	}
	if err := json.Unmarshal(m.Event, &ev); err != nil {
		return Output{}, fmt.Errorf("decoding stream event: %w", err)
	}
	if child := t.childOf(m); child != "" {
		return t.childStreamEvent(m, child, ev.Type, ev.Message.ID, ev.ContentBlock.Type, ev.ContentBlock.ID, ev.ContentBlock.Name, ev.Delta.Type, ev.Delta.Text+ev.Delta.Thinking), nil
	}
	sub := m.ParentToolUseID != nil // an unannounced sub-agent's stream: its text is not ours to show
	switch ev.Type {
	case "message_start":
		t.msgID = ev.Message.ID
		clear(t.blocks)
		clear(t.inputs)
	case "content_block_start":
		if ev.ContentBlock.Type == "tool_use" {
			t.blocks[ev.Index] = ev.ContentBlock.ID
			return t.announce(ev.ContentBlock.ID, ev.ContentBlock.Name, nil), nil
		}
	case "content_block_delta":
		return t.delta(ev.Index, ev.Delta.Type, ev.Delta.Text+ev.Delta.Thinking, ev.Delta.PartialJSON, sub), nil
	case "message_delta":
		if ev.Delta.StopReason != "" {
			t.stop = ev.Delta.StopReason
		}
	}
	return Output{}, nil
}

func (t *Translator) delta(index int, kind, text, partial string, sub bool) Output {
	switch kind {
	case "input_json_delta":
		t.inputs[index] = append(t.inputs[index], partial...)
		return Output{}
	case "text_delta", "thinking_delta":
		if sub || text == "" {
			return Output{}
		}
		t.streamed[t.msgID] = true
		if kind == "text_delta" {
			return Output{Updates: []acp.SessionUpdate{acp.UpdateAgentMessageText(text)}}
		}
		return Output{Updates: []acp.SessionUpdate{acp.UpdateAgentThoughtText(text)}}
	}
	return Output{}
}

// apiMessage is the Messages API message inside assistant and user lines.
type apiMessage struct {
	ID      string          `json:"id"`
	Model   string          `json:"model"`
	Content json.RawMessage `json:"content"`
}

// assistant handles a complete content block. Text and thinking that were
// already streamed are not sent again; a tool_use refines its tool call.
func (t *Translator) assistant(m message) (Output, error) {
	var msg apiMessage
	if err := json.Unmarshal(m.Message, &msg); err != nil {
		return Output{}, fmt.Errorf("decoding assistant message: %w", err)
	}
	var blocks []agentkit.Block
	if err := json.Unmarshal(msg.Content, &blocks); err != nil {
		return Output{}, fmt.Errorf("decoding assistant content: %w", err)
	}
	out := Output{Child: t.childOf(m)}
	sub := m.ParentToolUseID != nil && out.Child == ""
	for _, b := range blocks {
		switch {
		case b.Type == "tool_use":
			if out.Child != "" {
				t.subs.Own(b.ID, out.Child)
			}
			out.Updates = append(out.Updates, t.announce(b.ID, b.Name, b.Input).Updates...)
		case sub || t.streamed[msg.ID]:
		case b.Type == "text" && b.Text != "":
			out.Updates = append(out.Updates, acp.UpdateAgentMessageText(b.Text))
		case b.Type == "thinking" && b.Thinking != "":
			out.Updates = append(out.Updates, acp.UpdateAgentThoughtText(b.Thinking))
		}
	}
	return out, nil
}

// announce reports a tool_use: a pending tool_call at first sight, a
// refining tool_call_update once its input is known. Task-list tools show
// as the plan instead.
func (t *Translator) announce(id, name string, input map[string]any) Output {
	tc, seen := t.tools[id]
	if !seen {
		tc = &tool{name: name, hidden: taskTool(name)}
		t.tools[id] = tc
	}
	if input != nil {
		tc.input = input
	}
	if tc.hidden {
		return Output{}
	}
	info := tools.Describe(name, tc.input, t.cwd)
	info.RawInput = rawInput(tc.input)
	if !seen {
		return Output{Updates: []acp.SessionUpdate{info.Start(id, acp.ToolCallStatusPending)}}
	}
	return Output{Updates: []acp.SessionUpdate{info.Refresh(id)}}
}

func rawInput(in map[string]any) any {
	if in == nil {
		return map[string]any{}
	}
	return in
}

// Known reports whether a tool_use id has been seen, and whether it is
// shown as a tool call.
func (t *Translator) Known(id string) (seen, shown bool) {
	tc, ok := t.tools[id]
	return ok, ok && !tc.hidden
}

// Announce makes sure a tool call exists for a permission ask about a
// tool_use the stream has not shown (yet).
func (t *Translator) Announce(id, name string, input map[string]any) []acp.SessionUpdate {
	if seen, _ := t.Known(id); seen {
		return nil
	}
	return t.announce(id, name, input).Updates
}

// user handles tool results; prompts echoed back, interruption notes and
// sub-agent prompts are not shown.
func (t *Translator) user(m message) (Output, error) {
	if t.summaryOf != "" && !m.IsReplay {
		if us := t.compactSummary(m); us != nil {
			return Output{Updates: us}, nil
		}
	}
	if m.IsReplay || m.IsSynthetic {
		return Output{}, nil
	}
	var msg apiMessage
	if err := json.Unmarshal(m.Message, &msg); err != nil {
		return Output{}, fmt.Errorf("decoding user message: %w", err)
	}
	blocks, ok := agentkit.Blocks(msg.Content)
	if !ok {
		return Output{}, nil // a plain string: a prompt or a local command's output
	}
	out := Output{Child: t.childOf(m)}
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out.Updates = append(out.Updates, t.toolResult(b, m.ToolUseResult)...)
			out.Updates = append(out.Updates, t.agentResult(b)...)
		}
	}
	if out.Child != "" && len(out.Updates) == 0 {
		out.Updates = agentkit.SubagentPrompt(blocks)
	}
	return out, nil
}

func (t *Translator) toolResult(b agentkit.Block, structured json.RawMessage) []acp.SessionUpdate {
	tc := t.tools[b.ToolUseID]
	if tc == nil {
		tc = &tool{}
		t.tools[b.ToolUseID] = tc
	}
	text := agentkit.ResultText(b.Content)
	if tc.hidden {
		if b.IsError {
			return nil
		}
		if t.tasks.apply(tc.name, tc.input, structured) {
			return []acp.SessionUpdate{t.tasks.plan()}
		}
		return nil
	}
	status := acp.ToolCallStatusCompleted
	if b.IsError {
		status = acp.ToolCallStatusFailed
	}
	opts := []acp.ToolCallUpdateOpt{agentkit.Named(tc.name), acp.WithUpdateStatus(status), acp.WithUpdateRawOutput(rawOutput(structured, text))}
	if content := resultContent(tc.name, text, b.IsError); content != nil {
		opts = append(opts, acp.WithUpdateContent(content))
	}
	return []acp.SessionUpdate{acp.UpdateToolCall(acp.ToolCallId(b.ToolUseID), opts...)}
}

func rawOutput(structured json.RawMessage, text string) any {
	if len(structured) > 0 && string(structured) != "null" {
		var v any
		if json.Unmarshal(structured, &v) == nil {
			return v
		}
	}
	return map[string]any{"output": text}
}

// resultDoc is the part of a result message the bridge needs.
type resultDoc struct {
	Subtype        string                 `json:"subtype"`
	IsError        bool                   `json:"is_error"`
	APIErrorStatus *int                   `json:"api_error_status"`
	Result         *string                `json:"result"`
	StopReason     string                 `json:"stop_reason"`
	SessionID      string                 `json:"session_id"`
	TotalCostUSD   float64                `json:"total_cost_usd"`
	Errors         []string               `json:"errors"`
	TerminalReason string                 `json:"terminal_reason"`
	Usage          agentkit.MessagesUsage `json:"usage"`
	ModelUsage     map[string]struct {
		ContextWindow int `json:"contextWindow"`
	} `json:"modelUsage"`
}

// result ends the turn.
func (t *Translator) result(line []byte) (Output, error) {
	var r resultDoc
	if err := json.Unmarshal(line, &r); err != nil {
		return Output{}, fmt.Errorf("decoding result: %w", err)
	}
	res := &Result{StopReason: stopReason(r, t.stop), CostUSD: r.TotalCostUSD}
	t.stop = ""
	u := r.Usage
	res.Usage = &acp.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens,
		CachedReadTokens: &u.CacheReadTokens, CachedWriteTokens: &u.CacheCreationTokens,
		TotalTokens: u.Total()}
	res.Context = u.Total()
	for _, mu := range r.ModelUsage {
		res.Window = max(res.Window, mu.ContextWindow)
	}
	t.failure(r, res)
	return Output{SessionID: r.SessionID, Result: res}, nil
}

func stopReason(r resultDoc, streamed string) acp.StopReason {
	switch {
	case r.Subtype == "error_max_turns" || r.Subtype == "error_max_budget_usd":
		return acp.StopReasonMaxTurnRequests
	case r.StopReason == "max_tokens" || streamed == "max_tokens":
		return acp.StopReasonMaxTokens
	case r.StopReason == "refusal" || streamed == "refusal":
		return acp.StopReasonRefusal
	}
	return acp.StopReasonEndTurn
}

// failure fills in why a turn failed, if it did.
func (t *Translator) failure(r resultDoc, res *Result) {
	if r.Subtype == "error_during_execution" {
		res.Aborted = true
		res.Err = "claude stopped the turn: " + strings.Join(append([]string{r.TerminalReason}, r.Errors...), "; ")
		return
	}
	if !r.IsError || res.StopReason == acp.StopReasonMaxTurnRequests {
		return
	}
	msg := strings.Join(r.Errors, "; ")
	if r.Result != nil && *r.Result != "" {
		msg = *r.Result
	}
	res.Err = msg
	status := 0
	if r.APIErrorStatus != nil {
		status = *r.APIErrorStatus
	}
	res.AuthRequired = status == 401 || status == 403 || strings.Contains(msg, "/login") ||
		strings.Contains(strings.ToLower(msg), "invalid api key")
}
