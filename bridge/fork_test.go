package bridge

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// lazyBackend is an agent like codex: it forks its own sessions, keeps
// their history, and names a session only at its first turn. Its Open
// waits while gate is open.
type lazyBackend struct {
	gate  chan struct{} // if set, Open waits until it is closed
	mu    sync.Mutex
	forks []string
}

func (b *lazyBackend) Info() agent.Info {
	return agent.Info{Name: "lazy", Title: "Lazy", Caps: agent.Caps{Forks: true}}
}
func (b *lazyBackend) Close() error { return nil }
func (b *lazyBackend) Open(_ context.Context, opts agent.OpenOptions, _ agent.Events) (agent.Native, error) {
	if b.gate != nil {
		<-b.gate
	}
	b.mu.Lock()
	b.forks = append(b.forks, opts.ForkOf)
	b.mu.Unlock()
	return &lazyNative{id: opts.NativeID}, nil
}

type lazyNative struct {
	mu sync.Mutex
	id string
}

func (n *lazyNative) NativeID() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.id
}
func (n *lazyNative) Caps() agent.SessionCaps {
	return agent.SessionCaps{History: func(context.Context) ([]acp.SessionUpdate, error) { return nil, nil }}
}
func (n *lazyNative) Close() error                                    { return nil }
func (n *lazyNative) Config() []agent.ConfigOption                    { return nil }
func (n *lazyNative) SetConfig(context.Context, string, string) error { return nil }
func (n *lazyNative) Prompt(context.Context, agent.Turn) (agent.TurnResult, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.id == "" {
		n.id = "thread-1"
	}
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}

func lazyManager(t *testing.T, b *lazyBackend) *Manager {
	t.Helper()
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewManager(Config{Backends: []agent.Backend{b}, Default: "lazy", Store: st, Persist: PersistAuto})
	if err != nil {
		t.Fatal(err)
	}
	m.SetClient(&updatesClient{})
	t.Cleanup(func() { m.Shutdown() })
	return m
}

// A session with no turn yet forks, under --persist auto, even when its
// agent keeps the history and has not named its session: the fork is a
// new, empty session of the same agent.
func TestFork_emptySessionOfAnAgentThatKeepsItsHistory(t *testing.T) {
	b := &lazyBackend{}
	m := lazyManager(t, b)
	ctx := context.Background()
	s, err := m.New(ctx, Setup{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := m.Fork(ctx, s.ID(), Setup{Cwd: "/w"})
	if err != nil {
		t.Fatalf("fork of an empty session: %v", err)
	}
	if _, err := f.Prompt(ctx, Arrival{}, []acp.ContentBlock{acp.TextBlock("hi")}); err != nil {
		t.Fatalf("prompt on the fork: %v", err)
	}
	if b.forks[1] != "" {
		t.Errorf("the fork was opened forking %q, want a new session", b.forks[1])
	}
}

// A request for a session whose load is in flight waits for it (as a
// prompt waits for a running turn) instead of answering "not open", and a
// cancel sent meanwhile applies once it is open.
func TestGet_waitsForALoadInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &lazyBackend{}
		m := lazyManager(t, b)
		ctx := context.Background()
		s, err := m.New(ctx, Setup{Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		id := s.ID()
		if err := m.Close(ctx, id); err != nil {
			t.Fatal(err)
		}
		b.gate = make(chan struct{}) // the load's Open waits
		loaded := make(chan error, 1)
		go func() {
			_, err := m.Load(ctx, id, Setup{Cwd: "/w"})
			loaded <- err
		}()
		synctest.Wait()
		got := make(chan error, 1)
		go func() {
			_, err := m.Get(ctx, id)
			got <- err
		}()
		m.Cancel(id, 5)
		synctest.Wait()
		select {
		case err := <-got:
			t.Fatalf("Get answered %v while the load ran, want it to wait", err)
		default:
		}
		close(b.gate)
		if err := <-loaded; err != nil {
			t.Fatal(err)
		}
		if err := <-got; err != nil {
			t.Fatalf("Get after the load: %v", err)
		}
		live, _ := m.Get(ctx, id)
		res, err := live.Prompt(ctx, Arrival{At: 3}, []acp.ContentBlock{acp.TextBlock("sent before the cancel")})
		if err != nil || res.StopReason != acp.StopReasonCancelled {
			t.Errorf("a prompt that arrived before a cancel sent during the load: %v %v, want cancelled", res.StopReason, err)
		}
		short, cancel := context.WithTimeout(ctx, time.Millisecond)
		defer cancel()
		if _, err := m.Get(short, "00000000-0000-4000-8000-000000000000"); err == nil {
			t.Error("Get of a session nobody opens succeeded")
		}
	})
}

// forkReopened has backend b's bridge fork a session told "remember
// apple", restarts the bridge before the fork's first prompt, loads the
// fork in the new one and prompts it.
func forkReopened(t *testing.T, b agent.Backend) *Session {
	t.Helper()
	ctx := context.Background()
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	start := func() *Manager {
		m, err := NewManager(Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st, Persist: PersistAlways})
		if err != nil {
			t.Fatal(err)
		}
		m.SetClient(&updatesClient{})
		return m
	}
	m := start()
	parent, _ := m.New(ctx, Setup{Cwd: "/w"})
	parent.Prompt(ctx, Arrival{}, text("remember apple"))
	fork, err := m.Fork(ctx, parent.ID(), Setup{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	m.Shutdown()
	m = start()
	t.Cleanup(func() { m.Shutdown() })
	s, err := m.Load(ctx, fork.ID(), Setup{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, Arrival{}, text("what was it?")); err != nil {
		t.Fatal(err)
	}
	return s
}

// A fork reopened (after a restart) before its first prompt continues the
// parent's conversation: an agent that forks its own forks the parent's
// native session again (the fork had not named its own yet), and one
// that can't is told the conversation with the first prompt.
func TestFork_reopenedBeforeItsFirstPrompt(t *testing.T) {
	t.Run("native", func(t *testing.T) {
		b := &lazyBackend{}
		forkReopened(t, b)
		if got := b.forks[len(b.forks)-1]; got != "thread-1" {
			t.Errorf("the reopened fork was opened forking %q, want the parent's thread-1", got)
		}
	})
	t.Run("retold", func(t *testing.T) {
		b := &echoBackend{name: "echo"}
		s := forkReopened(t, b)
		sent := b.sent()
		if last := sent[len(sent)-1]; !strings.Contains(last, agent.ForkIntro) || !strings.Contains(last, "remember apple") {
			t.Errorf("the reopened fork's first prompt reached the agent as %q, want the conversation told first", last)
		}
		if _, err := s.Prompt(context.Background(), Arrival{}, text("again")); err != nil {
			t.Fatal(err)
		}
		if sent := b.sent(); sent[len(sent)-1] != "again" {
			t.Errorf("the fork's second prompt was told the conversation again: %q", sent[len(sent)-1])
		}
	})
}
