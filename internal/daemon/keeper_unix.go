//go:build unix

package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/gofrs/flock"
)

// keepArg marks the keeper's command line, after Command.
const keepArg = "keep"

// How often a keeper looks whether a bridge holds a lease (pollFor), and
// a bridge whether its daemon's server still runs (Lease.Watch): at most
// every keeperPoll, at least every keeperPollMax.
const (
	keeperPoll    = 250 * time.Millisecond
	keeperPollMax = 5 * time.Second
)

// pollFor is how often the keeper of a daemon that idles out after idle
// looks for leases: a twentieth of idle, within keeperPoll and
// keeperPollMax. The keeper of a daemon kept for the default ten minutes
// wakes every 5 s, not four times a second (which cost it 0.15 % of a
// core, idle: scripts/idle-daemons.sh); a bridge that comes and goes
// between two looks has touched the lease file (Lease.Close), which counts.
func pollFor(idle time.Duration) time.Duration {
	return min(max(idle/20, keeperPoll), keeperPollMax)
}

// Keep is the life of `acpbridge __daemon [keep] DIR` (see the package
// doc): with DIR alone, it starts the keeper and exits; with keep, it is
// the keeper. It returns the exit status.
func Keep(args []string) int {
	switch {
	case len(args) == 1:
		return detach(args[0])
	case len(args) != 2 || args[0] != keepArg:
		fmt.Fprintln(os.Stderr, "usage: acpbridge "+Command+" [keep] DIR")
		return 2
	}
	return keepDaemon(args[1])
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
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, proc.Environ(), os.Stderr, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: %v\n", err)
		return 1
	}
	fmt.Println(cmd.Process.Pid)
	return 0
}

// keepDaemon is the keeper of the daemon in dir.
func keepDaemon(dir string) int {
	spec, err := readSpec(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: reading its spec: %v\n", err)
		return 2
	}
	keeping, err := awaitLastKeeper(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: waiting for the last keeper: %v\n", err)
		return 1
	}
	defer keeping.Unlock() // held, and so kept from the garbage collector, until the keeper ends
	clean(dir)
	os.WriteFile(filepath.Join(dir, "keeper"), []byte(strconv.Itoa(os.Getpid())), 0o600)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	pid, exited, err := startServer(dir, spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: %v\n", err)
		return 127
	}
	stopWills := serveWills(dir)
	status := keepServer(dir, spec.Idle, exited, sigs, pid)
	stopWills()
	clean(dir)
	return status
}

// startServer starts the daemon's server in dir and notes its pid there.
// It returns the pid, and a channel that gets the server's Wait error once
// it has exited.
func startServer(dir string, spec daemonFile) (int, chan error, error) {
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, proc.Scrub(spec.Env), os.Stderr, os.Stderr
	if cmd.Env == nil {
		cmd.Env = proc.Environ()
	}
	cmd.SysProcAttr = proc.ChildAttr() // its own group, killed with the keeper
	if err := cmd.Start(); err != nil {
		return 0, nil, err
	}
	pid := cmd.Process.Pid
	os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(pid)), 0o600)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return pid, exited, nil
}

// awaitLastKeeper takes the keeping lock, for up to 4 proc.Grace: one
// keeper at a time, as one whose server just died may still be cleaning
// up after it. The caller holds the returned lock while it keeps: its open
// file holds the lock, and a garbage collection would close a file nobody
// refers to, letting the lock go while the keeper lives.
func awaitLastKeeper(dir string) (*flock.Flock, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*proc.Grace)
	defer cancel()
	l := flock.New(filepath.Join(dir, "keeping"))
	ok, err := l.TryLockContext(ctx, lockRetry)
	if err == nil && !ok {
		err = errors.New("the last keeper still holds the keeping lock")
	}
	return l, err
}

