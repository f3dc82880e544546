package acpagent

import (
	"context"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Config is the downstream's select options as it last told them, and its
// modes as the mode option when it has no option of that id. Boolean
// options are not shown (the bridge's options are selects).
func (s *session) Config() []agent.ConfigOption {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []agent.ConfigOption
	for _, o := range s.options {
		if o.Select != nil {
			out = append(out, fromSelect(o.Select))
		}
	}
	if s.modes != nil && len(s.modes.AvailableModes) > 0 && !has(out, agent.ConfigMode) {
		out = append(out, fromModes(s.modes))
	}
	return out
}

func fromSelect(o *acp.SessionConfigOptionSelect) agent.ConfigOption {
	c := agent.ConfigOption{ID: string(o.Id), Name: o.Name, Current: string(o.CurrentValue)}
	if o.Description != nil {
		c.Description = *o.Description
	}
	if o.Category != nil {
		c.Category = *o.Category
	}
	var choices []acp.SessionConfigSelectOption
	switch {
	case o.Options.Ungrouped != nil:
		choices = *o.Options.Ungrouped
	case o.Options.Grouped != nil:
		for _, g := range *o.Options.Grouped {
			choices = append(choices, g.Options...)
		}
	}
	for _, ch := range choices {
		choice := agent.ConfigValue{Value: string(ch.Value), Name: ch.Name}
		if ch.Description != nil {
			choice.Description = *ch.Description
		}
		c.Choices = append(c.Choices, choice)
	}
	return c
}

func fromModes(m *acp.SessionModeState) agent.ConfigOption {
	c := agent.ConfigOption{ID: agent.ConfigMode, Name: "Mode", Category: acp.SessionConfigOptionCategoryMode, Current: string(m.CurrentModeId)}
	for _, mode := range m.AvailableModes {
		choice := agent.ConfigValue{Value: string(mode.Id), Name: mode.Name}
		if mode.Description != nil {
			choice.Description = *mode.Description
		}
		c.Choices = append(c.Choices, choice)
	}
	return c
}

func has(opts []agent.ConfigOption, id string) bool {
	for _, o := range opts {
		if o.ID == id {
			return true
		}
	}
	return false
}

// SetConfig sets a downstream option (session/set_config_option), or its
// mode (session/set_mode) where the mode option stands for its modes.
func (s *session) SetConfig(ctx context.Context, id, value string) error {
	c, err := s.att.Server(ctx)
	if err != nil {
		return err
	}
	s.mu.Lock()
	sid, viaModes := s.id, id == agent.ConfigMode && !s.hasOption(id) && s.modes != nil
	s.mu.Unlock()
	if viaModes {
		if _, err := c.cs.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: sid, ModeId: acp.SessionModeId(value)}); err != nil {
			return agentError("session/set_mode", err)
		}
		s.mu.Lock()
		s.modes.CurrentModeId = acp.SessionModeId(value)
		s.mu.Unlock()
		return nil
	}
	r, err := c.cs.SetSessionConfigOption(ctx, acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: sid, ConfigId: acp.SessionConfigId(id), Value: acp.SessionConfigValueId(value)}})
	if err != nil {
		return agentError("session/set_config_option", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.ConfigOptions != nil {
		s.options = r.ConfigOptions
	}
	return nil
}

// hasOption reports whether the downstream has a select option id; call
// with s.mu held.
func (s *session) hasOption(id string) bool {
	for _, o := range s.options {
		if o.Select != nil && string(o.Select.Id) == id {
			return true
		}
	}
	return false
}
