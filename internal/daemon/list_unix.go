//go:build unix

package daemon

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
)

// List finds the daemons that run under root, in the order of their
// directories' names.
func List(root string) []Running {
	ents, _ := os.ReadDir(root)
	var out []Running
	for _, e := range ents {
		dir := filepath.Join(root, e.Name())
		keeper := pidIn(dir, "keeper")
		if !e.IsDir() || keeper <= 0 || !isKeeper(keeper, dir) || syscall.Kill(keeper, 0) != nil {
			continue
		}
		out = append(out, running(dir, keeper))
	}
	return out
}

// running is what can be told of the daemon in dir, kept by keeper.
func running(dir string, keeper int) Running {
	r := Running{Dir: dir, Name: filepath.Base(dir), Keeper: keeper, Server: pidIn(dir, "pid"), Answers: keeperRuns(dir)}
	if spec, err := readSpec(dir); err == nil {
		r.Idle, r.OtherBuild = spec.Idle, spec.Build != Build()
		if spec.Name != "" {
			r.Name = spec.Name
		}
	}
	r.IdleSince, r.IdleCPU = readIdle(dir)
	if fi, err := os.Stat(filepath.Join(dir, "keeper")); err == nil {
		r.Started = fi.ModTime()
	}
	r.Bridges = leaseHolders(filepath.Join(dir, "lease"))
	r.Memory = proc.TreeMemory(keeper)
	r.CPU = proc.TreeCPU(keeper)
	_, err := os.Stat("/proc/" + strconv.Itoa(keeper) + "/stat") // where TreeCPU reads it
	r.CPUKnown = err == nil
	return r
}

// leaseHolders are the pids holding a shared flock on the file at path,
// from /proc/locks (Linux); nil where that can't be read.
func leaseHolders(path string) []int {
	var st syscall.Stat_t
	if syscall.Stat(path, &st) != nil {
		return nil
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer f.Close()
	inode := fmt.Sprintf(":%d", st.Ino)
	var pids []int
	for sc := bufio.NewScanner(f); sc.Scan(); {
		// 1: FLOCK  ADVISORY  READ  1234 08:01:123456 0 EOF
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[3] != "READ" || !strings.HasSuffix(fields[5], inode) {
			continue
		}
		if pid, err := strconv.Atoi(fields[4]); err == nil && !slices.Contains(pids, pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// Stop stops the daemon: SIGTERM to its keeper, which stops its server,
// then, if it has not exited within twice proc.Grace (hung), SIGKILL to
// both. It returns once the keeper has gone, or it gave up.
func (r Running) Stop() error {
	if err := syscall.Kill(r.Keeper, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stopping the %s daemon's keeper (pid %d): %w", r.Name, r.Keeper, err)
	}
	if gone(r.Keeper, 2*proc.Grace) {
		return nil
	}
	killKeeper(r.Dir)
	if !gone(r.Keeper, proc.Grace) {
		return fmt.Errorf("the %s daemon's keeper (pid %d) outlived SIGKILL", r.Name, r.Keeper)
	}
	return nil
}

// gone waits up to within for pid to exit, and reports whether it did.
func gone(pid int, within time.Duration) bool {
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil || zombie(pid) {
			return true
		}
	}
	return false
}

// zombie reports whether pid has exited and waits to be reaped, where
// /proc tells it.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && strings.HasPrefix(string(b[i+1:]), " Z")
}
