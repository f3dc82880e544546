package amp

import (
	"cmp"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Translator turns the lines amp prints with --stream-json into ACP session
// updates. It is not safe for concurrent use; the turn's reader owns it.
type Translator struct {
	cwd   string
	tools map[string]*toolUse // by tool_use id
	usage acp.Usage           // the turn's, summed over its messages
	stop  string              // the last assistant message's stop_reason
	subs  agentkit.Subagents  // the Tasks' subagents (see subagents.go)
}

// toolUse is what the translator knows of one tool_use.
type toolUse struct {
	name  string
	input agentkit.Input
	plan  bool // todo_write: shown as the plan, not as a tool call
	done  bool // its result came
}

// NewTranslator returns a Translator for a session in cwd.
func NewTranslator(cwd string) *Translator {
	return &Translator{cwd: cwd, tools: map[string]*toolUse{}}
}

// Output is what one line means.
type Output struct {
	Updates []acp.SessionUpdate
	Thread  string // the thread id (T-…), when the line tells it
	Mode    string // Amp's agent mode, from system/init
	Result  *Result
	Skipped string // a line type the translator does not know
	// Children are the updates of child sessions (subagents; see
	// subagents.go), which follow Updates, the session's own.
	Children []Part
}

// Part is what a line says in one child session.
type Part struct {
	Child   string
	Updates []acp.SessionUpdate
}

// Result is how a turn ended, from amp's result line.
type Result struct {
	StopReason acp.StopReason
	Err        string // the turn's failure, or ""
	// Why the turn failed, when it did for one of these reasons.
	Cancelled, AuthRequired, ApprovalRequired bool
	Usage                                     *acp.Usage
}

// line is one stream-json line. Amp's result carries its failure in
// error; its assistant lines hold whole messages.
type line struct {
	agentkit.Line
	AgentMode string `json:"agent_mode"`
	IsError   bool   `json:"is_error"`
	Error     string `json:"error"`
	Result    string `json:"result"`
}

type message struct {
	Content    json.RawMessage         `json:"content"`
	StopReason string                  `json:"stop_reason"`
	Usage      *agentkit.MessagesUsage `json:"usage"`
}

// Translate decodes one line of amp's stdout.
func (t *Translator) Translate(raw []byte) (Output, error) {
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		return Output{}, fmt.Errorf("decoding amp output: %w", err)
	}
	if child := t.childOf(l); child != "" && (l.Type == "assistant" || l.Type == "user") {
		return t.childLine(child, l)
	}
	switch l.Type {
	case "system":
		if l.Subtype == "init" {
			return Output{Thread: l.SessionID, Mode: l.AgentMode}, nil
		}
		return Output{Skipped: "system/" + l.Subtype}, nil
	case "assistant":
		return t.assistant(l)
	case "user":
		return t.user(l)
	case "result":
		r := t.result(l)
		out := Output{Thread: l.SessionID, Result: r}
		if r.Err != "" || r.Cancelled {
			out.Updates = append(t.Abandon(), t.endTasks(r)...)
		}
		return out, nil
	}
	return Output{Skipped: l.Type}, nil
}

func decode(raw json.RawMessage, what string) (message, []agentkit.Block, error) {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return m, nil, fmt.Errorf("decoding %s message: %w", what, err)
	}
	blocks, _ := agentkit.Blocks(m.Content) // not a list: the echoed prompt
	return m, blocks, nil
}

// childLine translates a subagent's assistant or user line: its updates
// are the child's.
func (t *Translator) childLine(child string, l line) (Output, error) {
	var own Output
	var err error
	if l.Type == "assistant" {
		own, err = t.message(l, child)
	} else {
		own, err = t.user(l)
	}
	if err != nil {
		return Output{}, err
	}
	out := Output{Children: own.Children}
	if len(own.Updates) > 0 {
		out.Children = append([]Part{{Child: child, Updates: own.Updates}}, own.Children...)
	}
	return out, nil
}

// assistant translates one whole message of the session's own.
func (t *Translator) assistant(l line) (Output, error) { return t.message(l, "") }

