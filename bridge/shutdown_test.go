package bridge

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
)

// slowCloseBackend's sessions take until release is closed to close, and
// it notes whether its own Close came while one of them was closing.
type slowCloseBackend struct {
	echoBackend
	closing, release chan struct{}
	inClose          atomic.Int32
	closedEarly      atomic.Bool
}

func (b *slowCloseBackend) Open(ctx context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	n, err := b.echoBackend.Open(ctx, opts, ev)
	return &slowCloseNative{Native: n, b: b}, err
}

func (b *slowCloseBackend) Close() error {
	if b.inClose.Load() > 0 {
		b.closedEarly.Store(true)
	}
	return nil
}

type slowCloseNative struct {
	agent.Native
	b *slowCloseBackend
}

func (n *slowCloseNative) Close() error {
	n.b.inClose.Add(1)
	defer n.b.inClose.Add(-1)
	close(n.b.closing)
	<-n.b.release
	return nil
}

// Shutdown waits for the goroutine that stops idle agents: a backend is
// never closed while that goroutine is still closing one of its sessions.
func TestShutdown_waitsForTheIdleReaper(t *testing.T) {
	b := &slowCloseBackend{echoBackend: echoBackend{name: "slow"}, closing: make(chan struct{}), release: make(chan struct{})}
	m, err := NewManager(Config{Backends: []agent.Backend{b}, Default: "slow", Persist: PersistNever, IdleTimeout: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m.SetClient(&updatesClient{})
	if _, err := m.New(context.Background(), Setup{Cwd: "/w"}); err != nil {
		t.Fatal(err)
	}
	<-b.closing // the reaper is closing the idle session's agent
	done := make(chan error, 1)
	go func() { done <- m.Shutdown() }()
	select {
	case <-done:
		t.Fatal("Shutdown returned while the reaper was still closing an agent")
	case <-time.After(50 * time.Millisecond):
	}
	close(b.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if b.closedEarly.Load() {
		t.Error("the backend was closed while the reaper was closing one of its sessions")
	}
}
