//go:build linux

package daemon_test

import (
	"bufio"
	"context"
	"fmt"
	"github.com/acpbridge/acpbridge/internal/testkit/daemontest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
)

// spares starts a spares daemon of the test binary and returns the
// socket and the Spec of an echo spare; spares note their pids in pids.
func spares(t *testing.T, idle time.Duration) (sock string, s proc.Spec, pids string) {
	t.Helper()
	root, pids := daemontest.ShortDir(t), t.TempDir()
	env := append(os.Environ(), daemon.RootEnv+"="+root, "GORACE=atexit_sleep_ms=0")
	spec, err := daemon.SparesOf(daemon.Spec{Name: "fake", Key: []string{"echo"}, Env: env, Idle: idle})
	if err != nil {
		t.Fatal(err)
	}
	sock = daemon.SparesSocket(spec.Dir())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Cleanup(func() { daemon.StopAll(root) })
	lease, err := daemon.Attend(ctx, spec, daemon.SparesServe)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lease.Close() })
	return sock, proc.Spec{Path: os.Args[0], Dir: pids, Env: append(env, "FAKE_CHILD=echo", "SPARE_PIDS="+pids)}, pids
}

func take(t *testing.T, sock string, s proc.Spec) *proc.Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := daemon.TakeSpare(ctx, sock, s)
	if err != nil {
		t.Fatal(err)
	}
	if p != nil {
		t.Cleanup(func() { p.Kill() })
	}
	return p
}

// takeSoon takes a spare, waiting up to 10s for one: the server answers
// a take it has no spare for before it starts one.
func takeSoon(t *testing.T, sock string, s proc.Spec) *proc.Process {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if p := take(t, sock, s); p != nil {
			return p
		}
	}
	return nil
}

func TestSpares_lendsAWarmProcessWhole(t *testing.T) {
	t.Parallel()
	sock, s, _ := spares(t, time.Minute)
	if p := take(t, sock, s); p != nil {
		t.Fatalf("took pid %d before any was warmed; want none", p.Pid())
	}
	p := takeSoon(t, sock, s) // the one the first take had made
	if p == nil {
		t.Fatal("no spare after a take that had none; want the one it made")
	}
	fmt.Fprintln(p.Stdin, "hello")
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if line != "hello\n" || err != nil {
		t.Fatalf("the lent process echoed %q, %v; want hello", line, err)
	}
	fmt.Fprintln(p.Stdin, "exit 3")
	select {
	case <-p.Done():
	case <-time.After(time.Minute):
		t.Fatal("the lent process's exit was not told")
	}
	if err := p.Err(); err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "echo exiting") {
		t.Errorf("exit: %v; want its status and its stderr", err)
	}

	q := takeSoon(t, sock, s)
	if q == nil || q.Pid() == p.Pid() {
		t.Fatalf("the next take: %v; want another spare", q)
	}
	q.Stop() // stdin's end: status 0
	if err := q.Err(); err != nil {
		t.Errorf("a spare stopped by its stdin's end: %v; want status 0", err)
	}
}

func TestSpares_otherDirectoryIsAnotherKind(t *testing.T) {
	t.Parallel()
	sock, s, _ := spares(t, time.Minute)
	ctx := context.Background()
	if err := daemon.WarmSpare(ctx, sock, s); err != nil {
		t.Fatal(err)
	}
	other := s
	other.Dir = t.TempDir()
	if p := take(t, sock, other); p != nil {
		t.Fatalf("took a spare made in %s for %s", s.Dir, other.Dir)
	}
	if p := take(t, sock, s); p == nil {
		t.Fatal("the spare warmed for its directory is gone")
	}
}

// Nothing stays: a spare nobody took goes at its time to live, the rest
// with the daemon once no bridge holds a lease.
func TestSpares_leaveNothingBehind(t *testing.T) {
	t.Parallel()
	sock, s, pids := spares(t, 700*time.Millisecond)
	ctx := context.Background()
	if err := daemon.WarmSpare(ctx, sock, s); err != nil {
		t.Fatal(err)
	}
	for _, pid := range notedPids(t, pids) { // gone at its time to live
		waitGone(t, pid, time.Minute)
	}
	other := s
	other.Dir = t.TempDir()
	if err := daemon.WarmSpare(ctx, sock, other); err != nil {
		t.Fatal(err)
	}
	daemon.StopAll(daemon.Root(s.Env))
	for _, pid := range notedPids(t, pids) {
		waitGone(t, pid, time.Minute)
	}
}

// notedPids are the pids spares noted in dir, once there is one.
func notedPids(t *testing.T, dir string) []int {
	t.Helper()
	var pids []int
	for deadline := time.Now().Add(time.Minute); len(pids) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	if len(pids) == 0 {
		t.Fatal("no spare noted its pid")
	}
	return pids
}

// A bridge killed with a spare it took, idle or running a tool that left
// the agent's session (as claude's Bash tool does), leaves nothing of it
// behind: the agent and the tool end with the bridge.
func TestSpares_killedBridgeLeavesNothingBehind(t *testing.T) {
	for _, idle := range []bool{false, true} {
		t.Run(fmt.Sprintf("idle=%v", idle), func(t *testing.T) {
			t.Parallel()
			sock, s, _ := spares(t, time.Minute)
			s.Env = append(s.Env, "FAKE_CHILD=tool")
			if err := daemon.WarmSpare(context.Background(), sock, s); err != nil {
				t.Fatal(err)
			}
			bridge, agent := takenByBridge(t, sock, s, idle)
			lent := lentTree(t, agent, map[bool]int{false: 3, true: 2}[idle])
			for _, pid := range lent {
				t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
			}
			bridge.Process.Kill()
			bridge.Wait()
			killed := time.Now()
			for _, pid := range lent {
				waitGone(t, pid, time.Minute)
			}
			t.Logf("the lent tree (%d processes) was gone %v after the bridge's SIGKILL", len(lent), time.Since(killed))
		})
	}
}

// lentTree is the tree of the lent process agent once it has want
// processes (its supervisor, the agent, its tool): the supervisor starts
// the agent, and the agent its tool, in their own time.
func lentTree(t *testing.T, agent, want int) []int {
	t.Helper()
	var lent []int
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if lent = append([]int{agent}, proc.Descendants(agent)...); len(lent) >= want {
			return lent
		}
	}
	t.Fatalf("the lent process's tree: %v; want at least %d processes (its supervisor, the agent, its tool)", lent, want)
	return nil
}

// takenByBridge starts a "bridge" child that takes the spare s from the
// server on sock, and has it run its tool unless idle; it returns the
// bridge, once it has, and the pid it was lent.
func takenByBridge(t *testing.T, sock string, s proc.Spec, idle bool) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "FAKE_CHILD=bridge", "SPARES_SOCK="+sock, "SPARE_DIR="+s.Dir, "GORACE=atexit_sleep_ms=0")
	if idle {
		cmd.Env = append(cmd.Env, "BRIDGE_IDLE=1")
	}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	var agent, tool int
	if _, err := fmt.Fscan(out, &agent, &tool); err != nil {
		t.Fatalf("the bridge said no pids: %v", err)
	}
	return cmd, agent
}
