package bridge

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// The config options every session offers (those the agent supports).
const (
	ConfigMode  = "mode"
	ConfigModel = "model"
	ConfigAgent = "agent"
)

// State is what session/new, load and resume answer with.
type State struct {
	Modes         *acp.SessionModeState
	ConfigOptions []acp.SessionConfigOption
}

// State returns the session's modes and config options.
func (s *Session) State() State {
	s.mu.Lock()
	n, agent := s.native, s.backend.Info().Name
	s.mu.Unlock()
	var st State
	var modes ModeState
	var models ModelState
	if n != nil {
		modes, models = n.Modes(), n.Models()
	}
	if len(modes.Available) > 0 {
		st.Modes = &acp.SessionModeState{CurrentModeId: acp.SessionModeId(modes.Current), AvailableModes: modes.Available}
		st.ConfigOptions = append(st.ConfigOptions, modeOption(modes))
	}
	if len(models.Available) > 0 {
		st.ConfigOptions = append(st.ConfigOptions, modelOption(models))
	}
	st.ConfigOptions = append(st.ConfigOptions, s.m.agentOption(agent))
	return st
}

func modeOption(ms ModeState) acp.SessionConfigOption {
	opts := make(acp.SessionConfigSelectOptionsUngrouped, len(ms.Available))
	for i, m := range ms.Available {
		opts[i] = acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m.Id), Name: m.Name, Description: m.Description}
	}
	return selectOption(ConfigMode, "Mode", acp.SessionConfigOptionCategoryMode, ms.Current, opts)
}

func modelOption(ms ModelState) acp.SessionConfigOption {
	opts := make(acp.SessionConfigSelectOptionsUngrouped, len(ms.Available))
	for i, m := range ms.Available {
		opts[i] = acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m.ID), Name: m.Name, Description: optional(m.Description)}
	}
	return selectOption(ConfigModel, "Model", acp.SessionConfigOptionCategoryModel, ms.Current, opts)
}

func (m *Manager) agentOption(current string) acp.SessionConfigOption {
	infos := m.Agents()
	opts := make(acp.SessionConfigSelectOptionsUngrouped, len(infos))
	for i, in := range infos {
		opts[i] = acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(in.Name), Name: in.Title}
	}
	o := selectOption(ConfigAgent, "Agent", "", current, opts)
	o.Select.Description = optional("The coding agent behind this session; it can change until the first prompt")
	return o
}

func selectOption(id, name string, cat acp.SessionConfigOptionCategory, current string, opts acp.SessionConfigSelectOptionsUngrouped) acp.SessionConfigOption {
	o := acp.NewSessionConfigOptionSelect(acp.SessionConfigValueId(current), acp.SessionConfigSelectOptions{Ungrouped: &opts})
	o.Select.Id, o.Select.Name = acp.SessionConfigId(id), name
	if cat != "" {
		o.Select.Category = &cat
	}
	return o
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// SetMode switches the session's mode.
func (s *Session) SetMode(ctx context.Context, id string) error {
	if err := s.setMode(ctx, id); err != nil {
		return err
	}
	s.deliver(acp.SessionUpdate{ConfigOptionUpdate: &acp.SessionConfigOptionUpdate{ConfigOptions: s.State().ConfigOptions}})
	return nil
}

func (s *Session) setMode(ctx context.Context, id string) error {
	n, err := s.liveNative()
	if err != nil {
		return err
	}
	ms := n.Modes()
	if !slices.ContainsFunc(ms.Available, func(m acp.SessionMode) bool { return string(m.Id) == id }) {
		return fmt.Errorf("%w: unknown mode %q; the modes are %s", ErrInvalidParams, id, modeIDs(ms))
	}
	if err := n.SetMode(ctx, id); err != nil {
		return fmt.Errorf("setting mode: %w", err)
	}
	s.mu.Lock()
	s.header.Mode = id
	s.mu.Unlock()
	s.saveHeader()
	return nil
}

func modeIDs(ms ModeState) string {
	ids := make([]string, len(ms.Available))
	for i, m := range ms.Available {
		ids[i] = string(m.Id)
	}
	return strings.Join(ids, ", ")
}

// liveNative returns the native session, reopening one abandoned after a
// hung turn.
func (s *Session) liveNative() (Native, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("%w: %s is closed", ErrSessionNotFound, s.id)
	}
	if s.native == nil {
		return nil, fmt.Errorf("%w: the agent of session %s is restarting; prompt again", ErrBusy, s.id)
	}
	return s.native, nil
}

// SetConfigOption sets one config option and returns them all.
func (s *Session) SetConfigOption(ctx context.Context, id, value string) ([]acp.SessionConfigOption, error) {
	var err error
	switch id {
	case ConfigMode:
		if err = s.setMode(ctx, value); err == nil {
			s.deliver(acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: acp.SessionModeId(value)}})
		}
	case ConfigModel:
		err = s.setModel(ctx, value)
	case ConfigAgent:
		err = s.switchAgent(ctx, value)
	default:
		err = fmt.Errorf("%w: unknown config option %q", ErrInvalidParams, id)
	}
	if err != nil {
		return nil, err
	}
	return s.State().ConfigOptions, nil
}

func (s *Session) setModel(ctx context.Context, id string) error {
	n, err := s.liveNative()
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(n.Models().Available, func(m Model) bool { return m.ID == id }) {
		return fmt.Errorf("%w: unknown model %q", ErrInvalidParams, id)
	}
	if err := n.SetModel(ctx, id); err != nil {
		return fmt.Errorf("setting model: %w", err)
	}
	s.mu.Lock()
	s.header.Model = id
	s.mu.Unlock()
	s.saveHeader()
	return nil
}

// switchAgent moves a session that has not started its conversation to
// another backend.
func (s *Session) switchAgent(ctx context.Context, name string) error {
	b := s.m.backends[name]
	if b == nil {
		return fmt.Errorf("%w: agent %q is not available here; choose one of %s", ErrInvalidParams, name, s.m.agentNames())
	}
	s.mu.Lock()
	old, opts := s.native, s.opts
	switch {
	case s.backend == b:
		s.mu.Unlock()
		return nil
	case s.prompted || s.turn != nil:
		s.mu.Unlock()
		return fmt.Errorf("%w: the agent of session %s can't change after the conversation has started", ErrInvalidParams, s.id)
	}
	prev := s.backend
	s.backend = b
	s.mu.Unlock()
	opts.NativeID, opts.Mode, opts.Model = "", "", ""
	if err := s.open(ctx, opts); err != nil {
		s.mu.Lock()
		s.backend = prev
		s.mu.Unlock()
		return err
	}
	s.mu.Lock()
	s.header.Agent = name
	s.header.NativeHistory = s.m.nativeHistory(b)
	s.mu.Unlock()
	if old != nil {
		old.Close()
	}
	s.sendMu.Lock()
	s.keep = !s.m.nativeHistory(b)
	s.sendMu.Unlock()
	s.saveHeader()
	return nil
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
