//go:build unix

package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
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
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("making the daemon's directory: %w", err)
	}
	if err := owned(filepath.Dir(dir), 0o022); err != nil {
		return nil, err
	}
	if err := owned(dir, 0o077); err != nil {
		return nil, err
	}
	lease := &Lease{Dir: dir, lock: flock.New(filepath.Join(dir, "lease")), closed: make(chan struct{})}
	if _, err := lease.lock.TryRLockContext(ctx, lockRetry); err != nil {
		return nil, fmt.Errorf("taking a lease on the %s daemon: %w", spec.Name, err)
	}
	if ready(dir) == nil {
		return lease, nil
	}
	if err := startDaemon(ctx, spec, dir, ready); err != nil {
		lease.Close()
		return nil, err
	}
	return lease, nil
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
// doubled: a second one would overwrite the first's spec and log.
func startDaemon(ctx context.Context, spec Spec, dir string, ready func(dir string) error) error {
	starting := flock.New(filepath.Join(dir, "start"))
	if _, err := starting.TryLockContext(ctx, lockRetry); err != nil {
		return fmt.Errorf("waiting to start the %s daemon: %w", spec.Name, err)
	}
	defer starting.Unlock()
	tick := time.NewTicker(lockRetry)
	defer tick.Stop()
	var alive func() bool // the keeper this bridge launched
	for {
		probe := ready(dir)
		if probe == nil {
			return nil
		}
		switch {
		case alive != nil && !alive():
			return fmt.Errorf("the %s daemon exited at start%s", spec.Name, logLines(dir))
		case alive == nil && !keeperRuns(dir):
			var err error
			if alive, err = launch(spec, dir); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the %s daemon did not start: %v (%w)%s", spec.Name, probe, ctx.Err(), logLines(dir))
		case <-tick.C:
		}
	}
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
	keeperMu.Lock()
	prefix := keeper
	keeperMu.Unlock()
	if len(prefix) == 0 {
		return nil, fmt.Errorf("the %s daemon does not run, and this program can't start one", spec.Name)
	}
	b, err := json.Marshal(daemonFile{Path: spec.Path, Args: spec.Args, Env: spec.Env, Idle: spec.Idle})
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "spec.json"), b, 0o600); err != nil {
		return nil, fmt.Errorf("writing the daemon's spec: %w", err)
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

// detach is the first acpbridge of launch: it starts the keeper in a
// session of its own, says its pid and exits.
func detach(dir string) int {
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: %v\n", err)
		return 1
	}
	cmd := exec.Command(self, Command, keepArg, dir)
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: %v\n", err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	return 0
}

// keepArg marks the keeper's command line, after Command.
const keepArg = "keep"

// keeperPoll is how often the keeper looks for an idle daemon.
const keeperPoll = 250 * time.Millisecond

// Daemon is the keeper's whole life (see above); it returns the exit
// status.
func Keep(args []string) int {
	switch {
	case len(args) == 1:
		return detach(args[0])
	case len(args) != 2 || args[0] != keepArg:
		fmt.Fprintln(os.Stderr, "usage: acpbridge "+Command+" [keep] DIR")
		return 2
	}
	dir := args[1]
	var spec daemonFile
	b, err := os.ReadFile(filepath.Join(dir, "spec.json"))
	if err == nil {
		err = json.Unmarshal(b, &spec)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: reading its spec: %v\n", err)
		return 2
	}
	// One keeper at a time: one whose server just died may still be
	// cleaning up after it.
	ctx, cancel := context.WithTimeout(context.Background(), 4*proc.Grace)
	defer cancel()
	if _, err := flock.New(filepath.Join(dir, "keeping")).TryLockContext(ctx, lockRetry); err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: waiting for the last keeper: %v\n", err)
		return 1
	}
	clean(dir)
	os.WriteFile(filepath.Join(dir, "keeper"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, spec.Env, os.Stderr, os.Stderr
	cmd.SysProcAttr = proc.ChildAttr() // its own group, killed with the keeper
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: %v\n", err)
		return 127
	}
	os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	status := keep(dir, spec.Idle, exited, sigs, cmd.Process.Pid)
	clean(dir)
	return status
}

// keep waits for the server to exit, a signal, or an idle daemon, and
// stops the server in the last two cases. It tries the lease lock on a
// file it keeps open, so that a daemon whose directory was removed (a
// temporary directory cleaned) still idles out: no bridge can find it any
// more, and those using it hold their leases on the same file.
func keep(dir string, idle time.Duration, exited chan error, sigs chan os.Signal, pid int) int {
	lease, err := os.OpenFile(filepath.Join(dir, "lease"), os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: %v: stopping the server\n", err)
		stopGroup(pid, exited)
		return 1
	}
	defer lease.Close()
	tick := time.NewTicker(keeperPoll)
	defer tick.Stop()
	var since time.Time // when the daemon was first seen idle
	for {
		select {
		case err := <-exited:
			fmt.Fprintf(os.Stderr, "acpbridge daemon: the server exited: %v\n", err)
			return 1
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "acpbridge daemon: %v: stopping the server\n", sig)
			stopGroup(pid, exited)
			return 0
		case <-tick.C:
		}
		if syscall.Flock(int(lease.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
		}
		if time.Since(since) >= idle {
			fmt.Fprintf(os.Stderr, "acpbridge daemon: idle for %v: stopping the server\n", idle)
			stopGroup(pid, exited) // the lease stays locked until the keeper exits
			return 0
		}
		syscall.Flock(int(lease.Fd()), syscall.LOCK_UN)
	}
}

// stopGroup stops the server's process group: SIGTERM, then SIGKILL.
func stopGroup(pid int, exited chan error) {
	proc.SignalGroup(pid, syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(proc.Grace):
		proc.SignalGroup(pid, syscall.SIGKILL)
		<-exited
	}
}

// kept are the files of a daemon's directory that outlive a daemon.
var kept = map[string]bool{"spec.json": true, "lease": true, "start": true, "keeping": true, "log": true}

// clean removes what the last server left in dir (a stale socket).
func clean(dir string) {
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !kept[e.Name()] {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// StopAll stops every daemon under root and waits for their keepers
// to exit (up to twice Grace each).
func StopAll(root string) {
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(root, e.Name(), "keeper"))
		pid, _ := strconv.Atoi(string(b))
		if err != nil || pid <= 0 || syscall.Kill(pid, syscall.SIGTERM) != nil {
			continue
		}
		for deadline := time.Now().Add(2 * proc.Grace); time.Now().Before(deadline) && syscall.Kill(pid, 0) == nil; {
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// Watch returns a channel closed once the daemon's server has exited
// (looked for every 250ms), or the lease is let go: for a server the
// bridge holds no connection to that would tell.
func (l *Lease) Watch() <-chan struct{} {
	done := make(chan struct{})
	pid := l.Pid()
	go func() {
		defer close(done)
		for pid > 0 && syscall.Kill(pid, 0) == nil {
			select {
			case <-l.closed:
				return
			case <-time.After(keeperPoll):
			}
		}
	}()
	return done
}
