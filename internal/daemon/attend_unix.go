//go:build unix

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/gofrs/flock"
)

// lockRetry is how often a bridge tries a lock another process holds.
const lockRetry = 5 * time.Millisecond

// Attend takes a lease on the daemon of spec, starting it if it does not
// run, and returns once ready (which probes the server in the daemon's
// directory) says it serves.
func Attend(ctx context.Context, spec Spec, ready func(dir string) error) (*Lease, error) {
	dir := spec.Dir()
	if err := socketsFit(dir); err != nil {
		return nil, err
	}
	if err := makeDir(dir); err != nil {
		return nil, err
	}
	lease := &Lease{Dir: dir, lock: flock.New(filepath.Join(dir, "lease")), closed: make(chan struct{})}
	if _, err := lease.lock.TryRLockContext(ctx, lockRetry); err != nil {
		return nil, fmt.Errorf("taking a lease on the %s daemon: %w", spec.Name, err)
	}
	touch(filepath.Join(dir, "lease")) // used now, should the keeper not look before this lease goes
	if ready(dir) == nil {
		return lease, nil
	}
	if err := startDaemon(ctx, spec, dir, ready); err != nil {
		lease.Close()
		return nil, err
	}
	return lease, nil
}

// maxSocketPath is the longest path a Unix socket can be bound at: 108
// bytes with the terminating NUL on Linux, 104 on the BSDs and macOS.
func maxSocketPath() int {
	if runtime.GOOS == "linux" {
		return 107
	}
	return 103
}

// socketsFit reports an error if the sockets a daemon makes in dir (the
// server's or the spares server's "sock", the keeper's "will") would have
// paths too long to bind: the daemon could never start, and a bridge
// would wait its whole start timeout for it to answer.
func socketsFit(dir string) error {
	if p := filepath.Join(dir, "sock"); len(p) > maxSocketPath() {
		return fmt.Errorf("the daemon's directory %s is too deep for its sockets (%d bytes, at most %d): set %s to a shorter directory", dir, len(p), maxSocketPath(), RootEnv)
	}
	return nil
}

// makeDir makes the daemon's directory dir if need be, and checks that it
// and the one above it are the user's own.
func makeDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("making the daemon's directory: %w", err)
	}
	if err := owned(filepath.Dir(dir), 0o022); err != nil {
		return err
	}
	return owned(dir, 0o077)
}

// owned checks that dir is the user's own, without any of the permission
// bits of others: a daemon's directory holds its socket and its password,
// and one under a shared temporary directory could have been made, or be
// replaced, by someone else.
func owned(dir string, others os.FileMode) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok || int(st.Uid) != os.Getuid() || fi.Mode().Perm()&others != 0 {
		return fmt.Errorf("%s is not a directory of this user's that others can't change (mode %v); a shared server needs one", dir, fi.Mode())
	}
	return nil
}

// startDaemon starts the daemon unless another bridge did meanwhile, and
// waits until it is ready. A keeper that runs already (its server still
// starting, or too busy to answer the probe at once) is waited for, not
// doubled: a second one would overwrite the first's spec and log. As it
// starts one, it stops the daemons idle the longest beyond spec's max
// (makeRoom), beside the start, and waits for them too.
func startDaemon(ctx context.Context, spec Spec, dir string, ready func(dir string) error) error {
	starting := flock.New(filepath.Join(dir, "start"))
	if _, err := starting.TryLockContext(ctx, lockRetry); err != nil {
		return fmt.Errorf("waiting to start the %s daemon: %w", spec.Name, err)
	}
	defer starting.Unlock()
	var room sync.WaitGroup
	defer room.Wait()
	tick := time.NewTicker(lockRetry)
	defer tick.Stop()
	var alive func() bool // the keeper this bridge launched
	silent := time.Now()  // since when the daemon has not answered
	for {
		probe := ready(dir)
		if probe == nil {
			return nil
		}
		switch {
		case alive != nil && !alive():
			return fmt.Errorf("the %s daemon exited at start%s", spec.Name, logLines(dir))
		case alive == nil && !keeperRuns(dir):
			room.Go(func() { makeRoom(spec.root(), dir, spec.max()) })
			var err error
			if alive, err = launch(spec, dir); err != nil {
				return err
			}
		case alive == nil && hung(dir, silent):
			killKeeper(dir)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the %s daemon did not start: %v (%w)%s", spec.Name, probe, ctx.Err(), logLines(dir))
		case <-tick.C:
		}
	}
}

