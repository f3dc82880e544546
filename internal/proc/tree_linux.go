package proc

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// children lists the processes whose parent is pid.
func children(pid int) []int { return parents()[pid] }

// parents maps each live process to its children, from /proc.
func parents() map[int][]int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	kids := map[int][]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, ok := parent(pid); ok {
			kids[ppid] = append(kids[ppid], pid)
		}
	}
	return kids
}

// parent is the parent of pid, from /proc/PID/stat; false if pid is gone
// or a zombie.
func parent(pid int) (int, bool) {
	fields := statFields(strconv.Itoa(pid))
	if len(fields) < 2 || fields[0] == "Z" {
		return 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	return ppid, err == nil
}

// statFields are the fields of /proc/PID/stat after the command (state,
// ppid, pgrp, …), nil if pid is gone: "pid (comm) state ppid …", where
// comm may hold spaces and parentheses.
func statFields(pid string) []string {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return nil
	}
	i := strings.LastIndexByte(string(stat), ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(stat[i+1:]))
}

// groupLive reports whether a live process (not a zombie) is in process
// group pgid, from /proc: stat's fields after the command are state,
// ppid, pgrp.
func groupLive(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		if f := statFields(e.Name()); len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// Descendants lists the live processes under the process (its children,
// theirs, …), for finding what an agent started.
func (p *Process) Descendants() []int { return Descendants(p.Pid()) }

// Descendants lists the live processes under pid.
func Descendants(pid int) []int {
	kids := parents()
	var out []int
	next := []int{pid}
	for len(next) > 0 {
		pid := next[0]
		next = next[1:]
		for _, k := range kids[pid] {
			out = append(out, k)
			next = append(next, k)
		}
	}
	return out
}

// Cwd is a process's working directory, or "" if it can't be read.
func Cwd(pid int) string {
	dir, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
	return dir
}

// KillTree sends SIGKILL to pid and, if it leads a process group, to its
// group.
func KillTree(pid int) {
	if pgid, err := syscall.Getpgid(pid); err == nil && pgid == pid {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
	syscall.Kill(pid, syscall.SIGKILL)
}

// MemoryOf is what pid holds, from /proc/PID/smaps_rollup; false if it
// can't be read (pid gone, or another user's).
func MemoryOf(pid int) (Memory, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return Memory{}, false
	}
	var m Memory
	for line := range strings.Lines(string(b)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "Rss" && k != "Pss") {
			continue
		}
		kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if k == "Rss" {
			m.RSS = kib << 10
		} else {
			m.PSS = kib << 10
		}
	}
	return m, true
}

// TreeMemory is what pid and every process under it hold together.
func TreeMemory(pid int) Memory {
	var total Memory
	for _, p := range append([]int{pid}, Descendants(pid)...) {
		if m, ok := MemoryOf(p); ok {
			total = total.Add(m)
		}
	}
	return total
}

// clockTicks is the kernel's USER_HZ, the unit of /proc/PID/stat's times
// (100 on every Linux the Go runtime supports).
const clockTicks = 100

// TreeCPU is the CPU time (user and system) pid and every process under
// it have used so far, from /proc/PID/stat.
func TreeCPU(pid int) time.Duration {
	var ticks int64
	for _, p := range append([]int{pid}, Descendants(pid)...) {
		// state ppid … utime is the 12th field after the command, stime the 13th.
		f := statFields(strconv.Itoa(p))
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		s, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + s
	}
	return time.Duration(ticks) * time.Second / clockTicks
}

// Settle waits until pid and the processes under it have used no CPU for
// quiet (started up, say), for at most within and while ctx lasts; it
// reports whether they settled.
func Settle(ctx context.Context, pid int, quiet, within time.Duration) bool {
	const poll = 50 * time.Millisecond
	tick := time.NewTicker(poll)
	defer tick.Stop()
	last, still := TreeCPU(pid), time.Duration(0)
	for deadline := time.Now().Add(within); time.Now().Before(deadline); {
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
		now := TreeCPU(pid)
		if now > last {
			last, still = now, 0
			continue
		}
		if still += poll; still >= quiet {
			return true
		}
	}
	return false
}
