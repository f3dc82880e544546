package bridge

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// ConfigAgent is the option the bridge adds to every session: which agent
// runs it (changing it hands the session over). The agent's own options
// keep the ids of package agent (agent.ConfigMode, ...).
const ConfigAgent = "agent"

// State is what session/new, load and resume answer with.
type State struct {
	Modes         *acp.SessionModeState
	ConfigOptions []acp.SessionConfigOption
	// Meta is what the agent has to say about how the session was opened
	// (agent.SessionCaps.Meta), for the _meta of session/new, load and resume.
	Meta map[string]any
}

// State returns the session's modes and config options.
func (s *Session) State() State {
	var st State
	for _, o := range s.options() {
		if o.ID == agent.ConfigMode {
			st.Modes = modeState(o)
		}
		st.ConfigOptions = append(st.ConfigOptions, selectOption(o))
	}
	s.mu.Lock()
	n := s.native
	s.mu.Unlock()
	st.Meta = capsOf(n).Meta
	if s.readOnly != nil {
		st.Meta = map[string]any{"acpbridge": map[string]any{"readOnly": true, "why": s.readOnly.Error()}}
	}
	return st
}

// capsOf is what the native session n declares it can do; nothing when
// there is none (its agent was stopped, or the session is read-only).
func capsOf(n agent.Native) agent.SessionCaps {
	if n == nil {
		return agent.SessionCaps{}
	}
	return n.Caps()
}

// options is the native session's config options, with the NextTurn
// values the client picked and the agent has not taken yet, and the agent
// option.
func (s *Session) options() []agent.ConfigOption {
	s.mu.Lock()
	n, name, pending := s.native, s.backend.Info().Name, maps.Clone(s.pending)
	s.mu.Unlock()
	var opts []agent.ConfigOption
	if n != nil {
		opts = n.Config()
	} else {
		s.mu.Lock()
		opts = slices.Clone(s.idleConfig) // its agent was stopped while idle
		s.mu.Unlock()
	}
	for i, o := range opts {
		if v, ok := pending[o.ID]; ok {
			opts[i].Current = v
		}
	}
	if writeFS(s.caps()) {
		s.mu.Lock()
		opts = append(opts, editsOption(cmp.Or(s.edits, EditsAgent)))
		s.mu.Unlock()
	}
	return append(opts, s.m.agentOption(name))
}

// values is the current value of each option but the agent, for the
// header.
func values(opts []agent.ConfigOption) map[string]string {
	vs := map[string]string{}
	for _, o := range opts {
		if o.ID != ConfigAgent && o.Current != "" {
			vs[o.ID] = o.Current
		}
	}
	return vs
}

func modeState(o agent.ConfigOption) *acp.SessionModeState {
	st := &acp.SessionModeState{CurrentModeId: acp.SessionModeId(o.Current), AvailableModes: []acp.SessionMode{}}
	for _, c := range o.Choices {
		st.AvailableModes = append(st.AvailableModes, acp.SessionMode{Id: acp.SessionModeId(c.Value), Name: c.Name, Description: optional(c.Description)})
	}
	return st
}

func selectOption(o agent.ConfigOption) acp.SessionConfigOption {
	choices := make(acp.SessionConfigSelectOptionsUngrouped, len(o.Choices))
	for i, c := range o.Choices {
		choices[i] = acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(c.Value), Name: c.Name, Description: optional(c.Description)}
	}
	so := acp.NewSessionConfigOptionSelect(acp.SessionConfigValueId(o.Current), acp.SessionConfigSelectOptions{Ungrouped: &choices})
	so.Select.Id, so.Select.Name, so.Select.Description = acp.SessionConfigId(o.ID), o.Name, optional(o.Description)
	if o.Category != "" {
		cat := o.Category
		so.Select.Category = &cat
	}
	return so
}

