package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// echoBackend's sessions answer with what they were sent; it keeps what
// each session was opened with and sent.
type echoBackend struct {
	name string

	mu      sync.Mutex
	opens   []agent.OpenOptions
	prompts []string
	n       int
}

func (b *echoBackend) Info() agent.Info {
	return agent.Info{Name: b.name, Title: strings.ToUpper(b.name)}
}
func (b *echoBackend) Close() error { return nil }

func (b *echoBackend) Open(_ context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.opens = append(b.opens, opts)
	id := opts.NativeID
	if id == "" {
		b.n++
		id = fmt.Sprintf("%s-native-%d", b.name, b.n)
	}
	return &echoNative{b: b, id: id, ev: ev}, nil
}

func (b *echoBackend) sent() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.prompts...)
}

type echoNative struct {
	b  *echoBackend
	id string
	ev agent.Events
}

func (n *echoNative) NativeID() string                                { return n.id }
func (n *echoNative) Caps() agent.SessionCaps                         { return agent.SessionCaps{} }
func (n *echoNative) Close() error                                    { return nil }
func (n *echoNative) Config() []agent.ConfigOption                    { return nil }
func (n *echoNative) SetConfig(context.Context, string, string) error { return nil }

func (n *echoNative) Prompt(_ context.Context, t agent.Turn) (agent.TurnResult, error) {
	var text strings.Builder
	for _, b := range t.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	n.b.mu.Lock()
	n.b.prompts = append(n.b.prompts, text.String())
	n.b.mu.Unlock()
	n.ev.Update(acp.UpdateAgentMessageText(n.b.name + " answers " + lastLine(text.String())))
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// A session handed to another agent goes on there, and the new agent's
// first prompt carries the conversation; handed back, the first agent's
// own session goes on and is told only what happened meanwhile. The
// transcript marks each change, and the header names the current agent.
func TestHandoff_toAnotherAgentAndBack(t *testing.T) {
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	a, b := &echoBackend{name: "alpha"}, &echoBackend{name: "beta"}
	m, err := NewManager(Config{Backends: []agent.Backend{a, b}, Default: "alpha", Store: st, Persist: PersistAlways})
	if err != nil {
		t.Fatal(err)
	}
	c := &updatesClient{}
	m.SetClient(c)
	t.Cleanup(func() { m.Shutdown() })
	ctx := context.Background()
	s, err := m.New(ctx, Setup{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	say := func(p string) {
		t.Helper()
		if _, err := s.Prompt(ctx, Arrival{}, text(p)); err != nil {
			t.Fatal(err)
		}
	}
	say("first question")
	if _, err := s.SetConfigOption(ctx, ConfigAgent, "beta"); err != nil {
		t.Fatalf("handing the session to beta: %v", err)
	}
	say("second question")
	got := b.sent()[0]
	for _, want := range []string{"another coding agent (alpha)", "User: first question", "Agent: alpha answers first question", "second question"} {
		if !strings.Contains(got, want) {
			t.Errorf("beta's first prompt lacks %q:\n%s", want, got)
		}
	}
	say("third question")
	if got := b.sent()[1]; got != "third question" {
		t.Errorf("beta's second prompt carried the history again: %q", got)
	}

	if _, err := s.SetConfigOption(ctx, ConfigAgent, "alpha"); err != nil {
		t.Fatalf("handing the session back: %v", err)
	}
	say("fourth question")
	a.mu.Lock()
	reopened := a.opens[len(a.opens)-1].NativeID
	a.mu.Unlock()
	if reopened != "alpha-native-1" {
		t.Errorf("handed back, alpha opened native session %q, want its own alpha-native-1", reopened)
	}
	got = a.sent()[1]
	if !strings.Contains(got, "You had this session before") || !strings.Contains(got, "beta answers third question") || strings.Contains(got, "User: first question") {
		t.Errorf("alpha, handed back, was told:\n%s", got)
	}
	if h := s.Header(); h.Agent != "alpha" || h.Handoffs["beta"].NativeID != "beta-native-1" {
		t.Errorf("header: agent %q, handoffs %+v", h.Agent, h.Handoffs)
	}
	tr, err := st.Read(s.ID())
	if err != nil {
		t.Fatal(err)
	}
	replay := string(joinRaw(Replay(tr.Entries)))
	if !strings.Contains(replay, "Handed over from alpha to BETA") || !strings.Contains(replay, "Handed over from beta to ALPHA") {
		t.Errorf("the transcript does not mark the changes of agent:\n%s", replay)
	}
}

func joinRaw(rs []json.RawMessage) []byte {
	var out []byte
	for _, r := range rs {
		out = append(append(out, r...), '\n')
	}
	return out
}
