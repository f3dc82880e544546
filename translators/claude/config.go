package claude

import (
	"context"
	"os"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Claude applies its mode, model and effort at once, through the control
// protocol, so none of its options is NextTurn.

var modes = []agent.ConfigValue{
	{Value: "default", Name: "Default", Description: "Ask before edits and commands"},
	{Value: "acceptEdits", Name: "Accept edits", Description: "Edit files without asking"},
	{Value: "plan", Name: "Plan", Description: "Plan, without editing or running anything"},
	{Value: "bypassPermissions", Name: "Bypass permissions", Description: "Do anything without asking"},
}

// bypassAllowed: the CLI refuses bypassPermissions as root outside a
// sandbox (IS_SANDBOX unset), so it is offered only elsewhere.
func bypassAllowed() bool { return os.Geteuid() != 0 || os.Getenv("IS_SANDBOX") != "" }

func modeOption() agent.ConfigOption {
	choices := modes
	if !bypassAllowed() {
		choices = modes[:3]
	}
	return agent.ConfigOption{ID: agent.ConfigMode, Name: "Mode", Category: acp.SessionConfigOptionCategoryMode,
		Current: "default", Choices: choices}
}

// aliases are offered until a CLI has told its models.
var aliases = []agent.ConfigValue{
	{Value: "default", Name: "Default", Description: "Claude Code's default model"},
	{Value: "sonnet", Name: "Sonnet"}, {Value: "opus", Name: "Opus"}, {Value: "haiku", Name: "Haiku"},
}

func modelOption(models []agent.ConfigValue) agent.ConfigOption {
	if len(models) == 0 {
		models = aliases
	}
	return agent.ConfigOption{ID: agent.ConfigModel, Name: "Model", Category: acp.SessionConfigOptionCategoryModel,
		Current: "default", Choices: models}
}

func effortOption() agent.ConfigOption {
	o := agentkit.EffortOption("As Claude Code's settings and the model decide", false, "low", "medium", "high", "xhigh")
	o.Description = "How hard Claude thinks before it answers"
	return o
}

func (s *session) Config() []agent.ConfigOption { return s.cfg.Options() }

// SetConfig applies an option through the control protocol, starting the
// CLI first if it is not running.
func (s *session) SetConfig(ctx context.Context, id, value string) error {
	var req map[string]any
	switch id {
	case agent.ConfigMode:
		req = map[string]any{"subtype": "set_permission_mode", "mode": value}
	case agent.ConfigModel:
		var model any = value
		if value == "default" {
			model = nil
		}
		req = map[string]any{"subtype": "set_model", "model": model}
	case agent.ConfigEffort:
		var level any = value
		if value == agentkit.EffortDefault {
			level = nil
		}
		req = map[string]any{"subtype": "apply_flag_settings", "settings": map[string]any{"effortLevel": level}}
	default:
		return nil
	}
	if err := s.configure(ctx, req); err != nil {
		return err
	}
	s.cfg.Set(id, value)
	return nil
}

func (s *session) configure(ctx context.Context, req map[string]any) error {
	p, err := s.ensure(ctx)
	if err != nil {
		return err
	}
	_, err = s.request(ctx, p, req)
	return err
}
