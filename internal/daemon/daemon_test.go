//go:build linux

// The daemon tests read /proc (processes' parents and command lines).

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

// dial is the ready probe of the "listen" server.
func dial(dir string) error {
	_, err := serverPid(dir)
	return err
}

// serverPid asks the server in dir for its pid.
func serverPid(dir string) (int, error) {
	c, err := net.Dial("unix", filepath.Join(dir, "sock"))
	if err != nil {
		return 0, err
	}
	defer c.Close()
	buf := make([]byte, 32)
	n, _ := c.Read(buf)
	return strconv.Atoi(strings.TrimSpace(string(buf[:n])))
}

func daemonSpec(t *testing.T, root string, idle time.Duration, env ...string) daemon.Spec {
	return daemon.Spec{
		Name: "fake", Key: []string{os.Args[0], "listen"}, Path: os.Args[0],
		Env:  append(append(os.Environ(), "FAKE_CHILD=listen", "GORACE=atexit_sleep_ms=0"), env...),
		Idle: idle, Root: root,
	}
}

func attend(t *testing.T, spec daemon.Spec) *daemon.Lease {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := daemon.Attend(ctx, spec, dial)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// alive reports whether pid runs (and is not a zombie).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i < 0 || !strings.HasPrefix(string(stat[i+1:]), " Z")
}

func waitGone(t *testing.T, pid int, within time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(within); alive(pid); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d still runs after %v", pid, within)
		}
	}
}

// Two bridges share one server, which outlives them by the idle time and
// then goes with its socket; the next bridge starts a new one.
func TestDaemon_sharedThenStoppedWhenIdle(t *testing.T) {
	spec := daemonSpec(t, t.TempDir(), 500*time.Millisecond)
	a, b := attend(t, spec), attend(t, spec)
	if a.Dir != b.Dir || a.Pid() == 0 || a.Pid() != b.Pid() {
		t.Fatalf("two leases on %s (pid %d) and %s (pid %d); want one server", a.Dir, a.Pid(), b.Dir, b.Pid())
	}
	pid := a.Pid()
	a.Close()
	time.Sleep(time.Second) // past the idle time with b still held
	if got, err := serverPid(b.Dir); err != nil || got != pid {
		t.Fatalf("server with a lease held: %d, %v; want %d still serving", got, err, pid)
	}
	b.Close()
	waitGone(t, pid, time.Minute)
	sock := filepath.Join(b.Dir, "sock")
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err != nil {
			break
		}
	}
	if _, err := os.Stat(sock); err == nil {
		t.Error("the stopped daemon left its socket") // its keeper removes it once the server has exited
	}
	c := attend(t, spec)
	defer c.Close()
	if c.Pid() == pid || c.Pid() == 0 {
		t.Errorf("after the idle stop: pid %d; want a new server", c.Pid())
	}
	t.Cleanup(func() { syscall.Kill(c.Pid(), syscall.SIGKILL) })
}