func (m *Manager) agentOption(current string) agent.ConfigOption {
	o := agent.ConfigOption{ID: ConfigAgent, Name: "Agent", Current: current,
		Description: "The coding agent behind this session; changed after the conversation started, the next agent is told what was said"}
	for _, in := range m.Agents() {
		o.Choices = append(o.Choices, agent.ConfigValue{Value: in.Name, Name: in.Title})
	}
	return o
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SetMode switches the session's mode (session/set_mode).
func (s *Session) SetMode(ctx context.Context, id string) error {
	if s.readOnly != nil {
		return s.readOnly
	}
	if err := s.set(ctx, agent.ConfigMode, id); err != nil {
		return err
	}
	s.deliver(acp.SessionUpdate{ConfigOptionUpdate: &acp.SessionConfigOptionUpdate{ConfigOptions: s.State().ConfigOptions}})
	return nil
}

// SetConfigOption sets one config option and returns them all.
func (s *Session) SetConfigOption(ctx context.Context, id, value string) ([]acp.SessionConfigOption, error) {
	if s.readOnly != nil {
		return nil, s.readOnly
	}
	var err error
	switch id {
	case ConfigAgent:
		err = s.switchAgent(value)
	case ConfigEdits:
		err = s.setEditsOption(value)
	default:
		err = s.set(ctx, id, value)
	}
	if err != nil {
		return nil, err
	}
	if id == agent.ConfigMode {
		s.deliver(acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: acp.SessionModeId(value)}})
	}
	return s.State().ConfigOptions, nil
}

// set checks a value against the option's choices and applies it: now,
// through the Native, or with the next turn for a NextTurn option.
func (s *Session) set(ctx context.Context, id, value string) error {
	n, err := s.liveNative()
	if err != nil {
		return err
	}
	opts := n.Config()
	i := slices.IndexFunc(opts, func(o agent.ConfigOption) bool { return o.ID == id })
	if i < 0 {
		return fmt.Errorf("%w: unknown config option %q; the options are %s", agent.ErrInvalidParams, id, optionIDs(opts))
	}
	o := opts[i]
	if !slices.ContainsFunc(o.Choices, func(c agent.ConfigValue) bool { return c.Value == value }) {
		return fmt.Errorf("%w: %s can't be %q; choose one of %s", agent.ErrInvalidParams, id, value, choiceValues(o))
	}
	if o.NextTurn {
		s.mu.Lock()
		if value == o.Current {
			delete(s.pending, id)
		} else {
			s.pending[id] = value
		}
		s.mu.Unlock()
	} else if err := n.SetConfig(ctx, id, value); err != nil {
		return fmt.Errorf("setting %s: %w", id, err)
	}
	s.saveHeader()
	return nil
}

func optionIDs(opts []agent.ConfigOption) string {
	ids := []string{ConfigAgent}
	for _, o := range opts {
		ids = append(ids, o.ID)
	}
	return strings.Join(ids, ", ")
}

func choiceValues(o agent.ConfigOption) string {
	vs := make([]string, len(o.Choices))
	for i, c := range o.Choices {
		vs[i] = c.Value
	}
	return strings.Join(vs, ", ")
}

// takePending hands the NextTurn values picked since the last turn to the
// turn about to start.
func (s *Session) takePending() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 {
		return nil
	}
	p := s.pending
	s.pending = map[string]string{}
	return p
}

// liveNative returns the native session, reopening one abandoned after a
// hung turn.
func (s *Session) liveNative() (agent.Native, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: %s is closed", ErrSessionNotFound, s.id)
	}
	n, stopped, opts := s.native, s.idleConfig != nil, s.reopening()
	s.mu.Unlock()
	switch {
	case n != nil:
		return n, nil
	case !stopped:
		return nil, fmt.Errorf("%w: the agent of session %s is restarting; prompt again", ErrBusy, s.id)
	}
	opts.NativeID = s.nativeID() // stopped while idle: start it again
	if err := s.open(opts); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.native, nil
}

func (m *Manager) agentNames() string {
	var names []string
	for _, in := range m.Agents() {
		names = append(names, in.Name)
	}
	return strings.Join(names, ", ")
}

// Header returns the session's current header.
func (s *Session) Header() persist.Header {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.header
}
