package daemon

import (
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
)

// fakeSpare is a spare process that exits when stopped, or when the test
// says.
type fakeSpare struct {
	done    chan struct{}
	once    sync.Once
	stopped atomic.Bool
}

func (f *fakeSpare) Done() <-chan struct{} { return f.done }

func (f *fakeSpare) Stop() {
	f.stopped.Store(true)
	f.exit()
}

func (f *fakeSpare) exit() { f.once.Do(func() { close(f.done) }) }

// fakePool is a pool of fake spares living ttl; started lists them in
// the order they were started. It closes with the test.
func fakePool(t *testing.T, ttl time.Duration) (pl *pool[*fakeSpare], started func() []*fakeSpare) {
	var mu sync.Mutex
	var spares []*fakeSpare
	pl = newPool(ttl, func(proc.Spec) (*fakeSpare, error) {
		mu.Lock()
		defer mu.Unlock()
		f := &fakeSpare{done: make(chan struct{})}
		spares = append(spares, f)
		return f, nil
	})
	t.Cleanup(pl.close)
	return pl, func() []*fakeSpare {
		mu.Lock()
		defer mu.Unlock()
		return append([]*fakeSpare(nil), spares...)
	}
}

// spareIn is the Spec of a spare made in dir: one kind per directory.
func spareIn(dir string) proc.Spec { return proc.Spec{Path: "agent", Dir: dir, Lend: true} }

func warm(t *testing.T, pl *pool[*fakeSpare], s proc.Spec) {
	t.Helper()
	if err := pl.warm(s); err != nil {
		t.Fatal(err)
	}
}

// A spare nobody takes is stopped at its time to live, not before, and
// can't be taken then.
func TestPool_untakenSpareGoesAtItsTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, started := fakePool(t, time.Minute)
		warm(t, pl, spareIn("/a"))
		warm(t, pl, spareIn("/a")) // one of a kind
		if n := len(started()); n != 1 {
			t.Fatalf("%d spares started for one kind; want 1", n)
		}
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		if started()[0].stopped.Load() {
			t.Fatal("the spare was stopped before its time to live")
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if !started()[0].stopped.Load() {
			t.Fatal("the spare outlived its time to live")
		}
		if _, ok := pl.take(spareIn("/a").Kind()); ok {
			t.Error("took an expired spare")
		}
	})
}

// A taken spare is the bridge's: neither its time to live nor the pool's
// end stops it.
func TestPool_takenSpareIsNotStopped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, started := fakePool(t, time.Minute)
		warm(t, pl, spareIn("/a"))
		got, ok := pl.take(spareIn("/a").Kind())
		if !ok || got != started()[0] {
			t.Fatalf("take: %v, %v; want the spare warmed", got, ok)
		}
		if _, ok := pl.take(spareIn("/a").Kind()); ok {
			t.Error("one spare taken twice")
		}
		time.Sleep(time.Hour)
		pl.close()
		if got.stopped.Load() {
			t.Error("the pool stopped a spare a bridge took")
		}
	})
}

// A full pool makes room for a new kind by stopping the oldest spare.
func TestPool_fullDropsTheOldest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, started := fakePool(t, time.Hour)
		for i := range maxSpares + 1 {
			warm(t, pl, spareIn(string(rune('a'+i))))
			time.Sleep(time.Second)
		}
		synctest.Wait()
		for i, f := range started() {
			if f.stopped.Load() != (i == 0) {
				t.Errorf("spare %d stopped: %v; want only the oldest (0) stopped", i, f.stopped.Load())
			}
		}
		if _, ok := pl.take(spareIn("a").Kind()); ok {
			t.Error("took the spare dropped for room")
		}
	})
}

// A spare that exits by itself leaves the pool; the next warm starts
// another.
func TestPool_spareThatExitsLeaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, started := fakePool(t, time.Hour)
		warm(t, pl, spareIn("/a"))
		started()[0].exit()
		synctest.Wait()
		if _, ok := pl.take(spareIn("/a").Kind()); ok {
			t.Fatal("took a spare that had exited")
		}
		warm(t, pl, spareIn("/a"))
		if n := len(started()); n != 2 {
			t.Errorf("%d spares started; want a new one after the exit", n)
		}
	})
}

// Closing the pool stops the spares nobody took and waits for them; it
// starts no more.
func TestPool_closeStopsWhatIsLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, started := fakePool(t, time.Hour)
		warm(t, pl, spareIn("/a"))
		warm(t, pl, spareIn("/b"))
		pl.close()
		for i, f := range started() {
			if !f.stopped.Load() {
				t.Errorf("spare %d still runs after close", i)
			}
		}
		if err := pl.warm(spareIn("/c")); err != errStopping {
			t.Errorf("warm after close: %v; want %v", err, errStopping)
		}
	})
}

// A spare started before its settings changed (another Tag, the same
// place) can't be taken as one of the new kind, and goes when the new
// kind is warmed.
func TestPool_changedSettingsDropTheStaleSpare(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pl, started := fakePool(t, time.Hour)
		old, changed := spareIn("/a"), spareIn("/a")
		old.Tag, changed.Tag = "settings v1", "settings v2"
		warm(t, pl, old)
		if _, ok := pl.take(changed.Kind()); ok {
			t.Fatal("took a spare started with other settings")
		}
		warm(t, pl, changed)
		synctest.Wait()
		if s := started(); len(s) != 2 || !s[0].stopped.Load() || s[1].stopped.Load() {
			t.Fatalf("after warming the new settings: %d started, the old stopped: %v; want 2, the old one stopped", len(s), len(s) > 0 && s[0].stopped.Load())
		}
		if got, ok := pl.take(changed.Kind()); !ok || got != started()[1] {
			t.Errorf("take of the new settings: %v, %v; want the new spare", got, ok)
		}
	})
}