// message translates one whole message, the session's or (child) a
// subagent's: amp streams no deltas, so its text arrives as one chunk per
// block. A subagent's message does not end the turn.
func (t *Translator) message(l line, child string) (Output, error) {
	m, blocks, err := decode(l.Message, "assistant")
	if err != nil {
		return Output{}, err
	}
	if u := m.Usage; u != nil {
		t.usage.InputTokens += u.InputTokens
		t.usage.OutputTokens += u.OutputTokens
		t.usage.CachedReadTokens = add(t.usage.CachedReadTokens, u.CacheReadTokens)
		t.usage.CachedWriteTokens = add(t.usage.CachedWriteTokens, u.CacheCreationTokens)
		t.usage.TotalTokens += u.Total()
	}
	if m.StopReason != "" && child == "" {
		t.stop = m.StopReason
	}
	var out Output
	for _, b := range blocks {
		switch {
		case b.Type == "text" && b.Text != "":
			out.Updates = append(out.Updates, acp.UpdateAgentMessageText(b.Text))
		case b.Type == "thinking" && b.Thinking != "":
			out.Updates = append(out.Updates, acp.UpdateAgentThoughtText(b.Thinking))
		case b.Type == "tool_use":
			t.subs.Own(b.ID, child)
			out.Updates = append(out.Updates, t.Announce(b.ID, b.Name, b.Input)...)
			if b.Name == "Task" { // a subagent's subagent is the session's child too
				t.startTask(b.ID, b.Input, &out)
			}
		}
	}
	return out, nil
}

func add(p *int, n int) *int {
	if p != nil {
		n += *p
	}
	return &n
}

// Announce shows a tool_use as a pending tool call, once; a todo list
// shows as the plan instead. A permission ask may come before the stream
// shows the call, so both announce it.
func (t *Translator) Announce(id, name string, input map[string]any) []acp.SessionUpdate {
	if _, seen := t.tools[id]; seen || id == "" {
		return nil
	}
	tu := &toolUse{name: name, input: input, plan: name == "todo_write"}
	t.tools[id] = tu
	if tu.plan {
		return planOf(tu.input)
	}
	info := tools.Describe(name, tu.input, t.cwd)
	info.RawInput = rawInput(input)
	return []acp.SessionUpdate{info.Start(id, acp.ToolCallStatusPending)}
}

// Call is the tool call a tool_use id was announced as, for a permission
// ask; ok is false if it was not announced or shows as the plan.
func (t *Translator) Call(id string) (call acp.ToolCallUpdate, ok bool) {
	tu := t.tools[id]
	if tu == nil || tu.plan {
		return acp.ToolCallUpdate{}, false
	}
	info := tools.Describe(tu.name, tu.input, t.cwd)
	info.RawInput = rawInput(tu.input)
	return info.Call(id), true
}

func rawInput(in map[string]any) any {
	if in == nil {
		return map[string]any{}
	}
	return in
}

// planOf shows todo_write's list as the plan.
func planOf(in agentkit.Input) []acp.SessionUpdate {
	var entries []acp.PlanEntry
	for _, todo := range in.Objects("todos") {
		entries = append(entries, agentkit.PlanEntry(todo.Str("content", "title"), todo.Str("status"), todo.Str("priority")))
	}
	return []acp.SessionUpdate{acp.UpdatePlan(entries...)}
}

// user handles tool results; the echoed prompt is not shown again.
func (t *Translator) user(l line) (Output, error) {
	_, blocks, err := decode(l.Message, "user")
	if err != nil {
		return Output{}, err
	}
	var out Output
	for _, b := range blocks {
		if b.Type == "tool_result" {
			out.Updates = append(out.Updates, t.toolResult(b)...)
			out.Updates = append(out.Updates, t.endTask(b)...)
		}
	}
	return out, nil
}

