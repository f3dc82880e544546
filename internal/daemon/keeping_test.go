//go:build unix

package daemon

import (
	"path/filepath"
	"runtime"
	"testing"

	"github.com/gofrs/flock"
)

// The keeping lock stays held while the keeper keeps, garbage collections
// or not (its file, left unreferenced, was closed by one, and the lock let
// go: a second keeper could start beside the first).
func TestAwaitLastKeeper_holdsTheLockThroughGC(t *testing.T) {
	dir := t.TempDir()
	keeping, err := awaitLastKeeper(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer keeping.Unlock()
	runtime.GC()
	runtime.GC()
	other := flock.New(filepath.Join(dir, "keeping"))
	if ok, err := other.TryLock(); ok || err != nil {
		t.Errorf("a second keeper took the keeping lock (%v, %v) while the first kept", ok, err)
	}
}
