package agentkit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// dropped records what a Spare dropped.
type dropped struct {
	mu sync.Mutex
	vs []int
}

func (d *dropped) drop(v int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.vs = append(d.vs, v)
}

func (d *dropped) got() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]int(nil), d.vs...)
}

func TestSpare_takenOnceByItsKey(t *testing.T) {
	var s Spare[int]
	var d dropped
	release := make(chan struct{})
	s.Make("/w", time.Minute, func() (int, error) { <-release; return 7, nil }, d.drop)
	s.Make("/w", time.Minute, func() (int, error) { t.Error("a second spare was made"); return 0, nil }, d.drop)
	if _, ok := s.Take(context.Background(), "/elsewhere"); ok {
		t.Error("a spare for /w was taken for /elsewhere")
	}
	go close(release)
	if v, ok := s.Take(context.Background(), "/w"); !ok || v != 7 {
		t.Errorf("Take waited for the spare and got %d, %v; want 7", v, ok)
	}
	if _, ok := s.Take(context.Background(), "/w"); ok {
		t.Error("the spare was taken twice")
	}
	s.Close()
	if got := d.got(); len(got) != 0 {
		t.Errorf("a taken spare was dropped: %v", got)
	}
}

func TestSpare_droppedWhenNobodyTakesIt(t *testing.T) {
	var s Spare[int]
	var d dropped
	s.Make("/w", 10*time.Millisecond, func() (int, error) { return 1, nil }, d.drop)
	deadline := time.Now().Add(time.Minute)
	for len(d.got()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := d.got(); len(got) != 1 {
		t.Fatalf("dropped %v after its time to live, want [1]", got)
	}
	if _, ok := s.Take(context.Background(), "/w"); ok {
		t.Error("a dropped spare was taken")
	}
}

func TestSpare_closeDropsOneStillBeingMade(t *testing.T) {
	var s Spare[int]
	var d dropped
	release := make(chan struct{})
	s.Make("/w", time.Minute, func() (int, error) { <-release; return 2, nil }, d.drop)
	s.Close()
	close(release)
	deadline := time.Now().Add(time.Minute)
	for len(d.got()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := d.got(); len(got) != 1 {
		t.Errorf("dropped %v, want the spare made after Close", got)
	}
	s.Make("/w", time.Minute, func() (int, error) { t.Error("a spare was made after Close"); return 0, nil }, d.drop)
}

func TestSpare_failedOrCancelled(t *testing.T) {
	var s Spare[int]
	s.Make("/w", time.Minute, func() (int, error) { return 0, errors.New("no agent") }, func(int) {})
	if _, ok := s.Take(context.Background(), "/w"); ok {
		t.Error("a spare that failed was taken")
	}
	var slow Spare[int]
	slow.Make("/w", time.Minute, func() (int, error) { time.Sleep(time.Second); return 3, nil }, func(int) {})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, ok := slow.Take(ctx, "/w"); ok {
		t.Error("Take outlived its context")
	}
	slow.Close()
}
