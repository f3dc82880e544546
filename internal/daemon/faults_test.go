//go:build linux

// The faults a shared daemon survives (docs/sessions.md: Guarantees).

package daemon_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
)

// stopKeeper ends the keeper of the daemon in dir (its server with it) when
// the test ends.
func stopKeeper(t *testing.T, dir string) {
	pid := keeperOf(dir)
	if pid <= 1 {
		t.Fatalf("no keeper noted in %s", dir)
	}
	t.Cleanup(func() {
		syscall.Kill(pid, syscall.SIGCONT)
		syscall.Kill(pid, syscall.SIGTERM)
		waitGone(t, pid, time.Minute)
	})
}

// stop stops pid (SIGSTOP) and waits until every thread of it has
// stopped: a signal that stops a process is taken by one of its threads,
// which stops the others only once it runs, and under load the others go
// on meanwhile (the server answered a probe after its SIGSTOP, and the
// test took it for live).
func stop(t *testing.T, pid int) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("stopping %d: %v", pid, err)
	}
	for deadline := time.Now().Add(time.Minute); !stopped(pid); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d not stopped a minute after its SIGSTOP", pid)
		}
	}
}

// stopped reports whether every thread of pid is stopped (state T in
// /proc/PID/task/TID/stat).
func stopped(pid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + task.Name() + "/stat")
		i := strings.LastIndexByte(string(stat), ')')
		if err != nil || i < 0 || !strings.HasPrefix(string(stat[i+1:]), " T") {
			return false
		}
	}
	return true
}

// A keeper that hangs (here stopped, with its server) is replaced: the
// next bridge waits at most the patience it is given, kills it, and gets
// a new server; the hung one is gone.
func TestDaemon_hungKeeperIsReplaced(t *testing.T) {
	daemon.Impatient(t, 0, 300*time.Millisecond)
	spec := daemonSpec(t, t.TempDir(), time.Minute)
	a := attend(t, spec)
	a.Close()
	keeper, server := keeperOf(a.Dir), a.Pid()
	t.Cleanup(func() { syscall.Kill(keeper, syscall.SIGKILL); syscall.Kill(server, syscall.SIGKILL) })
	stop(t, server)
	stop(t, keeper)
	hangs := func(dir string) error { // a probe that hangs on a stopped server would hang the bridge: bound it
		c, err := net.DialTimeout("unix", filepath.Join(dir, "sock"), 50*time.Millisecond)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		_, err = c.Read(make([]byte, 32))
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := daemon.Attend(ctx, spec, hangs) // past the hung keeper, well within ctx
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	stopKeeper(t, b.Dir)
	if b.Pid() == server || b.Pid() <= 0 {
		t.Errorf("server %d after the hung %d; want a new one", b.Pid(), server)
	}
	waitGone(t, keeper, time.Minute)
	waitGone(t, server, time.Minute)
}

// A daemon that just answers slowly at its start is not taken for hung.
func TestDaemon_startingKeeperIsNotHung(t *testing.T) {
	daemon.Impatient(t, time.Minute, 10*time.Millisecond)
	spec := daemonSpec(t, t.TempDir(), time.Minute)
	a := attend(t, spec)
	defer a.Close()
	stopKeeper(t, a.Dir)
	pid := a.Pid()
	fails := 40
	slow := func(dir string) error {
		if fails > 0 {
			fails--
			return syscall.ECONNREFUSED
		}
		return dial(dir)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := daemon.Attend(ctx, spec, slow)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Pid() != pid {
		t.Errorf("server %d; want the starting %d, not killed", b.Pid(), pid)
	}
}

// A socket left by a daemon killed outright (nobody removed it) does not
// keep the next one from starting.
func TestDaemon_staleSocket(t *testing.T) {
	spec := daemonSpec(t, t.TempDir(), time.Minute)
	dir := spec.Dir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "sock"), Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Stat(filepath.Join(dir, "sock")); err != nil {
		t.Fatalf("no stale socket: %v", err)
	}
	a := attend(t, spec)
	defer a.Close()
	stopKeeper(t, a.Dir)
	if pid, err := serverPid(a.Dir); err != nil || pid != a.Pid() {
		t.Errorf("the server on the socket: %d, %v; want %d", pid, err, a.Pid())
	}
}

// A daemon whose directory is removed while a bridge uses it goes on for
// that bridge; the next bridge starts a new one, and the old one idles
// out once its bridge has left.
func TestDaemon_directoryRemovedInUse(t *testing.T) {
	spec := daemonSpec(t, t.TempDir(), 300*time.Millisecond)
	a := attend(t, spec)
	old := a.Pid()
	t.Cleanup(func() { syscall.Kill(old, syscall.SIGKILL) })
	if err := os.RemoveAll(a.Dir); err != nil {
		t.Fatal(err)
	}
	b := attend(t, spec)
	stopKeeper(t, b.Dir)
	if b.Pid() == old || b.Pid() <= 0 {
		t.Errorf("server %d after the directory went; want a new one", b.Pid())
	}
	time.Sleep(time.Second)
	if !alive(old) {
		t.Fatal("the old server went while its bridge held a lease")
	}
	a.Close()
	waitGone(t, old, time.Minute)
	b.Close()
}

// Each user's daemons are apart: the default root names the user (without
// $XDG_RUNTIME_DIR, which is the user's own), a daemon's directory is
// 0700, and a directory of another user's is refused.
func TestDaemon_usersApart(t *testing.T) {
	if got := daemon.Root([]string{"TMPDIR=/tmp"}); !strings.HasSuffix(got, "acpbridge-"+strconv.Itoa(os.Getuid())) {
		t.Errorf("root %s; want one named after uid %d", got, os.Getuid())
	}
	root := t.TempDir()
	spec := daemonSpec(t, root, time.Minute)
	a := attend(t, spec)
	stopKeeper(t, a.Dir)
	a.Close()
	if fi, err := os.Stat(a.Dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the daemon's directory: %v, %v; want mode 0700", fi.Mode(), err)
	}
	if os.Geteuid() != 0 {
		t.Skip("SKIPPED: the directory of another user needs root to make (chown)")
	}
	other := daemonSpec(t, root, time.Minute, "OTHER=1")
	other.Key = append(other.Key, "other")
	if err := os.MkdirAll(other.Dir(), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(other.Dir(), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := daemon.Attend(ctx, other, dial); err == nil || !strings.Contains(err.Error(), "not a directory of this user's") {
		t.Errorf("attending another user's daemon: %v; want it refused", err)
	}
}

// A daemons' directory too deep for the daemon's sockets is refused at
// once, saying so, rather than waited on until the start times out.
func TestAttend_directoryTooDeepForItsSockets(t *testing.T) {
	root := filepath.Join(t.TempDir(), strings.Repeat("d", 120))
	spec := daemon.Spec{Name: "fake", Key: []string{"listen"}, Env: []string{daemon.RootEnv + "=" + root}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := daemon.Attend(ctx, spec, func(string) error { return errors.New("not up") })
	if err == nil || !strings.Contains(err.Error(), "too deep for its sockets") || ctx.Err() != nil {
		t.Fatalf("Attend under %s: %v; want it refused at once as too deep", root, err)
	}
}
