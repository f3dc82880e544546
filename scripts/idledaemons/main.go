// Command idledaemons measures what acpbridge's shared daemons cost once
// their bridges have gone: the CPU time and memory of every process of
// each idle daemon (its keeper, its server, and what runs under it), over
// a sample of a minute, offline, on the pinned agent CLIs and the fake
// model servers.
//
//	go run ./scripts/idledaemons [flags]
//	bash scripts/idle-daemons.sh [flags]     (builds bin/acpbridge first)
//
// For each agent (-agents: claude, codex, opencode) it makes a fresh HOME
// and project, as a test or a benchmark does, and runs one bridge
// (bin/acpbridge, default flags) through initialize, session/new and one
// turn, then closes it. Every agent's daemons are kept in one directory of
// the run's own ($ACPBRIDGE_DAEMONS). Once they have settled (no CPU for a
// second, at most -settle each), it reads each process's CPU time (user
// and system, /proc/PID/stat) at the start and the end of -sample, and
// prints, per process and per daemon, the share of a core it used, and
// its RSS; with -threads, the threads of the processes over -over, by
// their names (where a runtime names its threads: Bun's, Tokio's, Go's
// are not). -env adds to the bridges' environment, and so to their
// servers': a switch of the agent's, say, to see what it saves. The
// daemons are stopped at the end.
//
// CPU time in ticks of 10 ms over a minute: a process that used 0.5 %
// of a core used 30 ticks; the figures are good to about 0.02 %.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/internal/testkit/fakechat"
	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

// options are idledaemons' flags.
type options struct {
	acpbridge string
	agents    string
	sample    time.Duration
	settle    time.Duration
	timeout   time.Duration
	threads   bool
	over      float64
	env       envFlag // more of the bridges' environment, which their daemons' servers get too
	root      string  // the repository
}

// envFlag is -env, given once per variable.
type envFlag []string

func (e *envFlag) String() string      { return strings.Join(*e, " ") }
func (e *envFlag) Set(kv string) error { *e = append(*e, kv); return nil }

func main() { os.Exit(run(os.Args[1:])) }

// run is the whole program; it returns the exit status.
func run(args []string) int {
	o, status, ok := parse(args)
	if !ok {
		return status
	}
	work, err := os.MkdirTemp("", "idledaemons-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "idledaemons: %v\n", err)
		return 1
	}
	defer os.RemoveAll(work)
	daemons := filepath.Join(work, "daemons")
	defer daemon.StopAll(daemons)
	if err := os.MkdirAll(daemons, 0o700); err != nil {
		fmt.Fprintf(os.Stderr, "idledaemons: %v\n", err)
		return 1
	}
	code := 0
	for _, agent := range strings.Split(o.agents, ",") {
		if err := bridgeOnce(o, agent, filepath.Join(work, agent), daemons); err != nil {
			fmt.Fprintf(os.Stderr, "idledaemons: %s: %v\n", agent, err)
			code = 1
		}
	}
	for _, r := range daemon.List(daemons) {
		proc.Settle(context.Background(), r.Keeper, time.Second, o.settle)
	}
	fmt.Printf("idle daemons, CPU over %v (%% of one core) and RSS, %s:\n", o.sample, time.Now().Format(time.DateTime))
	report(os.Stdout, o, daemon.List(daemons))
	return code
}

// parse parses the flags; if the program is not to go on, ok is false and
// status is its exit status.
func parse(args []string) (o options, status int, ok bool) {
	root, err := benchkit.RepoRoot()
	if err != nil {
		fmt.Fprintf(os.Stderr, "idledaemons: %v\n", err)
		return o, 2, false
	}
	o.root = root
	fs := flag.NewFlagSet("idledaemons", flag.ContinueOnError)
	fs.StringVar(&o.acpbridge, "acpbridge", filepath.Join(root, "bin/acpbridge"), "the acpbridge `binary`")
	fs.StringVar(&o.agents, "agents", "claude,codex,opencode", "the agents whose daemons to measure, comma-separated")
	fs.DurationVar(&o.sample, "sample", time.Minute, "how long to measure the idle daemons")
	fs.DurationVar(&o.settle, "settle", 20*time.Second, "how long to wait at most, per daemon, for it to settle before the sample")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "the limit of each ACP request")
	fs.Var(&o.env, "env", "`KEY=VALUE` in the bridges' environment, which their daemons' servers get too (repeatable)")
	fs.BoolVar(&o.threads, "threads", false, "print the threads of the processes over -over")
	fs.Float64Var(&o.over, "over", 0.2, "with -threads, the share of a core (%) over which a process's threads are printed")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, 0, false
		}
		return o, 2, false
	}
	return o, 0, true
}

