package daemon

import (
	"context"
	"testing"
	"time"
)

// TestUse_lastToLeave: only the last bridge to leave a use is told so,
// and a bridge that comes to use it meanwhile waits until that one is
// done.
func TestUse_lastToLeave(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, err := TakeUse(ctx, dir, "instance /w")
	if err != nil {
		t.Fatal(err)
	}
	b, err := TakeUse(ctx, dir, "instance /w")
	if err != nil {
		t.Fatal(err)
	}
	if a.Leave() {
		t.Fatal("the first to leave was told it was the last")
	}
	if !b.Leave() {
		t.Fatal("the last to leave was not told so")
	}
	short, stop := context.WithTimeout(ctx, 100*time.Millisecond)
	defer stop()
	if _, err := TakeUse(short, dir, "instance /w"); err == nil {
		t.Fatal("a use was taken while the last user released it")
	}
	if other, err := TakeUse(ctx, dir, "instance /other"); err != nil {
		t.Fatalf("another thing's use: %v", err)
	} else {
		other.Leave()
	}
	b.Done()
	c, err := TakeUse(ctx, dir, "instance /w")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	c.Leave()
}
