package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/coder/acp-go-sdk"
)

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

var modes = []acp.SessionMode{
	{Id: modeConfig, Name: "As configured", Description: ptr("Codex's own config.toml decides approvals and the sandbox")},
	{Id: "ask", Name: "Ask", Description: ptr("Ask before every command and edit that is not known to be safe")},
	{Id: "read-only", Name: "Read only", Description: ptr("Read and run in a read-only sandbox")},
	{Id: "auto", Name: "Auto", Description: ptr("Edit and run in the workspace; ask before anything else")},
	{Id: "full-access", Name: "Full access", Description: ptr("Edit and run anything without asking")},
}

func ptr(s string) *string { return &s }

func (s *session) Modes() bridge.ModeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bridge.ModeState{Current: s.mode, Available: modes}
}

// SetMode picks a preset, sent with the next turn. Going back to the
// config.toml policy is not possible inside a thread: codex keeps the
// last override.
func (s *session) SetMode(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == modeConfig && s.mode != modeConfig {
		return fmt.Errorf("%w: codex keeps the last mode of a thread; start a new session to use config.toml's policy again", bridge.ErrInvalidParams)
	}
	s.dirty = s.dirty || id != s.mode
	s.mode = id
	return nil
}

// modelDoc is one entry of model/list, decoded leniently.
type modelDoc struct {
	ID                        string            `json:"id"`
	Model                     string            `json:"model"`
	DisplayName               string            `json:"displayName"`
	Description               string            `json:"description"`
	Hidden                    bool              `json:"hidden"`
	SupportedReasoningEfforts []json.RawMessage `json:"supportedReasoningEfforts"`
}

func (m modelDoc) slug() string { return or(m.Model, m.ID) }

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

// loadModels asks the server for its models, once per bridge.
func (s *session) loadModels(ctx context.Context) error {
	s.b.mu.Lock()
	known := s.b.models != nil
	s.b.mu.Unlock()
	if known {
		return nil
	}
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	var res struct {
		Data []modelDoc `json:"data"`
	}
	if err := srv.call(ctx, "model/list", map[string]any{}, &res); err != nil {
		s.log.Warn("listing codex models", "err", err)
		return nil // the session works without the list
	}
	s.b.mu.Lock()
	s.b.models = res.Data
	s.b.mu.Unlock()
	return nil
}

// Models lists each model, and each with a reasoning effort as
// "model/effort", so that effort is picked with the model.
func (s *session) Models() bridge.ModelState {
	s.b.mu.Lock()
	docs := s.b.models
	s.b.mu.Unlock()
	var avail []bridge.Model
	for _, m := range docs {
		if m.Hidden {
			continue
		}
		name := or(m.DisplayName, m.slug())
		avail = append(avail, bridge.Model{ID: m.slug(), Name: name, Description: m.Description})
		for _, e := range m.efforts() {
			avail = append(avail, bridge.Model{ID: m.slug() + "/" + e, Name: name + " (" + e + " effort)"})
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return bridge.ModelState{Current: s.model, Available: avail}
}

// SetModel picks a model (and effort), sent with the next turn.
func (s *session) SetModel(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dirty = s.dirty || id != s.model
	s.model = id
	return nil
}

// splitModel splits "model/effort".
func splitModel(id string) (model, effort string) {
	model, effort, _ = strings.Cut(id, "/")
	return model, effort
}