// bridgeOnce runs one bridge of agent through a turn, with a fresh HOME
// and project under dir and its daemons in daemons, and closes it.
func bridgeOnce(o options, agent, dir, daemons string) error {
	home, cwd := filepath.Join(dir, "home"), filepath.Join(dir, "project")
	for _, d := range []string{home, cwd} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	env, stop, err := agentEnv(o.root, agent, home)
	if err != nil {
		return err
	}
	defer stop()
	cmd := exec.Command(o.acpbridge, "--agent", agent, "--state-dir", filepath.Join(dir, "state"))
	cmd.Dir, cmd.Env = cwd, append(append(env, o.env...), daemon.RootEnv+"="+daemons)
	stderr, err := os.Create(filepath.Join(dir, "stderr.log"))
	if err != nil {
		return err
	}
	defer stderr.Close()
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	turnErr := turn(o.timeout, stdin, stdout, cwd)
	stdin.Close()
	waitErr := cmd.Wait()
	if turnErr != nil {
		b, _ := os.ReadFile(stderr.Name())
		return fmt.Errorf("%w (bridge: %v)\n%s", turnErr, waitErr, b)
	}
	return nil
}

// turn runs initialize, session/new and one prompt over stdin and stdout.
func turn(timeout time.Duration, stdin io.Writer, stdout io.Reader, cwd string) error {
	s := benchkit.NewACPSession(stdin, stdout, "idledaemons", false, func(string, string) error { return nil })
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := s.Initialize(ctx); err != nil {
		return err
	}
	if err := s.NewSession(ctx, cwd); err != nil {
		return err
	}
	return s.Turn(ctx, "hello there")
}

// agentEnv is the environment of a bridge of agent with home as HOME,
// against a fake model server it starts; stop stops the server.
func agentEnv(root, agent, home string) (env []string, stop func(), err error) {
	switch agent {
	case "claude":
		srv := fakemessages.New(fakemessages.Directives())
		cli := benchkit.EnvOr("ACPBRIDGE_CLAUDE", filepath.Join(root, ".tools/claude/node_modules/.bin/claude"))
		return append(fakemessages.Env(srv.URL, home), "ACPBRIDGE_CLAUDE="+cli), srv.Close, nil
	case "codex":
		srv := fakeresponses.New(fakeresponses.Directives())
		codexHome := filepath.Join(home, ".codex")
		if err := os.MkdirAll(filepath.Join(home, "tmp"), 0o755); err != nil {
			srv.Close()
			return nil, nil, err
		}
		if err := fakeresponses.WriteHome(codexHome, srv.URL, fakeresponses.HomeOptions{}); err != nil {
			srv.Close()
			return nil, nil, err
		}
		cli := benchkit.EnvOr("ACPBRIDGE_CODEX", fakeresponses.InstalledBin(root))
		return append(fakeresponses.Env(home, codexHome), "ACPBRIDGE_CODEX="+cli), srv.Close, nil
	case "opencode":
		srv := fakechat.New(fakechat.Directives())
		if err := fakechat.WriteHome(home, srv.URL); err != nil {
			srv.Close()
			return nil, nil, err
		}
		cli := benchkit.EnvOr("ACPBRIDGE_OPENCODE", fakechat.InstalledBin(root))
		return append(fakechat.Env(home, fakechat.ConfigPath(home)), "ACPBRIDGE_OPENCODE="+cli), srv.Close, nil
	}
	return nil, nil, fmt.Errorf("unknown agent %q (claude, codex or opencode)", agent)
}

// sample is what a process used, as read twice.
type sample struct {
	pid       int
	name      string // its command, shortened
	ticks     int64  // CPU ticks between the two reads
	rss       int64  // bytes, at the second read
	threads   map[int]threadTicks
	gone, new bool
}

