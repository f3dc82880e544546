package cmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
)

// DaemonsCommand lists the daemons that the user's bridges share
// (`acpbridge daemons`), or stops them all (`acpbridge daemons stop`).
const DaemonsCommand = "daemons"

// daemons is the daemons subcommand; it returns the exit status.
func (c *cli) daemons(args []string) int {
	root := daemon.Root(nil)
	switch {
	case len(args) == 0:
		listDaemons(c.stdout, root)
		return 0
	case len(args) == 1 && args[0] == "stop":
		return stopDaemons(c.stdout, c.stderr, root)
	}
	fmt.Fprintln(c.stderr, "usage: acpbridge daemons [stop]")
	return 2
}

// stopDaemons stops every daemon under root, saying which, and returns 1
// if one could not be stopped.
func stopDaemons(stdout, stderr io.Writer, root string) int {
	rs := daemon.List(root)
	if len(rs) == 0 {
		fmt.Fprintf(stdout, "No shared daemons run (in %s).\n", root)
		return 0
	}
	code := 0
	for _, r := range rs {
		if err := r.Stop(); err != nil {
			fmt.Fprintf(stderr, "acpbridge daemons stop: %v\n", err)
			code = 1
			continue
		}
		fmt.Fprintf(stdout, "stopped %s (keeper %d, server %d)\n", r.Name, r.Keeper, r.Server)
	}
	return code
}

// listDaemons prints the daemons under root: what each holds, and who
// uses it or how long it has been idle.
func listDaemons(w io.Writer, root string) {
	rs := daemon.List(root)
	if len(rs) == 0 {
		fmt.Fprintf(w, "No shared daemons run (in %s).\n", root)
		return
	}
	fmt.Fprintf(w, "Shared daemons in %s (`acpbridge daemons stop` stops them; %s):\n", root, bound())
	now := time.Now()
	for _, r := range rs {
		fmt.Fprintf(w, "  %-15s keeper %d, server %d; %s; %s%s\n", r.Name, r.Keeper, r.Server, memory(r), use(r, now), cpu(r, now))
	}
	fmt.Fprintf(w, "  %s\n", total(rs, now))
}

// bound says how many daemons may run at once, and what sets it.
func bound() string {
	if n := daemon.Max(nil); n > 0 {
		return fmt.Sprintf("at most %d run at once, the longest idle stopped first: $%s", n, daemon.MaxEnv)
	}
	return fmt.Sprintf("no bound on how many run: $%s", daemon.MaxEnv)
}

// cpu says what CPU a daemon uses, where it is known: its share of a
// core since it turned idle, and its CPU time since it started.
func cpu(r daemon.Running, now time.Time) string {
	if !r.CPUKnown {
		return ""
	}
	var s string
	if !r.IdleSince.IsZero() {
		s = fmt.Sprintf("; %s of a core idle", percent(r.IdleShare(now)))
	}
	s += fmt.Sprintf("; CPU %.1f s", r.CPU.Seconds())
	if !r.Started.IsZero() {
		s += fmt.Sprintf(" in %v (%s)", now.Sub(r.Started).Round(time.Second), percent(r.LifeShare(now)))
	}
	return s
}

func percent(share float64) string { return fmt.Sprintf("%.2f %%", share*100) }

// total says what the daemons rs hold in all, and what the idle ones use.
func total(rs []daemon.Running, now time.Time) string {
	var mem proc.Memory
	var idle int
	var share float64
	for _, r := range rs {
		mem = mem.Add(r.Memory)
		if !r.IdleSince.IsZero() {
			idle++
			share += r.IdleShare(now)
		}
	}
	s := fmt.Sprintf("In all: %d daemon%s", len(rs), plural(len(rs)))
	if mem.RSS > 0 {
		s += fmt.Sprintf(", RSS %s, PSS %s", mib(mem.RSS), mib(mem.PSS))
	}
	if idle > 0 {
		s += fmt.Sprintf("; %d idle, using %s of a core", idle, percent(share))
	}
	return s
}

// memory says what a daemon holds, where it is known.
func memory(r daemon.Running) string {
	if r.Memory.RSS == 0 {
		return "memory not known here"
	}
	return fmt.Sprintf("RSS %s, PSS %s", mib(r.Memory.RSS), mib(r.Memory.PSS))
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// use says who uses a daemon, or how long it has been idle and when it
// stops, at now.
func use(r daemon.Running, now time.Time) string {
	var parts []string
	switch {
	case !r.Answers:
		parts = append(parts, "stopping")
	case !r.IdleSince.IsZero():
		idle := now.Sub(r.IdleSince).Round(time.Second)
		parts = append(parts, fmt.Sprintf("idle %v, stops in %v", idle, max(r.Idle-idle, 0).Round(time.Second)))
	case len(r.Bridges) > 0:
		parts = append(parts, fmt.Sprintf("in use by %d bridge%s (%s)", len(r.Bridges), plural(len(r.Bridges)), pids(r.Bridges)))
	default:
		parts = append(parts, "in use")
	}
	if r.OtherBuild {
		parts = append(parts, "of another acpbridge build")
	}
	return strings.Join(parts, ", ")
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func pids(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = "pid " + strconv.Itoa(p)
	}
	return strings.Join(s, ", ")
}
