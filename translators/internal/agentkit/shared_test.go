package agentkit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
)

// fakeServer is a Server that exits when told.
type fakeServer struct {
	done    chan struct{}
	once    sync.Once
	stopped atomic.Bool // Close and the watcher both stop a server
}

func newFakeServer() *fakeServer { return &fakeServer{done: make(chan struct{})} }

func (f *fakeServer) Done() <-chan struct{} { return f.done }
func (f *fakeServer) Exited() error         { return errors.New("exit status 3") }
func (f *fakeServer) exit()                 { f.once.Do(func() { close(f.done) }) }
func (f *fakeServer) Stop()                 { f.stopped.Store(true); f.exit() }

func TestShared(t *testing.T) {
	var started []*fakeServer
	gone := make(chan error, 1)
	sh := &Shared[*fakeServer]{
		Start: func(context.Context) (*fakeServer, error) {
			f := newFakeServer()
			started = append(started, f)
			return f, nil
		},
		Gone: func(_ *fakeServer, err error) { gone <- err },
	}
	ctx := context.Background()
	a, _ := sh.Get(ctx)
	if b, _ := sh.Get(ctx); a != b || len(started) != 1 {
		t.Fatalf("a running server was started again (%d starts)", len(started))
	}
	a.exit()
	if err := <-gone; err == nil || err.Error() != "exit status 3" {
		t.Errorf("Gone got %v", err)
	}
	c, _ := sh.Get(ctx)
	if c == a || len(started) != 2 {
		t.Errorf("a dead server was not replaced (%d starts)", len(started))
	}
	sh.Close()
	if !c.stopped.Load() || !sh.Closed() {
		t.Errorf("Close left the server running")
	}
	if _, err := sh.Get(ctx); !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("Get after Close: %v", err)
	}
	select {
	case err := <-gone:
		t.Errorf("Gone told of a server Close stopped: %v", err)
	default:
	}
}

func TestShared_closeDuringStartLeavesNothing(t *testing.T) {
	var f *fakeServer
	sh := &Shared[*fakeServer]{}
	sh.Start = func(context.Context) (*fakeServer, error) {
		sh.Close() // as if Close ran while the server started
		f = newFakeServer()
		return f, nil
	}
	if _, err := sh.Get(context.Background()); !errors.Is(err, agent.ErrAgentUnavailable) || !f.stopped.Load() {
		t.Errorf("Get: %v, server stopped %v; want it refused and the server stopped", err, f.stopped.Load())
	}
}

func TestRegistry(t *testing.T) {
	var r Registry[*int]
	one, two := new(int), new(int)
	r.Add("a", one)
	r.Add("b", two)
	r.Remove("a", two) // not the one registered: kept
	if got, ok := r.Get("a"); !ok || got != one || len(r.All()) != 2 {
		t.Errorf("Remove of another session's id removed it")
	}
	r.Remove("a", one)
	if _, ok := r.Get("a"); ok || len(r.All()) != 1 {
		t.Errorf("Remove kept it")
	}
}

func TestLazy(t *testing.T) {
	var l Lazy[int]
	calls := 0
	make := func() (int, error) {
		calls++
		if calls == 1 {
			return 0, errors.New("not yet")
		}
		return 42, nil
	}
	if _, err := l.Get(make); err == nil {
		t.Fatal("the first failure was not reported")
	}
	if _, ok := l.Peek(); ok {
		t.Error("a failed make was kept")
	}
	if v, err := l.Get(make); v != 42 || err != nil {
		t.Errorf("Get = %d, %v", v, err)
	}
	if v, _ := l.Get(make); v != 42 || calls != 2 {
		t.Errorf("made again: %d calls", calls)
	}
}

func TestEffortOption(t *testing.T) {
	o := EffortOption("as configured", true, "low", "xhigh")
	if o.ID != agent.ConfigEffort || !o.NextTurn || o.Current != EffortDefault || len(o.Choices) != 3 || o.Choices[2].Name != "Extra high" {
		t.Errorf("EffortOption = %+v", o)
	}
}

func TestAttachment(t *testing.T) {
	attaches := 0
	a := NewAttachment(func(context.Context) (*fakeServer, error) {
		attaches++
		return newFakeServer(), nil
	})
	ctx := context.Background()
	if err := a.Start(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	first, _ := a.Server(ctx)
	if !a.On(first) || attaches != 1 {
		t.Fatalf("after the first attach: on it %v, %d attaches", a.On(first), attaches)
	}
	first.exit()
	second, err := a.Server(ctx)
	if err != nil || second == first || !a.On(second) || a.On(first) || attaches != 2 {
		t.Errorf("a dead server was not replaced: %v, %d attaches", err, attaches)
	}
}

func TestAttachment_failedFirstAttach(t *testing.T) {
	a := NewAttachment(func(context.Context) (*fakeServer, error) { return nil, errors.New("no server") })
	if err := a.Start(context.Background(), time.Second); err == nil {
		t.Fatal("Start hid the error")
	}
	if _, err := a.Server(context.Background()); err == nil || err.Error() != "no server" {
		t.Errorf("Server after a failed attach: %v", err)
	}
	if _, ok := a.Current(); ok {
		t.Error("attached to nothing, yet Current says it is on a server")
	}
}
