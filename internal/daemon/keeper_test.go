//go:build unix

package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gofrs/flock"
)

// A keeper under test: keep run on a lease file in a bubble, with a bridge's
// own open of the same file to hold leases on.
type keeperRun struct {
	bridge  *os.File
	exited  chan error
	sigs    chan os.Signal
	stopped chan struct{} // closed when keep stops the server
	status  chan int      // keep's result
}

func startKeeper(t *testing.T, idle time.Duration) *keeperRun {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lease")
	k := &keeperRun{bridge: openLease(t, path), exited: make(chan error, 1), sigs: make(chan os.Signal, 1),
		stopped: make(chan struct{}), status: make(chan int, 1)}
	lease := openLease(t, path)
	go func() {
		k.status <- keep(lease, idle, k.exited, k.sigs, func() { close(k.stopped) }, func(time.Time) {})
	}()
	return k
}

func openLease(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// hold takes (or, with how LOCK_UN, lets go) the bridge's lease.
func (k *keeperRun) hold(t *testing.T, how int) {
	t.Helper()
	if err := syscall.Flock(int(k.bridge.Fd()), how|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
}

// done reports whether keep has returned, and its status.
func (k *keeperRun) done() (int, bool) {
	synctest.Wait()
	select {
	case s := <-k.status:
		return s, true
	default:
		return 0, false
	}
}

// The server stays while a bridge holds a lease, however long; once none
// does for the idle time it is stopped, and the lease stays locked so
// that a bridge coming then waits for the keeper's end.
func TestKeep_stopsTheServerOnceIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := startKeeper(t, time.Minute)
		k.hold(t, syscall.LOCK_SH)
		time.Sleep(time.Hour + 100*time.Millisecond)
		if _, done := k.done(); done {
			t.Fatal("the keeper stopped with a lease held")
		}
		k.hold(t, syscall.LOCK_UN)
		time.Sleep(time.Minute) // idle counts from the first poll after the release
		if _, done := k.done(); done {
			t.Fatal("the keeper stopped before the idle time was up")
		}
		time.Sleep(pollFor(time.Minute))
		if status, done := k.done(); !done || status != 0 {
			t.Fatalf("keeper: done %v, status %d; want the server stopped, status 0", done, status)
		}
		if err := syscall.Flock(int(k.bridge.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Errorf("a lease taken as the keeper stops: %v; want it to wait", err)
		}
	})
}

// A lease taken during the idle time starts it again.
func TestKeep_leaseResetsTheIdleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := startKeeper(t, time.Minute)
		time.Sleep(40 * time.Second)
		k.hold(t, syscall.LOCK_SH)
		time.Sleep(pollFor(time.Minute) + time.Second) // seen held
		k.hold(t, syscall.LOCK_UN)
		time.Sleep(40 * time.Second)
		if _, done := k.done(); done {
			t.Fatal("idle time counted across a lease")
		}
		time.Sleep(30 * time.Second)
		if _, done := k.done(); !done {
			t.Fatal("the keeper outlived the idle time")
		}
	})
}

// A bridge that comes and goes between two looks of the keeper, touching
// the lease file (as Attend and Lease.Close do), starts the idle time
// again too; the keeper looks every few seconds, not four times a second.
func TestKeep_touchedLeaseResetsTheIdleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		if poll := pollFor(10 * time.Minute); poll < time.Second {
			t.Errorf("a keeper of 10 minutes looks every %v; want it to look seldom", poll)
		}
		k := startKeeper(t, time.Minute)
		time.Sleep(40 * time.Second)
		k.hold(t, syscall.LOCK_SH)
		now := time.Now() // the bubble's clock, not the file system's
		os.Chtimes(k.bridge.Name(), now, now)
		k.hold(t, syscall.LOCK_UN)
		time.Sleep(40 * time.Second)
		if _, done := k.done(); done {
			t.Fatal("a lease taken and let go between two looks did not count")
		}
		time.Sleep(30 * time.Second)
		if _, done := k.done(); !done {
			t.Fatal("the keeper outlived the idle time")
		}
	})
}

// A signal stops the server; a server that exits by itself ends the keeper
// with status 1, and is not stopped.
func TestKeep_signalOrServerExit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := startKeeper(t, time.Minute)
		k.sigs <- syscall.SIGTERM
		if status, done := k.done(); !done || status != 0 {
			t.Errorf("after SIGTERM: done %v, status %d; want 0", done, status)
		}
		select {
		case <-k.stopped:
		default:
			t.Error("SIGTERM did not stop the server")
		}

		k = startKeeper(t, time.Minute)
		k.exited <- errors.New("exit status 3")
		if status, done := k.done(); !done || status != 1 {
			t.Errorf("after the server's exit: done %v, status %d; want 1", done, status)
		}
		select {
		case <-k.stopped:
			t.Error("a server that exited was stopped")
		default:
		}
	})
}

// Watch keeps watching a running server until the lease is let go.
func TestLease_watchEndsWithTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		pid := []byte(strconv.Itoa(os.Getpid())) // a server that runs as long as the test
		if err := os.WriteFile(filepath.Join(dir, "pid"), pid, 0o600); err != nil {
			t.Fatal(err)
		}
		l := &Lease{Dir: dir, lock: flock.New(filepath.Join(dir, "lease")), closed: make(chan struct{})}
		gone := l.Watch()
		time.Sleep(time.Hour)
		synctest.Wait()
		select {
		case <-gone:
			t.Fatal("Watch ended with the server running and the lease held")
		default:
		}
		l.Close()
		synctest.Wait()
		select {
		case <-gone:
		default:
			t.Fatal("Watch outlived the lease")
		}
	})
}
