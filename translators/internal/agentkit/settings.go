package agentkit

import (
	"slices"
	"sync"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Settings holds a session's config options and their current values. It
// is what a Native's Config returns and what its SetConfig and turns
// change. It is safe for concurrent use.
type Settings struct {
	mu   sync.Mutex
	opts []agent.ConfigOption
}

// NewSettings returns Settings with opts, in the order the client shows
// them.
func NewSettings(opts ...agent.ConfigOption) *Settings {
	return &Settings{opts: opts}
}

// Options returns a copy of the options.
func (s *Settings) Options() []agent.ConfigOption {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.opts)
	for i := range out {
		out[i].Choices = slices.Clone(out[i].Choices)
	}
	return out
}

// Option returns a copy of one option.
func (s *Settings) Option(id string) (agent.ConfigOption, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	if i < 0 {
		return agent.ConfigOption{}, false
	}
	o := s.opts[i]
	o.Choices = slices.Clone(o.Choices)
	return o, true
}

// Get returns an option's current value, or "" if there is no such option.
func (s *Settings) Get(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.index(id); i >= 0 {
		return s.opts[i].Current
	}
	return ""
}

// Set makes value an option's current value and reports whether that
// changed it. It does not check the choices: an agent may report a value
// the bridge does not offer.
func (s *Settings) Set(id, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	if i < 0 || s.opts[i].Current == value {
		return false
	}
	s.opts[i].Current = value
	return true
}

// Restore sets the options to values recorded earlier in the session,
// skipping a value an option no longer offers.
func (s *Settings) Restore(values map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, v := range values {
		if i := s.index(id); i >= 0 && offers(s.opts[i], v) {
			s.opts[i].Current = v
		}
	}
}

// Adopt makes value an option's current value, adding it to the choices
// if they lack it: a model the agent runs that the bridge did not offer,
// say.
func (s *Settings) Adopt(id, value string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	if i < 0 {
		return
	}
	if !offers(s.opts[i], value) {
		s.opts[i].Choices = append(slices.Clone(s.opts[i].Choices), agent.ConfigValue{Value: value, Name: value})
	}
	s.opts[i].Current = value
}

// Put adds an option, or replaces the one with its id, keeping its place.
func (s *Settings) Put(o agent.ConfigOption) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.index(o.ID); i >= 0 {
		s.opts[i] = o
		return
	}
	s.opts = append(s.opts, o)
}

// Remove drops an option.
func (s *Settings) Remove(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := s.index(id); i >= 0 {
		s.opts = slices.Delete(s.opts, i, i+1)
	}
}

// Offers reports whether option id offers value.
func (s *Settings) Offers(id, value string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.index(id)
	return i >= 0 && offers(s.opts[i], value)
}

func (s *Settings) index(id string) int {
	return slices.IndexFunc(s.opts, func(o agent.ConfigOption) bool { return o.ID == id })
}

func offers(o agent.ConfigOption, value string) bool {
	return slices.ContainsFunc(o.Choices, func(c agent.ConfigValue) bool { return c.Value == value })
}

// EffortDefault is the effort option's value that leaves the effort to
// the agent's settings and the model.
const EffortDefault = "default"

// EffortOption is the effort option (category thought_level): the
// default (described by about), then efforts, in order.
func EffortOption(about string, nextTurn bool, efforts ...string) agent.ConfigOption {
	o := agent.ConfigOption{ID: agent.ConfigEffort, Name: "Effort", Category: acp.SessionConfigOptionCategoryThoughtLevel,
		Current: EffortDefault, NextTurn: nextTurn, Choices: []agent.ConfigValue{{Value: EffortDefault, Name: "Default", Description: about}}}
	for _, e := range efforts {
		name := Capitalize(e)
		if e == "xhigh" {
			name = "Extra high"
		}
		o.Choices = append(o.Choices, agent.ConfigValue{Value: e, Name: name})
	}
	return o
}
