package claude

import (
	"context"
	"slices"
	"strings"

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

// bypassAllowed is Claude Code's own rule (2.1.x) for
// --allow-dangerously-skip-permissions and bypassPermissions, which it
// refuses to start with ("cannot be used with root/sudo privileges") as
// root unless IS_SANDBOX is exactly "1" or CLAUDE_CODE_BUBBLEWRAP is true
// (1, true, yes or on, in any case). env is the CLI's environment; its
// last value of a name counts, as it does for the process.
func bypassAllowed(root bool, env []string) bool {
	sandbox, bubblewrap := "", ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "IS_SANDBOX="); ok {
			sandbox = v
		}
		if v, ok := strings.CutPrefix(kv, "CLAUDE_CODE_BUBBLEWRAP="); ok {
			bubblewrap = v
		}
	}
	return !root || sandbox == "1" || slices.Contains([]string{"1", "true", "yes", "on"}, strings.ToLower(strings.TrimSpace(bubblewrap)))
}

// modeOption offers bypassPermissions only where the CLI takes it.
func modeOption(bypass bool) agent.ConfigOption {
	choices := modes
	if !bypass {
		choices = modes[:3]
	}
	return agent.ConfigOption{ID: agent.ConfigMode, Name: "Mode", Category: acp.SessionConfigOptionCategoryMode,
		Current: "default", Choices: choices}
}

// dropBypass stops offering bypassPermissions (the CLI refused it), and
// leaves it for the default mode if it was the session's, telling the
// client so in a notice.
func (s *session) dropBypass() {
	current := s.cfg.Get(agent.ConfigMode)
	s.cfg.Put(modeOption(false))
	if current != "bypassPermissions" {
		s.cfg.Adopt(agent.ConfigMode, current)
	} else {
		s.ev.Update(agentkit.Notice(acp.NoticeSeverityWarning, "Claude Code refused bypassPermissions",
			"it "+bypassRefusal+" (set IS_SANDBOX=1 in a sandbox to have it); the session runs in the default mode"))
	}
	s.ev.ConfigChanged()
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