// A server that dies at start is an error that says why, not a hang.
func TestDaemon_serverDyingAtStartIsAnError(t *testing.T) {
	spec := daemonSpec(t, t.TempDir(), time.Minute, "FAKE_DIE=1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := daemon.Attend(ctx, spec, dial)
	if err == nil || !strings.Contains(err.Error(), "dying at start on purpose") {
		t.Errorf("err %v; want the server's own words", err)
	}
}

// A keeper killed outright takes its server with it, and the next bridge
// starts both again.
func TestDaemon_keeperKilled(t *testing.T) {
	spec := daemonSpec(t, t.TempDir(), time.Minute)
	a := attend(t, spec)
	pid := a.Pid()
	keeper := keeperOf(a.Dir)
	if keeper <= 1 {
		t.Fatalf("no keeper above the server %d", pid)
	}
	syscall.Kill(keeper, syscall.SIGKILL)
	waitGone(t, pid, time.Minute)
	a.Close()
	b := attend(t, spec)
	defer b.Close()
	if b.Pid() == pid {
		t.Error("the dead server was attended again")
	}
	t.Cleanup(func() { syscall.Kill(keeperOf(b.Dir), syscall.SIGTERM) })
}

// keeperOf is the pid of the keeper of the daemon in dir, as it noted it.
func keeperOf(dir string) int {
	b, _ := os.ReadFile(filepath.Join(dir, "keeper"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// A directory of daemons others can write to is refused: a daemon's
// directory holds its socket and its password.
func TestDaemon_refusesAnOpenDirectory(t *testing.T) {
	root := t.TempDir()
	if err := os.Chmod(root, 0o777); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := daemon.Attend(ctx, daemonSpec(t, root, time.Minute), dial)
	if err == nil || !strings.Contains(err.Error(), "others can't change") {
		t.Errorf("err %v; want the directory refused", err)
	}
}

// A running daemon that does not answer the probe at once (busy, or still
// starting) is waited for, not started twice.
func TestDaemon_slowProbeStartsNoSecondKeeper(t *testing.T) {
	spec := daemonSpec(t, t.TempDir(), time.Minute)
	a := attend(t, spec)
	defer a.Close()
	pid := a.Pid()
	t.Cleanup(func() { syscall.Kill(keeperOf(a.Dir), syscall.SIGTERM) })
	fails := 20
	slow := func(dir string) error {
		if fails > 0 {
			fails--
			return errors.New("busy")
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
		t.Errorf("server %d after a slow probe; want the running %d", b.Pid(), pid)
	}
	if n := keepers(a.Dir); n != 1 {
		t.Errorf("%d keepers for %s; want 1", n, a.Dir)
	}
}

// keepers counts the processes keeping the daemon in dir (their command
// line is the test binary's, then "__daemon keep DIR").
func keepers(dir string) int {
	procs, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range procs {
		b, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(b), daemon.Command+"\x00keep\x00"+dir+"\x00") {
			n++
		}
	}
	return n
}

// A daemon whose directory is removed while nobody uses it (a temporary
// directory cleaned) still idles out: nobody could find it again.
func TestDaemon_removedDirectoryStillIdlesOut(t *testing.T) {
	root := t.TempDir()
	spec := daemonSpec(t, root, 500*time.Millisecond)
	a := attend(t, spec)
	pid := a.Pid()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	a.Close()
	if err := os.RemoveAll(a.Dir); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid, time.Minute)
}

// keeperAlive reports whether the daemon of spec still has its keeper.
func keeperAlive(spec daemon.Spec) bool {
	k := keeperOf(spec.Dir())
	return k > 0 && alive(k)
}

// Starting a daemon beyond Max stops the one idle the longest, never one
// a bridge holds a lease on; with none idle, it starts anyway.
func TestDaemon_boundStopsTheOldestIdle(t *testing.T) {
	root := t.TempDir()
	t.Cleanup(func() { daemon.StopAll(root) })
	spec := func(name string) daemon.Spec {
		s := daemonSpec(t, root, time.Hour)
		s.Key, s.Max = append(s.Key, name), 3
		return s
	}
	older, old, held := spec("older"), spec("old"), spec("held")
	attend(t, older).Close()
	attend(t, old).Close()
	defer attend(t, held).Close()
	for _, s := range []daemon.Spec{older, old, held} {
		if !keeperAlive(s) {
			t.Fatalf("%v: no keeper before the bound was reached", s.Key)
		}
	}
	olderKeeper, oldKeeper := keeperOf(older.Dir()), keeperOf(old.Dir())
	fourth := attend(t, spec("fourth"))
	defer fourth.Close()
	waitGone(t, olderKeeper, 10*time.Second)
	if !keeperAlive(old) || !keeperAlive(held) {
		t.Errorf("the fourth daemon stopped more than the one idle the longest: old %v, held %v", keeperAlive(old), keeperAlive(held))
	}
	fifth := attend(t, spec("fifth")) // stops old; held and fourth are in use
	defer fifth.Close()
	waitGone(t, oldKeeper, 10*time.Second)
	sixth := attend(t, spec("sixth"))
	defer sixth.Close()
	if n := len(daemon.List(root)); n != 4 || !keeperAlive(held) {
		t.Errorf("%d daemons run, the held one %v; want all 4 in use kept, beyond the bound", n, keeperAlive(held))
	}
}

// $ACPBRIDGE_MAX_DAEMONS sets the bound: a number, 0 or off for none.
func TestMax(t *testing.T) {
	for v, want := range map[string]int{"": daemon.DefaultMax, "3": 3, "0": 0, "off": 0, "many": daemon.DefaultMax} {
		if got := daemon.Max([]string{daemon.MaxEnv + "=" + v}); got != want {
			t.Errorf("%s=%q: %d, want %d", daemon.MaxEnv, v, got, want)
		}
	}
}
