package bridge

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// configBackend's sessions offer a mode (applied at once), an effort
// (applied with the next turn) and record what they are given.
type configBackend struct {
	mu    sync.Mutex
	opens []agent.OpenOptions
	last  *configNative
}

func (b *configBackend) Info() agent.Info { return agent.Info{Name: "cfg", Title: "Config test"} }
func (b *configBackend) Close() error     { return nil }

func (b *configBackend) Open(_ context.Context, opts agent.OpenOptions, _ agent.Events) (agent.Native, error) {
	n := &configNative{values: map[string]string{"mode": "ask", "effort": "low"}}
	for id, v := range opts.Config {
		n.values[id] = v
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opens = append(b.opens, opts)
	b.last = n
	return n, nil
}

type configNative struct {
	mu     sync.Mutex
	values map[string]string
	sets   []string            // SetConfig calls, "id=value"
	turns  []map[string]string // agent.Turn.Config of each prompt
}

func (n *configNative) NativeID() string        { return "native-1" }
func (n *configNative) Caps() agent.SessionCaps { return agent.SessionCaps{} }
func (n *configNative) Close() error            { return nil }

func (n *configNative) Config() []agent.ConfigOption {
	n.mu.Lock()
	defer n.mu.Unlock()
	return []agent.ConfigOption{
		{ID: agent.ConfigMode, Name: "Mode", Category: acp.SessionConfigOptionCategoryMode, Current: n.values["mode"],
			Choices: []agent.ConfigValue{{Value: "ask", Name: "Ask"}, {Value: "auto", Name: "Auto"}}},
		{ID: "effort", Name: "Effort", Category: acp.SessionConfigOptionCategoryThoughtLevel, Current: n.values["effort"], NextTurn: true,
			Choices: []agent.ConfigValue{{Value: "low", Name: "Low"}, {Value: "high", Name: "High"}}},
	}
}

func (n *configNative) SetConfig(_ context.Context, id, value string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.sets = append(n.sets, id+"="+value)
	n.values[id] = value
	return nil
}

func (n *configNative) Prompt(_ context.Context, t agent.Turn) (agent.TurnResult, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.turns = append(n.turns, t.Config)
	maps.Copy(n.values, t.Config)
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}

// updatesClient keeps the updates it is sent.
type updatesClient struct {
	mu      sync.Mutex
	updates []acp.SessionUpdate
}

// Peer: none; replays are decoded.
func (c *updatesClient) Peer() Peer { return nil }

func (c *updatesClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n.Update)
	return nil
}