// threadTicks is a thread's name and its CPU ticks (the first read's, then
// the difference).
type threadTicks struct {
	name  string
	ticks int64
}

// report samples every process of the daemons rs over o.sample and prints
// what each used.
func report(w io.Writer, o options, rs []daemon.Running) {
	before := map[int]sample{}
	for _, r := range rs {
		for _, pid := range treeOf(r.Keeper) {
			before[pid] = read(pid)
		}
	}
	time.Sleep(o.sample)
	cores := o.sample.Seconds() * 100 // ticks in one core's sample, in percent
	var total float64
	var totalRSS int64
	for _, r := range rs {
		fmt.Fprintf(w, "  %s:\n", r.Name)
		var sum float64
		var rss int64
		for _, pid := range treeOf(r.Keeper) {
			s := diff(before[pid], read(pid))
			pct := float64(s.ticks) / cores * 100
			sum, rss = sum+pct, rss+s.rss
			fmt.Fprintf(w, "    %-40s pid %-7d %6.2f %%  RSS %7.1f MiB\n", s.name, pid, pct, float64(s.rss)/(1<<20))
			if o.threads && pct > o.over {
				printThreads(w, s, cores)
			}
		}
		fmt.Fprintf(w, "    %-40s             %6.2f %%  RSS %7.1f MiB\n", "the daemon", sum, float64(rss)/(1<<20))
		total, totalRSS = total+sum, totalRSS+rss
	}
	fmt.Fprintf(w, "  all %d daemons: %.2f %% of a core, RSS %.1f MiB\n", len(rs), total, float64(totalRSS)/(1<<20))
}

// treeOf is pid and the processes under it.
func treeOf(pid int) []int { return append([]int{pid}, proc.Descendants(pid)...) }

// diff is what after used since before (zero ticks before: it started
// during the sample).
func diff(before, after sample) sample {
	after.ticks -= before.ticks
	for tid, t := range after.threads {
		t.ticks -= before.threads[tid].ticks
		after.threads[tid] = t
	}
	return after
}

// printThreads prints the threads of s that used CPU, the busiest first.
func printThreads(w io.Writer, s sample, cores float64) {
	tids := make([]int, 0, len(s.threads))
	for tid, t := range s.threads {
		if t.ticks > 0 {
			tids = append(tids, tid)
		}
	}
	sort.Slice(tids, func(i, j int) bool { return s.threads[tids[i]].ticks > s.threads[tids[j]].ticks })
	for _, tid := range tids {
		t := s.threads[tid]
		fmt.Fprintf(w, "      thread %-16s tid %-7d %6.2f %%\n", t.name, tid, float64(t.ticks)/cores*100)
	}
}

// read reads pid's command line, CPU ticks, RSS and threads' ticks.
func read(pid int) sample {
	s := sample{pid: pid, name: command(pid), threads: map[int]threadTicks{}}
	dir := "/proc/" + strconv.Itoa(pid)
	_, s.ticks = statTicks(dir + "/stat")
	s.rss = rssOf(pid)
	tasks, _ := os.ReadDir(dir + "/task")
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		name, ticks := statTicks(dir + "/task/" + t.Name() + "/stat")
		s.threads[tid] = threadTicks{name: name, ticks: ticks}
	}
	return s
}

// statTicks is the name and utime+stime of the /proc stat file at path.
func statTicks(path string) (string, int64) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", 0
	}
	open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
	if open < 0 || end < open {
		return "", 0
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 13 {
		return "", 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return string(b[open+1 : end]), u + st
}

// command is pid's command line, its executable's base name and the first
// arguments, at most 40 characters.
func command(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
	if len(args) == 0 || args[0] == "" {
		return "?"
	}
	args[0] = filepath.Base(args[0])
	s := strings.Join(slices.DeleteFunc(args, func(a string) bool { return strings.HasPrefix(a, "/") }), " ")
	if len(s) > 40 {
		s = s[:39] + "…"
	}
	return s
}

// rssOf is pid's RSS in bytes, or 0 where it can't be read.
func rssOf(pid int) int64 {
	m, _ := proc.MemoryOf(pid)
	return m.RSS
}