func (t *Translator) toolResult(b agentkit.Block) []acp.SessionUpdate {
	tu := t.tools[b.ToolUseID]
	if tu == nil {
		tu = &toolUse{}
		t.tools[b.ToolUseID] = tu
	}
	if tu.plan || tu.done {
		return nil
	}
	tu.done = true
	text, structured := resultText(b.Content)
	status := acp.ToolCallStatusCompleted
	if b.IsError {
		status = acp.ToolCallStatusFailed
	}
	opts := []acp.ToolCallUpdateOpt{agentkit.Named(tu.name), acp.WithUpdateStatus(status), acp.WithUpdateRawOutput(structured)}
	if content := resultContent(tu.name, text, b.IsError); content != nil {
		opts = append(opts, acp.WithUpdateContent(content))
	} else if diff := editDiff(tu, structured, t.cwd); diff != nil {
		opts = append(opts, acp.WithUpdateContent(diff))
	}
	return []acp.SessionUpdate{acp.UpdateToolCall(acp.ToolCallId(b.ToolUseID), opts...)}
}

// editDiff is the diff edit_file reports it made, which replaces the one
// its input promised.
func editDiff(tu *toolUse, structured any, cwd string) []acp.ToolCallContent {
	res, _ := structured.(map[string]any)
	diff, _ := res["diff"].(string)
	if tu.name != "edit_file" || diff == "" {
		return nil
	}
	return agentkit.Diffs(filePath(tu.input, cwd), agentkit.UnifiedEdit(diff))
}

// Abandon fails the session's tool calls that got no result: the turn
// ended without them (the bridge fails the subagents' open ones).
func (t *Translator) Abandon() []acp.SessionUpdate {
	var out []acp.SessionUpdate
	for id, tu := range t.tools {
		if !tu.done && !tu.plan && t.ChildOf(id) == "" {
			tu.done = true
			out = append(out, acp.UpdateToolCall(acp.ToolCallId(id), agentkit.Named(tu.name), acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		}
	}
	slices.SortFunc(out, func(a, b acp.SessionUpdate) int {
		return strings.Compare(string(a.ToolCallUpdate.ToolCallId), string(b.ToolCallUpdate.ToolCallId))
	})
	return out
}

// resultText reads a tool_result's content: amp sends a string, the JSON
// of the tool's result when that was not a string. It returns the text to
// show and the raw output.
func resultText(raw json.RawMessage) (string, any) {
	s := agentkit.ResultText(raw)
	var v map[string]any
	if json.Unmarshal([]byte(s), &v) != nil || v == nil {
		return s, map[string]any{"output": s}
	}
	in := agentkit.Input(v)
	if text := in.Str("output", "content", "text", "result", "message", "error"); text != "" {
		if code, ok := v["exitCode"].(float64); ok && code != 0 {
			text = strings.TrimRight(text, "\n") + fmt.Sprintf("\n(exit code %d)", int(code))
		}
		return text, v
	}
	return s, v
}

// result ends the turn.
func (t *Translator) result(l line) *Result {
	usage := t.usage
	r := &Result{StopReason: acp.StopReasonEndTurn, Usage: &usage}
	if t.stop == "max_tokens" {
		r.StopReason = acp.StopReasonMaxTokens
	}
	t.usage, t.stop = acp.Usage{}, ""
	if !l.IsError && l.Subtype == "success" {
		return r
	}
	r.Err = strings.TrimSpace(cmp.Or(l.Error, l.Result))
	lower := strings.ToLower(r.Err)
	switch {
	case l.Subtype == "error_max_turns":
		r.StopReason, r.Err = acp.StopReasonMaxTurnRequests, ""
	case strings.Contains(lower, "user cancelled"):
		r.Cancelled = true
	case strings.Contains(lower, "require user approval"):
		r.ApprovalRequired = true
	case authError(lower):
		r.AuthRequired = true
	}
	if r.Err == "" && r.StopReason != acp.StopReasonMaxTurnRequests {
		r.Err = "amp ended the turn with " + cmp.Or(l.Subtype, "an error")
	}
	return r
}

// authError tells amp's messages about a missing or refused key.
func authError(lower string) bool { return authWords().MatchString(lower) }

// authWords is compiled at its first use, not at every bridge's start.
var authWords = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\bunauthori[sz]ed\b|invalid api key|no api key|amp login|not logged in|\b401\b`)
})
