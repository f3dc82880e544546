package daemon

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// Lease is a bridge's hold on a running daemon: while it is held, the
// daemon stays.
type Lease struct {
	Dir    string
	lock   *flock.Flock  // the shared lock on the lease file
	closed chan struct{} // closed by Close
	once   sync.Once
	will   will
}

// Pid is the daemon's server's pid, or 0 if it can't be read.
func (l *Lease) Pid() int { return pidIn(l.Dir, "pid") }

// Keeper is the daemon's keeper's pid, or 0 if it can't be read.
func (l *Lease) Keeper() int { return pidIn(l.Dir, "keeper") }

// pidIn is the pid noted in the file name of the daemon's directory dir
// (keeper, pid), or 0.
func pidIn(dir, name string) int {
	b, _ := os.ReadFile(filepath.Join(dir, name))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Log returns the end of the daemon's log, for error messages.
func (l *Lease) Log() string { return logTail(l.Dir) }

// Close lets the daemon go, touching the lease file first: the keeper,
// which looks for leases only every few seconds, counts the daemon's idle
// time from then.
func (l *Lease) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.will.close()
	})
	touch(filepath.Join(l.Dir, "lease"))
	return l.lock.Unlock()
}

// touch sets the modification time of the file at path to now.
func touch(path string) {
	now := time.Now()
	os.Chtimes(path, now, now)
}
