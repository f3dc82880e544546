package serve

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	sdk "github.com/coder/acp-go-sdk"
)

// The model both web protocols share: what a translator knows of a tool
// call and of the text it streams, and how a permission ask is answered.

// span is a text or thought the protocol streams as one piece (a part, a
// message), if one is open.
type span struct {
	id    string // the protocol's id for it, "" when none is open
	acpID string // the ACP message id it streams, if the agent gave one
}

// uiTool is what a translator knows of a tool call, as the updates have
// told it.
type uiTool struct {
	title     string
	kind      sdk.ToolKind
	input     any
	content   []sdk.ToolCallContent
	rawOutput any
	locations []sdk.ToolCallLocation
	inputSent bool // tool-input-available went out
	done      bool // its output (or error) went out
}

// merge folds an update's fields into what is known of the tool call.
func (tool *uiTool) merge(u *sdk.SessionToolCallUpdate) {
	if u.Title != nil && *u.Title != "" {
		tool.title = *u.Title
	}
	if u.Kind != nil && *u.Kind != "" {
		tool.kind = *u.Kind
	}
	if u.RawInput != nil {
		tool.input = u.RawInput
	}
	if u.Content != nil {
		tool.content = u.Content
	}
	if u.RawOutput != nil {
		tool.rawOutput = u.RawOutput
	}
	if u.Locations != nil {
		tool.locations = u.Locations
	}
}

// toolName is a tool part's name: the ACP kind (read, edit, execute, …).
func toolName(k sdk.ToolKind) string {
	if k == "" {
		return string(sdk.ToolKindOther)
	}
	return string(k)
}

// output is a finished tool call's output: its content (text, diffs,
// terminals, as ACP has them), raw output and locations.
func (tool *uiTool) output() map[string]any {
	out := map[string]any{"content": tool.content}
	if tool.content == nil {
		out["content"] = []sdk.ToolCallContent{}
	}
	if tool.rawOutput != nil {
		out["rawOutput"] = tool.rawOutput
	}
	if len(tool.locations) > 0 {
		out["locations"] = tool.locations
	}
	return out
}

// failure says why a tool call failed: its raw output's error, else its
// text content, else that it failed.
func (tool *uiTool) failure() string {
	if m, ok := tool.rawOutput.(map[string]any); ok {
		if s, ok := m["error"].(string); ok && s != "" {
			return s
		}
	}
	var texts []string
	for _, c := range tool.content {
		if c.Content != nil && c.Content.Content.Text != nil {
			texts = append(texts, c.Content.Content.Text.Text)
		}
	}
	if s := strings.TrimSpace(strings.Join(texts, "\n")); s != "" {
		return s
	}
	return "the tool call failed"
}

// rejected reports whether the web client answered the ask with an option
// that rejects (not one cancelled, which the client never answered).
func (a *ask) rejected() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.outcome != nil && a.outcome.Selected != nil && isReject(a.kindOf(string(a.outcome.Selected.OptionId)))
}

func isReject(k sdk.PermissionOptionKind) bool {
	return k == sdk.PermissionOptionKindRejectOnce || k == sdk.PermissionOptionKindRejectAlways
}

// kindOf is the kind of the ask's option id, or "".
func (a *ask) kindOf(id string) sdk.PermissionOptionKind {
	if o := a.option(id); o != nil {
		return o.Kind
	}
	return ""
}

// outcomeOf is the permission outcome for an approval: the option
// optionID if given, else the ask's first that allows (approved) or
// rejects; cancelled if it has none.
func outcomeOf(a *ask, approved bool, optionID string) (sdk.RequestPermissionOutcome, error) {
	if optionID != "" {
		if a.option(optionID) == nil {
			return sdk.RequestPermissionOutcome{}, fmt.Errorf("%w: option %q is not one of ask %s's", errBadRequest, optionID, a.id)
		}
		return sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(optionID)), nil
	}
	o := a.optionOf(sdk.PermissionOptionKindRejectOnce, sdk.PermissionOptionKindRejectAlways)
	if approved {
		o = a.optionOf(sdk.PermissionOptionKindAllowOnce, sdk.PermissionOptionKindAllowAlways)
	}
	if o == nil {
		return sdk.NewRequestPermissionOutcomeCancelled(), nil
	}
	return sdk.NewRequestPermissionOutcomeSelected(o.OptionId), nil
}

// tellHistory puts a conversation the bridge did not know (as
// agent.HistoryText tells it) before a new session's first prompt.
func tellHistory(us []sdk.SessionUpdate, prompt []sdk.ContentBlock) []sdk.ContentBlock {
	text := agent.HistoryText(us, agent.HistoryBudget, historyIntro)
	if text == "" {
		return prompt
	}
	return append([]sdk.ContentBlock{sdk.TextBlock(text)}, prompt...)
}

// historyIntro introduces the conversation a web client brought for a
// chat the bridge did not know.
const historyIntro = "This conversation continues an earlier one with the user, which a web client kept and " +
	"brought to acpbridge; here is what was said in it. Go on from there."
