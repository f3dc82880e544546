package benchkit

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ProcID names a process across pid reuse: its pid, its start time (in
// clock ticks since boot) and its process group.
type ProcID struct {
	pid, pgid int
	start     uint64
}

// procStat is the part of /proc/PID/stat the sampler needs.
type procStat struct {
	state      byte // 'R', 'S', … 'Z' for a zombie
	ppid, pgid int
	start      uint64
}

// procPath is the path of file in pid's /proc directory.
func procPath(pid int, file string) string {
	return "/proc/" + strconv.Itoa(pid) + "/" + file
}

// readStat reads and parses /proc/pid/stat.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(procPath(pid, "stat"))
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// parseStat parses the contents of a /proc/PID/stat file.
func parseStat(b []byte) (procStat, bool) {
	// The command name, field 2, is in parentheses and may hold any
	// character: the fields after it start after the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, pgrp 5, starttime 22.
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procStat{f[0][0], ppid, pgid, start}, true
}

// tree returns root and its descendants, from one scan of /proc.
func tree(root int) map[int]procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	stats := map[int]procStat{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok {
			stats[pid] = st
		}
	}
	return descendants(root, stats)
}

// descendants returns root and its descendants among stats (all the
// processes, by pid).
func descendants(root int, stats map[int]procStat) map[int]procStat {
	children := map[int][]int{}
	for pid, st := range stats {
		children[st.ppid] = append(children[st.ppid], pid)
	}
	out := map[int]procStat{}
	st, ok := stats[root]
	if !ok {
		return out
	}
	out[root] = st
	queue := []int{root}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if _, dup := out[c]; !dup {
				out[c] = stats[c]
				queue = append(queue, c)
			}
		}
	}
	return out
}

// rssKiB is VmRSS of pid, 0 if it is gone (or a zombie).
func rssKiB(pid int) int64 {
	return fileKiB(procPath(pid, "status"), "VmRSS:")
}

// pssKiB is the Pss of pid's smaps_rollup, 0 if it is gone.
func pssKiB(pid int) int64 {
	return fileKiB(procPath(pid, "smaps_rollup"), "Pss:")
}

// fileKiB is parseKiB of the file at path, 0 if it cannot be read.
func fileKiB(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return parseKiB(string(b), key)
}

// parseKiB returns the number on the line of text that starts with key,
// as in "VmRSS:	  1234 kB" of /proc/PID/status; 0 if there is none.
func parseKiB(text, key string) int64 {
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// alive is the processes of ps that still run as themselves (same start
// time), zombies excluded.
func alive(ps []ProcID) []int {
	var out []int
	for _, p := range ps {
		if st, ok := readStat(p.pid); ok && st.start == p.start && st.state != 'Z' {
			out = append(out, p.pid)
		}
	}
	return out
}

// killAll SIGKILLs the agent's process group (root's), the process group
// of every process seen in its tree, and each of those processes still
// running as itself.
func killAll(root int, seen []ProcID) {
	groups := map[int]bool{root: true}
	for _, p := range seen {
		if p.pgid > 1 && p.pgid != ownGroup() {
			groups[p.pgid] = true
		}
	}
	for g := range groups {
		killGroup(g)
	}
	for _, pid := range alive(seen) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
			p.Release()
		}
	}
}