func (c *updatesClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

func newConfigManager(t *testing.T, dir string) (*Manager, *configBackend, *updatesClient) {
	t.Helper()
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := &configBackend{}
	m, err := NewManager(Config{Backends: []agent.Backend{b}, Default: "cfg", Store: st, Persist: PersistAlways})
	if err != nil {
		t.Fatal(err)
	}
	c := &updatesClient{}
	m.SetClient(c)
	t.Cleanup(func() { m.Shutdown() })
	return m, b, c
}

func current(opts []acp.SessionConfigOption) map[string]string {
	out := map[string]string{}
	for _, o := range opts {
		out[string(o.Select.Id)] = string(o.Select.CurrentValue)
	}
	return out
}

func TestConfig_stateOffersEveryOptionAndTheModes(t *testing.T) {
	m, _, _ := newConfigManager(t, t.TempDir())
	s, err := m.New(context.Background(), Setup{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	st := s.State()
	if diff := cmp.Diff(map[string]string{"mode": "ask", "effort": "low", "agent": "cfg"}, current(st.ConfigOptions)); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
	if st.Modes == nil || st.Modes.CurrentModeId != "ask" || len(st.Modes.AvailableModes) != 2 {
		t.Errorf("modes %+v, want ask of ask and auto", st.Modes)
	}
	if cat := st.ConfigOptions[1].Select.Category; cat == nil || *cat != acp.SessionConfigOptionCategoryThoughtLevel {
		t.Errorf("effort's category %v, want thought_level", cat)
	}
}

// TestConfig_nextTurnOptionsGoWithTheNextTurnOnce: a NextTurn option is
// current at once, reaches the agent with the next prompt and only then,
// and the agent is never asked to apply it itself.
func TestConfig_nextTurnOptionsGoWithTheNextTurnOnce(t *testing.T) {
	m, b, _ := newConfigManager(t, t.TempDir())
	ctx := context.Background()
	s, _ := m.New(ctx, Setup{Cwd: "/w"})
	opts, err := s.SetConfigOption(ctx, "effort", "high")
	if err != nil || current(opts)["effort"] != "high" {
		t.Fatalf("set effort: %v, options %v", err, current(opts))
	}
	for _, text := range []string{"one", "two"} {
		if _, err := s.Prompt(ctx, Arrival{}, []acp.ContentBlock{acp.TextBlock(text)}); err != nil {
			t.Fatal(err)
		}
	}
	n := b.last
	if diff := cmp.Diff([]map[string]string{{"effort": "high"}, nil}, n.turns); diff != "" {
		t.Errorf("turn configs (-want +got):\n%s", diff)
	}
	if len(n.sets) != 0 {
		t.Errorf("SetConfig called for a NextTurn option: %v", n.sets)
	}
	if got := current(s.State().ConfigOptions)["effort"]; got != "high" {
		t.Errorf("effort after the turn %q", got)
	}
}

func TestConfig_nextTurnChangeUndoneBeforeTheTurnSendsNothing(t *testing.T) {
	m, b, _ := newConfigManager(t, t.TempDir())
	ctx := context.Background()
	s, _ := m.New(ctx, Setup{Cwd: "/w"})
	s.SetConfigOption(ctx, "effort", "high")
	s.SetConfigOption(ctx, "effort", "low")
	s.Prompt(ctx, Arrival{}, []acp.ContentBlock{acp.TextBlock("hi")})
	if diff := cmp.Diff([]map[string]string{nil}, b.last.turns); diff != "" {
		t.Errorf("turn configs (-want +got):\n%s", diff)
	}
}

func TestConfig_optionsThatApplyNowReachTheAgentAtOnce(t *testing.T) {
	m, b, c := newConfigManager(t, t.TempDir())
	ctx := context.Background()
	s, _ := m.New(ctx, Setup{Cwd: "/w"})
	if _, err := s.SetConfigOption(ctx, "mode", "auto"); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMode(ctx, "ask"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"mode=auto", "mode=ask"}, b.last.sets); diff != "" {
		t.Errorf("SetConfig calls (-want +got):\n%s", diff)
	}
	var modeUpdates, optionUpdates int
	for _, u := range c.updates {
		if u.CurrentModeUpdate != nil {
			modeUpdates++
		}
		if u.ConfigOptionUpdate != nil {
			optionUpdates++
		}
	}
	if modeUpdates != 1 || optionUpdates != 1 {
		t.Errorf("%d current_mode_update and %d config_option_update; want one each (the other half of each pair)", modeUpdates, optionUpdates)
	}
}

func TestConfig_badOptionsAndValuesAreInvalidParams(t *testing.T) {
	m, _, _ := newConfigManager(t, t.TempDir())
	ctx := context.Background()
	s, _ := m.New(ctx, Setup{Cwd: "/w"})
	for _, tc := range [][2]string{{"colour", "red"}, {"mode", "yolo"}, {"effort", "max"}, {"agent", "nobody"}} {
		if _, err := s.SetConfigOption(ctx, tc[0], tc[1]); !errors.Is(err, agent.ErrInvalidParams) {
			t.Errorf("%s=%s: %v, want agent.ErrInvalidParams", tc[0], tc[1], err)
		}
	}
	if err := s.SetMode(ctx, "yolo"); !errors.Is(err, agent.ErrInvalidParams) {
		t.Errorf("set_mode yolo: %v, want agent.ErrInvalidParams", err)
	}
}

// TestConfig_valuesSurviveARestart: the header keeps every option's value,
// a NextTurn one not yet sent included, and a reopened session gets them.
func TestConfig_valuesSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	m, _, _ := newConfigManager(t, dir)
	s, _ := m.New(ctx, Setup{Cwd: "/w"})
	s.SetConfigOption(ctx, "mode", "auto")
	s.SetConfigOption(ctx, "effort", "high")
	id := s.ID()
	if err := m.Shutdown(); err != nil {
		t.Fatal(err)
	}
	m2, b2, _ := newConfigManager(t, dir)
	if _, err := m2.Resume(ctx, id, Setup{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"mode": "auto", "effort": "high"}, b2.opens[0].Config); diff != "" {
		t.Errorf("reopened with config (-want +got):\n%s", diff)
	}
}

// TestHeader_oldModeAndModelAreRead: headers written before Config kept
// mode and model on their own.
func TestHeader_oldModeAndModelAreRead(t *testing.T) {
	h := persist.Header{Mode: "plan", Model: "opus"}
	if got := h.ConfigValues(); !maps.Equal(got, map[string]string{"mode": "plan", "model": "opus"}) {
		t.Errorf("config of an old header %v", got)
	}
	h.Config = map[string]string{"effort": "low"}
	if got := h.ConfigValues(); !slices.Equal(slices.Sorted(maps.Keys(got)), []string{"effort"}) {
		t.Errorf("config of a new header %v", got)
	}
}
