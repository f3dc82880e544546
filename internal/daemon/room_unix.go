//go:build unix

package daemon

import (
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// makeRoom stops the daemons under root idle the longest, as many as it
// takes for one more, in dir, to start with at most limit running (0: no
// limit). It stops only a daemon no bridge holds a lease on (whether its
// keeper has noted it idle yet or not): it holds the
// daemon's lease lock itself while the daemon stops, so that a bridge
// that comes then waits for it, finds no server and starts another. A
// daemon in use is never stopped, so more than limit may run.
func makeRoom(root, dir string, limit int) {
	if limit <= 0 {
		return
	}
	type candidate struct {
		r    Running
		last time.Time
	}
	var others []candidate
	for _, r := range List(root) {
		if r.Dir != dir && r.Answers { // not this one, nor one stopping already
			others = append(others, candidate{r, lastUsed(r)})
		}
	}
	slices.SortFunc(others, func(a, b candidate) int { return a.last.Compare(b.last) })
	for excess := len(others) + 1 - limit; excess > 0 && len(others) > 0; others = others[1:] {
		if stopIdle(others[0].r) {
			excess--
		}
	}
}

// lastUsed is when a bridge last used r, as far as can be told: when its
// keeper saw it idle, or when a bridge last took or let go a lease
// (touching the lease file), whichever is later. A daemon in use may
// seem to have been used long ago, but is not stopped.
func lastUsed(r Running) time.Time {
	last := r.IdleSince
	if fi, err := os.Stat(filepath.Join(r.Dir, "lease")); err == nil && fi.ModTime().After(last) {
		last = fi.ModTime()
	}
	return last
}

// stopIdle stops r if no bridge holds a lease on it, holding the lease
// lock while it stops, and reports whether it did.
func stopIdle(r Running) bool {
	lease, err := os.Open(filepath.Join(r.Dir, "lease"))
	if err != nil {
		return false
	}
	defer lease.Close() // lets the lock go, once the keeper has gone
	if !lockLease(lease) {
		return false
	}
	if !isKeeper(r.Keeper, r.Dir) || syscall.Kill(r.Keeper, 0) != nil {
		return false // gone meanwhile
	}
	return r.Stop() == nil
}
