package edge

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// setup is what a session/new, load, resume or fork asks of the session,
// its system prompt checked as the schema asks: a known mode, text
// blocks, not none (the agent's own modes are the bridge's to check).
func setup(cwd string, dirs []string, mcp []acp.McpServer, prompt *acp.SystemPrompt) (bridge.Setup, error) {
	p, err := systemPrompt(prompt)
	return bridge.Setup{Cwd: cwd, Directories: dirs, MCP: mcp, SystemPrompt: p}, err
}

func systemPrompt(p *acp.SystemPrompt) (*agent.SystemPrompt, error) {
	if p == nil {
		return nil, nil
	}
	var out agent.SystemPrompt
	switch p.Mode {
	case acp.SystemPromptModeAppend:
	case acp.SystemPromptModeOverride:
		out.Override = true
	default:
		return nil, fmt.Errorf("%w: systemPrompt: mode %q is not one acpbridge knows (append, override)", agent.ErrInvalidParams, p.Mode)
	}
	if len(p.Content) == 0 {
		return nil, fmt.Errorf("%w: systemPrompt: content is empty", agent.ErrInvalidParams)
	}
	texts := make([]string, 0, len(p.Content))
	for i, b := range p.Content {
		if b.Text == nil {
			return nil, fmt.Errorf("%w: systemPrompt: content[%d] is not a text block; a system prompt takes text only", agent.ErrInvalidParams, i)
		}
		texts = append(texts, b.Text.Text)
	}
	out.Text = strings.Join(texts, "\n\n")
	return &out, nil
}

// directoriesCap is sessionCapabilities.additionalDirectories for an
// agent with caps: advertised only when its sessions take them.
func directoriesCap(caps agent.Caps) *acp.SessionAdditionalDirectoriesCapabilities {
	if !caps.Directories {
		return nil
	}
	return &acp.SessionAdditionalDirectoriesCapabilities{}
}

// systemPromptCap is sessionCapabilities.systemPrompt for an agent with
// caps: {} is append, mode.override adds override. ACP has no way to say
// override without append; an agent that takes only override is
// advertised as taking none.
func systemPromptCap(caps agent.Caps) *acp.SessionSystemPromptCapabilities {
	m := caps.SystemPrompt
	if !m.Append {
		return nil
	}
	c := &acp.SessionSystemPromptCapabilities{}
	if m.Override {
		c.Mode = &acp.SessionSystemPromptModeCapabilities{Override: &acp.SessionSystemPromptOverrideCapabilities{}}
	}
	return c
}