// patience is how long a daemon that runs is given to answer: one whose
// keeper has run for start without its server answering a bridge for
// answer is hung (stopped, say, or deadlocked), and is killed and
// started again.
var patience = struct{ start, answer time.Duration }{start: 30 * time.Second, answer: 5 * time.Second}

// hung reports whether the daemon in dir, whose keeper runs but which has
// not answered since silent, is hung (see patience).
func hung(dir string, silent time.Time) bool {
	if time.Since(silent) < patience.answer {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, "keeper"))
	return err != nil || time.Since(fi.ModTime()) >= patience.start
}

// killKeeper kills the keeper of the daemon in dir and its server's
// group (SIGKILL: it answers nothing), so that a new one can start.
func killKeeper(dir string) {
	keeper := pidIn(dir, "keeper")
	if keeper <= 0 || !isKeeper(keeper, dir) {
		return
	}
	if pid := pidIn(dir, "pid"); pid > 0 {
		proc.SignalGroup(pid, syscall.SIGKILL) // noted by this keeper
	}
	syscall.Kill(keeper, syscall.SIGKILL)
}

// isKeeper reports whether pid is the keeper of the daemon in dir, by
// its command line where /proc tells it (Linux; elsewhere it is assumed).
func isKeeper(pid int, dir string) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return runtime.GOOS != "linux"
	}
	return strings.Contains(string(b), "\x00"+Command+"\x00"+keepArg+"\x00"+dir+"\x00")
}

// keeperRuns reports whether a keeper holds the daemon in dir.
func keeperRuns(dir string) bool {
	keeping := flock.New(filepath.Join(dir, "keeping"))
	ok, err := keeping.TryLock()
	if ok {
		keeping.Unlock()
	}
	return err == nil && !ok
}

// launch starts the keeper, detached: it is started by a first acpbridge
// that exits at once, so that it is nobody's child (not this bridge's, to
// be killed with its process tree) and in a session of its own. launch
// returns a function that tells whether the keeper still runs.
func launch(spec Spec, dir string) (func() bool, error) {
	prefix := keeperCommand()
	if len(prefix) == 0 {
		return nil, fmt.Errorf("the %s daemon does not run, and this program can't start one", spec.Name)
	}
	if err := writeSpec(spec, dir); err != nil {
		return nil, err
	}
	log, err := os.OpenFile(filepath.Join(dir, "log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the daemon's log: %w", err)
	}
	defer log.Close()
	cmd := exec.Command(prefix[0], append(append([]string{}, prefix[1:]...), dir)...)
	cmd.Dir, cmd.Stderr = dir, log
	out, err := cmd.Output()
	pid, perr := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || perr != nil {
		return nil, fmt.Errorf("starting the %s daemon: %v%s", spec.Name, errors.Join(err, perr), logLines(dir))
	}
	return func() bool { return syscall.Kill(pid, 0) == nil }, nil
}

// writeSpec writes what the keeper of spec is to run, in its directory.
func writeSpec(spec Spec, dir string) error {
	b, err := json.Marshal(daemonFile{Name: spec.Name, Path: spec.Path, Args: spec.Args, Env: spec.Env, Idle: spec.Idle, Build: Build()})
	if err != nil {
		return fmt.Errorf("encoding the daemon's spec: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), b, 0o600); err != nil {
		return fmt.Errorf("writing the daemon's spec: %w", err)
	}
	return nil
}
