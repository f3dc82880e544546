// Command benchstart measures acpbridge's start-up: from the start of its
// process to the answer of its first request, initialize, over stdio, the
// way an editor sees it. It runs each binary given N times (-n),
// interleaving them run by run so that a busy machine weighs on all of them
// alike, and prints each one's median, 90th percentile and fastest run:
//
//	go run ./scripts/benchstart [-n 50] [-args '--agent mock'] BINARY...
//	bash scripts/bench-start.sh [-n 50] [BINARY...]   (builds bin/acpbridge first)
//
// A run starts BINARY with -args (the mock agent by default) and a fresh
// --state-dir in a temporary HOME, writes one initialize request, reads up
// to its answer (the clock stops there), then closes stdin and waits for
// the process to exit. Its exit takes no part in the number. The daemons
// (--shared) a binary's bridges start, with -args '--agent claude' say,
// live under that binary's temporary HOME ($ACPBRIDGE_DAEMONS): the first
// run starts them and the others find them, as an editor's second start
// does; benchstart stops them at the end (BINARY daemons stop).
//
// It exits 1 if a run failed (the process exited before answering or
// answered with an error), 2 for a usage error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}}}` + "\n"

func main() {
	n := flag.Int("n", 50, "runs per binary")
	args := flag.String("args", "--agent mock", "the bridge's arguments, split at spaces (--state-dir is added)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: benchstart [-n 50] [-args '--agent mock'] BINARY...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 || *n < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := bench(flag.Args(), strings.Fields(*args), *n, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "benchstart: %v\n", err)
		os.Exit(1)
	}
}

// bench runs every binary n times, interleaved, and prints the table.
func bench(bins, args []string, n int, out io.Writer) error {
	homes := make([]string, len(bins))
	for i := range bins {
		home, err := os.MkdirTemp("", "benchstart")
		if err != nil {
			return fmt.Errorf("making a HOME: %w", err)
		}
		defer os.RemoveAll(home)
		defer stopDaemons(bins[i], home)
		homes[i] = home
	}
	times := make([][]time.Duration, len(bins))
	for run := range n {
		for i, bin := range bins {
			d, err := once(bin, args, homes[i], run)
			if err != nil {
				return fmt.Errorf("%s, run %d: %w", bin, run+1, err)
			}
			times[i] = append(times[i], d)
		}
	}
	fmt.Fprintf(out, "start → initialize answer, %d runs each (%s)\n", n, strings.Join(args, " "))
	fmt.Fprintf(out, "%-9s %-9s %-9s %s\n", "median", "p90", "min", "binary")
	for i, bin := range bins {
		ts := times[i]
		slices.Sort(ts)
		fmt.Fprintf(out, "%-9s %-9s %-9s %s\n", ms(pct(ts, 50)), ms(pct(ts, 90)), ms(ts[0]), bin)
	}
	return nil
}

// once starts bin and times its answer to initialize.
func once(bin string, args []string, home string, run int) (time.Duration, error) {
	state := filepath.Join(home, fmt.Sprintf("state%d", run))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(slices.Clone(args), "--state-dir", state)...)
	cmd.Env = env(home)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 0, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	// The request waits in the pipe before the process starts, as an
	// editor's first line does, so the clock counts the bridge alone.
	if _, err := io.WriteString(in, initialize); err != nil {
		return 0, fmt.Errorf("writing initialize: %w", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	took := time.Since(start)
	in.Close()
	waitErr := cmd.Wait()
	switch {
	case err != nil:
		return 0, fmt.Errorf("no answer (%v, exit: %v): %s", err, waitErr, stderr.Bytes())
	case !bytes.Contains(line, []byte(`"result"`)):
		return 0, errors.New("initialize answered: " + string(line))
	}
	return took, nil
}

// env is the environment of a run with HOME home.
func env(home string) []string {
	return append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
		"ACPBRIDGE_DAEMONS="+filepath.Join(home, "daemons"))
}

// stopDaemons stops what bin's runs left running in home (a build
// without `acpbridge daemons` has none to stop).
func stopDaemons(bin, home string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "daemons", "stop")
	cmd.Env = env(home)
	cmd.Run()
}

// pct is the p-th percentile of sorted ts (nearest rank).
func pct(ts []time.Duration, p int) time.Duration {
	i := (len(ts)*p + 99) / 100
	return ts[max(i-1, 0)]
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000)
}
