package web

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// The model both web protocols share: what a translator knows of a tool
// call and of the text it streams, and how a permission ask is answered.

// Span is a text or thought the protocol streams as one piece (a part, a
// message), if one is open.
type Span struct {
	ID    string // the protocol's id for it, "" when none is open
	ACPID string // the ACP message id it streams, if the agent gave one
}

// Tool is what a translator knows of a tool call: the call as the
// updates have told it (folded with agent.FoldToolCall), and what the
// translator has sent of it.
type Tool struct {
	acp.SessionUpdateToolCall
	InputSent bool // its input (the arguments) went out
	Done      bool // its output (or error) went out
}

// Tools are a turn's tool calls, in the order they started.
type Tools struct {
	byID  map[acp.ToolCallId]*Tool
	order []acp.ToolCallId
}

// Get is tool call id, or nil if it has not started.
func (ts *Tools) Get(id acp.ToolCallId) *Tool { return ts.byID[id] }

// Start is tool call id, started now (added true) if it had not.
func (ts *Tools) Start(id acp.ToolCallId) (tool *Tool, added bool) {
	if tool := ts.byID[id]; tool != nil {
		return tool, false
	}
	if ts.byID == nil {
		ts.byID = map[acp.ToolCallId]*Tool{}
	}
	tool = &Tool{}
	ts.byID[id] = tool
	ts.order = append(ts.order, id)
	return tool, true
}

// IDs are the tool calls' ids, in the order they started.
func (ts *Tools) IDs() []acp.ToolCallId { return ts.order }

// Unfinished marks the tool calls whose output has not gone out Done and
// returns their ids, in the order they started: what a turn that ended
// left open.
func (ts *Tools) Unfinished() []acp.ToolCallId {
	var open []acp.ToolCallId
	for _, id := range ts.order {
		if tool := ts.byID[id]; !tool.Done {
			tool.Done = true
			open = append(open, id)
		}
	}
	return open
}

// Merge folds an update into what is known of the tool call. An empty
// title or kind keeps the one known.
func (tool *Tool) Merge(u *acp.SessionToolCallUpdate) {
	v := *u
	if v.Title != nil && *v.Title == "" {
		v.Title = nil
	}
	if v.Kind != nil && *v.Kind == "" {
		v.Kind = nil
	}
	agent.FoldToolCall(&tool.SessionUpdateToolCall, v)
}

// ToolName is a tool part's name: the ACP kind (read, edit, execute, …).
func ToolName(k acp.ToolKind) string {
	if k == "" {
		return string(acp.ToolKindOther)
	}
	return string(k)
}

// Output is a finished tool call's output: its content (text, diffs,
// terminals, as ACP has them), raw output and locations.
func (tool *Tool) Output() map[string]any {
	out := map[string]any{"content": tool.Content}
	if tool.Content == nil {
		out["content"] = []acp.ToolCallContent{}
	}
	if tool.RawOutput != nil {
		out["rawOutput"] = tool.RawOutput
	}
	if len(tool.Locations) > 0 {
		out["locations"] = tool.Locations
	}
	return out
}

// Failure says why a tool call failed: its raw output's error, else its
// text content, else that it failed.
func (tool *Tool) Failure() string {
	if m, ok := tool.RawOutput.(map[string]any); ok {
		if s, ok := m["error"].(string); ok && s != "" {
			return s
		}
	}
	var texts []string
	for _, c := range tool.Content {
		if c.Content != nil && c.Content.Content.Text != nil {
			texts = append(texts, c.Content.Content.Text.Text)
		}
	}
	if s := strings.TrimSpace(strings.Join(texts, "\n")); s != "" {
		return s
	}
	return "the tool call failed"
}

// Rejected reports whether the web client answered the ask with an option
// that rejects (not one cancelled, which the client never answered).
func (a *Ask) Rejected() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.outcome != nil && a.outcome.Selected != nil && isReject(a.kindOf(string(a.outcome.Selected.OptionId)))
}

// Answer says whether the ask was answered, and if so whether with an
// option that allows.
func (a *Ask) Answer() (answered, approved bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.outcome == nil {
		return false, false
	}
	if a.outcome.Selected == nil {
		return true, false
	}
	k := a.kindOf(string(a.outcome.Selected.OptionId))
	return true, k == acp.PermissionOptionKindAllowOnce || k == acp.PermissionOptionKindAllowAlways
}

func isReject(k acp.PermissionOptionKind) bool {
	return k == acp.PermissionOptionKindRejectOnce || k == acp.PermissionOptionKindRejectAlways
}

// kindOf is the kind of the ask's option id, or "".
func (a *Ask) kindOf(id string) acp.PermissionOptionKind {
	if o := a.option(id); o != nil {
		return o.Kind
	}
	return ""
}

// OutcomeOf is the permission outcome for an approval: the option
// optionID if given, else the ask's first that allows (approved) or
// rejects; cancelled if it has none.
func OutcomeOf(a *Ask, approved bool, optionID string) (acp.RequestPermissionOutcome, error) {
	if optionID != "" {
		if a.option(optionID) == nil {
			return acp.RequestPermissionOutcome{}, fmt.Errorf("%w: option %q is not one of ask %s's", ErrBadRequest, optionID, a.ID)
		}
		return acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(optionID)), nil
	}
	o := a.optionOf(acp.PermissionOptionKindRejectOnce, acp.PermissionOptionKindRejectAlways)
	if approved {
		o = a.optionOf(acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways)
	}
	if o == nil {
		return acp.NewRequestPermissionOutcomeCancelled(), nil
	}
	return acp.NewRequestPermissionOutcomeSelected(o.OptionId), nil
}

// TellHistory puts a conversation the bridge did not know (as
// agent.HistoryText tells it) before a new session's first prompt.
func TellHistory(us []acp.SessionUpdate, prompt []acp.ContentBlock) []acp.ContentBlock {
	text := agent.HistoryText(us, agent.HistoryBudget, historyIntro)
	if text == "" {
		return prompt
	}
	return append([]acp.ContentBlock{acp.TextBlock(text)}, prompt...)
}

// historyIntro introduces the conversation a web client brought for a
// chat the bridge did not know.
const historyIntro = "This conversation continues an earlier one with the user, which a web client kept and " +
	"brought to acpbridge; here is what was said in it. Go on from there."
