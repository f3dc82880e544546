package codex

import (
	"cmp"
	"encoding/json"
	"slices"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Codex takes its mode (approval policy and sandbox), model and reasoning
// effort with a turn (turn/start), and keeps them for the later turns of
// the thread: all three are NextTurn options.

// modeConfig is the mode a session starts in unless the user picks one:
// whatever codex's own config.toml says. The bridge sends no approval
// policy or sandbox until the user picks a preset.
const modeConfig = "config"

// preset is a mode: an approval policy and a sandbox.
type preset struct {
	approval string // approvalPolicy
	sandbox  string // thread/start's sandbox
	policy   string // turn/start's sandboxPolicy type
}

var presets = map[string]preset{
	"ask":         {"untrusted", "workspace-write", "workspaceWrite"},
	"read-only":   {"on-request", "read-only", "readOnly"},
	"auto":        {"on-request", "workspace-write", "workspaceWrite"},
	"full-access": {"never", "danger-full-access", "dangerFullAccess"},
}

var modes = []agent.ConfigValue{
	{Value: modeConfig, Name: "As configured", Description: "Codex's own config.toml decides approvals and the sandbox"},
	{Value: "ask", Name: "Ask", Description: "Ask before every command and edit that is not known to be safe"},
	{Value: "read-only", Name: "Read only", Description: "Read and run in a read-only sandbox"},
	{Value: "auto", Name: "Auto", Description: "Edit and run in the workspace; ask before anything else"},
	{Value: "full-access", Name: "Full access", Description: "Edit and run anything without asking"},
}

// modeOption offers the presets, and config.toml's policy only while no
// preset has been sent: codex keeps the last override of a thread.
// ConfigCollaboration is the option of Codex's collaboration mode:
// "default", or "plan", where Codex works out a plan with the user before
// it changes anything (turn/start's collaborationMode, experimental in
// app-server 0.169.0).
const ConfigCollaboration = "collaboration"

func collaborationOption(current string) agent.ConfigOption {
	return agent.ConfigOption{ID: ConfigCollaboration, Name: "Collaboration",
		Current: cmp.Or(current, "default"), NextTurn: true, Choices: []agent.ConfigValue{
			{Value: "default", Name: "Default", Description: "Codex works on the task"},
			{Value: "plan", Name: "Plan", Description: "Codex plans with you first and changes nothing"},
		}}
}

func modeOption(current string) agent.ConfigOption {
	choices := modes
	if current != modeConfig {
		choices = modes[1:]
	}
	return agent.ConfigOption{ID: agent.ConfigMode, Name: "Mode", Category: acp.SessionConfigOptionCategoryMode,
		Current: current, Choices: choices, NextTurn: true}
}

// modelDoc is one entry of model/list, decoded leniently.
type modelDoc struct {
	ID                        string            `json:"id"`
	Model                     string            `json:"model"`
	DisplayName               string            `json:"displayName"`
	Description               string            `json:"description"`
	Hidden                    bool              `json:"hidden"`
	IsDefault                 bool              `json:"isDefault"`
	DefaultReasoningEffort    string            `json:"defaultReasoningEffort"`
	SupportedReasoningEfforts []json.RawMessage `json:"supportedReasoningEfforts"`
}

func (m modelDoc) slug() string { return cmp.Or(m.Model, m.ID) }

// efforts lists a model's reasoning efforts (strings or objects).
func (m modelDoc) efforts() []string {
	var out []string
	for _, raw := range m.SupportedReasoningEfforts {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			out = append(out, s)
			continue
		}
		var o struct {
			ReasoningEffort string `json:"reasoningEffort"`
		}
		if json.Unmarshal(raw, &o) == nil && o.ReasoningEffort != "" {
			out = append(out, o.ReasoningEffort)
		}
	}
	return out
}

// modelOptions are the model and effort options for the models of
// model/list: every model that is not hidden, and every effort any of
// them supports. current is the thread's model, or "" for codex's
// default one.
func modelOptions(docs []modelDoc, current string) (model, effort agent.ConfigOption) {
	model = agent.ConfigOption{ID: agent.ConfigModel, Name: "Model", Category: acp.SessionConfigOptionCategoryModel, NextTurn: true, Current: current}
	var efforts []string
	for _, m := range docs {
		if m.Hidden && m.slug() != current {
			continue
		}
		model.Choices = append(model.Choices, agent.ConfigValue{Value: m.slug(), Name: cmp.Or(m.DisplayName, m.slug()), Description: m.Description})
		if model.Current == "" && m.IsDefault {
			model.Current = m.slug()
		}
		for _, e := range m.efforts() {
			if !slices.Contains(efforts, e) {
				efforts = append(efforts, e)
			}
		}
	}
	effort = agentkit.EffortOption("The model's own default, or config.toml's", true, efforts...)
	if model.Current != "" && !slices.ContainsFunc(model.Choices, func(c agent.ConfigValue) bool { return c.Value == model.Current }) {
		model.Choices = append(model.Choices, agent.ConfigValue{Value: model.Current, Name: model.Current})
	}
	return model, effort
}
