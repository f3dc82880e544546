package bridge

import (
	"context"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

func idleManager(t *testing.T, cfg Config) (*Manager, *configBackend) {
	t.Helper()
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &configBackend{}
	cfg.Backends, cfg.Default, cfg.Store, cfg.Persist = []agent.Backend{b}, "cfg", st, PersistAlways
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.SetClient(&updatesClient{})
	t.Cleanup(func() { m.Shutdown() })
	return m, b
}

func text(s string) []acp.ContentBlock { return []acp.ContentBlock{acp.TextBlock(s)} }

// An agent idle past the limit is stopped; the session keeps showing its
// options, and its next prompt starts the agent again on the same native
// session with the same options.
func TestIdle_stoppedAndStartedAgain(t *testing.T) {
	m, b := idleManager(t, Config{IdleTimeout: time.Hour})
	ctx := context.Background()
	s, err := m.New(ctx, Setup{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetConfigOption(ctx, agent.ConfigMode, "auto"); err != nil {
		t.Fatal(err)
	}
	m.StopIdle(time.Now().Add(30 * time.Minute))
	if !s.running() {
		t.Fatal("an agent idle for less than the limit was stopped")
	}
	m.StopIdle(time.Now().Add(2 * time.Hour))
	if s.running() {
		t.Fatal("an agent idle past the limit still runs")
	}
	if cur := current(s.State().ConfigOptions); cur[agent.ConfigMode] != "auto" {
		t.Errorf("options of a stopped agent: %v", cur)
	}
	if _, err := s.Prompt(ctx, Arrival{}, text("hello")); err != nil {
		t.Fatal(err)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.opens) != 2 || b.opens[1].NativeID != "native-1" || b.opens[1].Config[agent.ConfigMode] != "auto" {
		t.Errorf("opens %+v; want the agent started again on native-1 in mode auto", b.opens)
	}
}

// Past the cap, the least recently used idle agents are stopped.
func TestIdle_capStopsTheLeastRecentlyUsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := idleManager(t, Config{MaxAgents: 2})
		ctx := context.Background()
		var ss []*Session
		for _, p := range []string{"one", "two", "three"} {
			s, err := m.New(ctx, Setup{Cwd: "/w"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Prompt(ctx, Arrival{}, text(p)); err != nil {
				t.Fatal(err)
			}
			ss = append(ss, s)
			time.Sleep(time.Second) // distinct last uses
		}
		m.StopIdle(time.Now())
		if ss[0].running() || !ss[1].running() || !ss[2].running() {
			t.Errorf("running after the cap: %v %v %v; want the oldest stopped", ss[0].running(), ss[1].running(), ss[2].running())
		}
	})
}

// blockingBackend's turns wait until released.
type blockingBackend struct {
	configBackend
	release chan struct{}
}

type blockingNative struct {
	*configNative
	release chan struct{}
}

func (b *blockingBackend) Open(ctx context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	n, _ := b.configBackend.Open(ctx, opts, ev)
	return blockingNative{n.(*configNative), b.release}, nil
}

func (n blockingNative) Prompt(ctx context.Context, t agent.Turn) (agent.TurnResult, error) {
	<-n.release
	return n.configNative.Prompt(ctx, t)
}

// A running turn is never stopped, however long; the reaper stops the
// agent once it is idle past the limit.
func TestIdle_neverDuringATurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _ := persist.Open(t.TempDir())
		b := &blockingBackend{release: make(chan struct{})}
		_, s := startSession(t, Config{Backends: []agent.Backend{b}, Default: "cfg", Store: st, Persist: PersistAlways, IdleTimeout: time.Minute})
		done := make(chan error, 1)
		go func() {
			_, err := s.Prompt(context.Background(), Arrival{}, text("slow"))
			done <- err
		}()
		time.Sleep(time.Hour) // many reaps past the limit
		synctest.Wait()
		if !s.running() {
			t.Fatal("the agent was stopped during a turn")
		}
		close(b.release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute - time.Second)
		synctest.Wait()
		if !s.running() {
			t.Fatal("the agent was stopped before the limit")
		}
		time.Sleep(time.Minute) // the limit, and the next reap
		synctest.Wait()
		if s.running() {
			t.Fatal("the idle agent was never stopped")
		}
	})
}

// 100 sessions idle past FilesIdle hold no descriptor: their transcripts
// and locks are let go, and a session's next prompt takes them back and
// records its turn.
func TestIdle_filesLetGo(t *testing.T) {
	m, _ := idleManager(t, Config{FilesIdle: time.Hour})
	ctx := context.Background()
	before := openFDs(t)
	var ss []*Session
	for range 100 {
		s, err := m.New(ctx, Setup{Cwd: "/w"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Prompt(ctx, Arrival{}, text("hello")); err != nil {
			t.Fatal(err)
		}
		ss = append(ss, s)
	}
	held := openFDs(t)
	m.StopIdle(time.Now().Add(2 * time.Hour))
	after := openFDs(t)
	t.Logf("descriptors: %d before, %d with 100 sessions, %d once idle", before, held, after)
	if after > before+2 {
		t.Errorf("100 idle sessions hold %d descriptors (%d before them)", after-before, before)
	}
	if _, err := ss[0].Prompt(ctx, Arrival{}, text("again")); err != nil {
		t.Fatalf("a prompt once the files were let go: %v", err)
	}
	tr, err := m.cfg.Store.Read(ss[0].ID())
	if err != nil || len(tr.Entries) != 2 || !strings.Contains(string(tr.Entries[1].Update), `"again"`) {
		t.Fatalf("the transcript after a prompt that took it back: %v, %v; want both prompts", tr, err)
	}
}

// openFDs counts this process's open descriptors (Linux), or skips.
func openFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("SKIPPED: descriptors are counted in /proc")
	}
	return len(ents)
}