// keepServer keeps the server pid until it exits (exited), a signal comes,
// or the daemon is idle, and stops it in the last two cases: every way out
// has received from exited. It tries the
// lease lock on a file it keeps open, so that a daemon whose directory was
// removed (a temporary directory cleaned) still idles out: no bridge can
// find it any more, and those using it hold their leases on the same file.
// It returns the keeper's exit status, once the server has exited.
func keepServer(dir string, idle time.Duration, exited chan error, sigs chan os.Signal, pid int) int {
	stop := func() { stopGroup(pid, exited) }
	lease, err := os.OpenFile(filepath.Join(dir, "lease"), os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: %v: stopping the server\n", err)
		stop()
		return 1
	}
	defer lease.Close()
	return keep(lease, idle, exited, sigs, stop, func(since time.Time) { noteIdle(dir, since, proc.TreeCPU(os.Getpid())) })
}

// idleFile is the file of a daemon's directory that says since when no
// bridge has used it, and the CPU time the keeper and everything under it
// had used by then (what it costs idle is what they use after), for
// acpbridge doctor; there is none while a bridge uses it.
const idleFile = "idle"

// noteIdle writes since and cpu in the daemon's idle file, or removes
// the file if since is zero (in use).
func noteIdle(dir string, since time.Time, cpu time.Duration) {
	path := filepath.Join(dir, idleFile)
	if since.IsZero() {
		os.Remove(path)
		return
	}
	os.WriteFile(path, []byte(since.Format(time.RFC3339Nano)+"\n"+cpu.String()+"\n"), 0o600)
}

// readIdle reads the daemon's idle file: since when it is idle and the
// CPU time used by then; zero since if it is in use.
func readIdle(dir string) (since time.Time, cpu time.Duration) {
	b, err := os.ReadFile(filepath.Join(dir, idleFile))
	if err != nil {
		return time.Time{}, 0
	}
	first, second, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	since, _ = time.Parse(time.RFC3339Nano, first)
	cpu, _ = time.ParseDuration(second)
	return since, cpu
}

// keep waits for the server to exit, a signal, or no lease held on lease
// for idle, and calls stop in the last two cases. It looks every
// pollFor(idle); a lease file touched since the daemon turned idle (a
// bridge came and went between two looks) starts the idle time again.
// Once idle, it keeps the lease locked: a bridge that comes waits until
// the keeper has exited. note is told when the daemon turns idle (since
// then) or busy (zero).
func keep(lease *os.File, idle time.Duration, exited <-chan error, sigs <-chan os.Signal, stop func(), note func(since time.Time)) int {
	tick := time.NewTicker(pollFor(idle))
	defer tick.Stop()
	var since time.Time // when the daemon was first seen idle
	for {
		select {
		case err := <-exited:
			fmt.Fprintf(os.Stderr, "acpbridge daemon: the server exited: %v\n", err)
			return 1
		case sig := <-sigs:
			fmt.Fprintf(os.Stderr, "acpbridge daemon: %v: stopping the server\n", sig)
			stop()
			return 0
		case <-tick.C:
		}
		if !lockLease(lease) {
			if !since.IsZero() {
				note(time.Time{})
			}
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
			note(since)
		} else if used := lastUse(lease); used.After(since) && !used.After(time.Now()) {
			since = used
			note(since)
		}
		if time.Since(since) >= idle {
			fmt.Fprintf(os.Stderr, "acpbridge daemon: idle for %v: stopping the server\n", idle)
			stop() // the lease stays locked until the keeper exits
			return 0
		}
		syscall.Flock(int(lease.Fd()), syscall.LOCK_UN)
	}
}

// lastUse is when a bridge last touched the lease file (Attend,
// Lease.Close): its modification time.
func lastUse(lease *os.File) time.Time {
	fi, err := lease.Stat()
	if err != nil {
		return time.Time{}
	}
	return fi.ModTime()
}

// lockLease takes the lease lock exclusively if no bridge holds a lease.
func lockLease(lease *os.File) bool {
	return syscall.Flock(int(lease.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

// stopGroup stops the server's process group: SIGTERM, then SIGKILL
// proc.Grace later.
func stopGroup(pid int, exited chan error) {
	proc.SignalGroup(pid, syscall.SIGTERM)
	t := time.NewTimer(proc.Grace)
	defer t.Stop()
	select {
	case <-exited:
	case <-t.C:
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

// StopAll stops every daemon under root (Running.Stop), at once, and
// waits for them.
func StopAll(root string) {
	var wg sync.WaitGroup
	for _, r := range List(root) {
		wg.Go(func() { r.Stop() })
	}
	wg.Wait()
}
