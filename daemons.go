package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
)

// DaemonsCommand lists the daemons that the user's bridges share
// (`acpbridge daemons`), or stops them all (`acpbridge daemons stop`).
const DaemonsCommand = "daemons"

// daemons is the daemons subcommand; it returns the exit status.
func daemons(args []string, stdout, stderr io.Writer) int {
	root := daemon.Root(nil)
	switch {
	case len(args) == 0:
		listDaemons(stdout, root)
		return 0
	case len(args) == 1 && args[0] == "stop":
		return stopDaemons(stdout, stderr, root)
	}
	fmt.Fprintln(stderr, "usage: acpbridge daemons [stop]")
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
	fmt.Fprintf(w, "Shared daemons in %s (`acpbridge daemons stop` stops them):\n", root)
	for _, r := range rs {
		fmt.Fprintf(w, "  %-15s keeper %d, server %d; %s; %s\n", r.Name, r.Keeper, r.Server, memory(r), use(r, time.Now()))
	}
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
