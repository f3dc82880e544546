// Command benchclaude compares acpbridge with Zed's Claude ACP adapter
// (npm @agentclientprotocol/claude-agent-acp, the "CL" anchor of
// shared/docs/anchors.md) on the same Claude Code CLI and the same fake
// model (translators/claude/fakeapi), offline.
//
// Usage:
//
//	go run ./scripts/benchclaude [flags]
//	bash scripts/bench-claude.sh [flags]
//
// It starts one fake Messages API server, then runs each agent N times
// (-n). Every run gets a fresh temporary HOME (and CLAUDE_CONFIG_DIR under
// it), working directory and, for acpbridge, state directory, and the
// environment of fakeapi.Env with its own URL prefix. Both agents run the
// same claude binary: acpbridge through $ACPBRIDGE_CLAUDE, the adapter
// through $CLAUDE_CODE_EXECUTABLE (which the adapter passes to the Claude
// Agent SDK as pathToClaudeCodeExecutable instead of the CLI the SDK
// bundles). A run, over ACP with acp-go-sdk's ClientSideConnection:
//
//	process start → initialize response
//	session/new
//	session/prompt "Say hello"        right after session/new: turn 1, cold
//	session/prompt "Say hello again"  in the same session: turn 2, warm
//
// while a sampler reads /proc every 20ms for the peak resident memory of
// the agent's whole process tree (the agent and its claude children) and
// of the agent process alone. Then it closes the agent's stdin, gives it a
// few seconds to exit, and kills whatever of its process tree is left
// (every process group it saw). It prints the medians per agent and the
// ratio adapter/acpbridge.
//
// If the adapter is missing or no run of it succeeds, it says why and
// prints acpbridge's numbers alone. It exits 1 if any acpbridge run failed
// (the adapter's failures are printed but do not change the exit status),
// 2 for a usage error.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/translators/claude/fakeapi"
	"github.com/coder/acp-go-sdk"
)

const (
	sampleEvery = 20 * time.Millisecond
	exitGrace   = 5 * time.Second
	prompt1     = "Say hello"
	prompt2     = "Say hello again"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

type options struct {
	n         int
	acpbridge string
	adapter   string
	claude    string
	timeout   time.Duration
	verbose   bool
	keep      bool
	only      string
}

// agent is one ACP agent command under test.
type agent struct {
	name string // column title
	argv []string
	// env is added to fakeapi.Env for a run with that temporary dir.
	env func(dir string) []string
	// version describes the agent for the header.
	version string
}

// result is one run's measurements.
type result struct {
	init, newSession, turn1, turn2 time.Duration
	peakTree, peakPSS, peakOwn     int64 // KiB
	apiRequests                    int
	apiSummary                     []string // model and last text of each API request, for -v
	maxClaude                      int      // most claude processes alive at once in the tree
	exes                           []string // distinct executables in the process tree
	err                            error
	stderr                         string // the agent's stderr, when it failed
}

func run(args []string) int {
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchclaude:", err)
		return 2
	}
	var o options
	fs := flag.NewFlagSet("benchclaude", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 5, "runs per agent")
	fs.StringVar(&o.acpbridge, "acpbridge", filepath.Join(root, "bin/acpbridge"), "the acpbridge `binary`")
	fs.StringVar(&o.adapter, "adapter", filepath.Join(root, ".tools/claude-agent-acp/node_modules/.bin/claude-agent-acp"),
		"Zed's claude-agent-acp `binary` (see scripts/install-tools.sh zed-claude-adapter)")
	defClaude := os.Getenv("ACPBRIDGE_CLAUDE")
	if defClaude == "" {
		defClaude = filepath.Join(root, ".tools/claude/node_modules/.bin/claude")
	}
	fs.StringVar(&o.claude, "claude", defClaude, "the claude `binary` both agents run (default $ACPBRIDGE_CLAUDE, else the pinned .tools one)")
	fs.DurationVar(&o.timeout, "timeout", 120*time.Second, "limit for each ACP request")
	fs.BoolVar(&o.verbose, "v", false, "print each run and pass the agents' stderr through")
	fs.BoolVar(&o.keep, "keep", false, "keep each run's temporary directory")
	fs.StringVar(&o.only, "only", "", "run only this agent (acpbridge or zed-adapter)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.n < 1 {
		fmt.Fprintln(os.Stderr, "benchclaude: -n must be at least 1")
		return 2
	}

	claudePath, err := filepath.Abs(o.claude)
	if err == nil {
		_, err = os.Stat(claudePath)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchclaude: no claude binary at %s (run scripts/install-tools.sh): %v\n", o.claude, err)
		return 1
	}
	claudeVersion := commandLine(fakeEnvOnly(), claudePath, "--version")
	claudeReal, _ := filepath.EvalSymlinks(claudePath)

	bridge := agent{
		name: "acpbridge",
		env:  func(string) []string { return []string{"ACPBRIDGE_CLAUDE=" + claudePath} },
	}
	bridge.argv = []string{o.acpbridge, "--agent", "claude", "--state-dir", "STATE"}
	bridge.version = commandLine(os.Environ(), o.acpbridge, "--version")

	adapter := agent{
		name: "zed-adapter",
		argv: []string{o.adapter},
		env:  func(string) []string { return []string{"CLAUDE_CODE_EXECUTABLE=" + claudePath} },
	}
	var adapterMissing string
	if _, err := os.Stat(o.adapter); err != nil {
		adapterMissing = fmt.Sprintf("the Zed adapter is not installed at %s (bash scripts/install-tools.sh zed-claude-adapter): %v", o.adapter, err)
	} else {
		adapter.version = "@agentclientprotocol/claude-agent-acp " + adapterVersion(o.adapter) +
			" (node " + commandLine(os.Environ(), "node", "--version") + ")"
	}

	var agents []agent
	if o.only != "zed-adapter" {
		agents = append(agents, bridge)
	}
	if o.only != "acpbridge" && adapterMissing == "" {
		agents = append(agents, adapter)
	}

	srv := fakeapi.New(fakeapi.Directives())
	defer srv.Close()

	fmt.Printf("claude CLI: %s (%s), run by both agents\n", claudeReal, claudeVersion)
	fmt.Printf("fake API:   %s (fakeapi.Directives)\n", srv.URL)
	fmt.Printf("acpbridge:  %s %s\n", o.acpbridge, bridge.version)
	if adapterMissing == "" {
		fmt.Printf("adapter:    %s — %s, CLAUDE_CODE_EXECUTABLE=%s\n", o.adapter, adapter.version, claudePath)
	}
	fmt.Printf("runs:       %d per agent; prompts %q then %q\n\n", o.n, prompt1, prompt2)

	results := map[string][]result{}
	var seenAll []procID
	for _, a := range agents {
		for i := range o.n {
			prefix := fmt.Sprintf("/%s-%d", a.name, i+1)
			r, seen := runOnce(o, a, srv, prefix, claudeReal)
			seenAll = append(seenAll, seen...)
			results[a.name] = append(results[a.name], r)
			if r.err != nil {
				fmt.Fprintf(os.Stderr, "%s run %d: FAILED: %v\n", a.name, i+1, r.err)
				if r.stderr != "" {
					fmt.Fprintf(os.Stderr, "  its stderr (last lines):\n%s\n", indent(tail(r.stderr, 25), "    "))
				}
				continue
			}
			if o.verbose {
				fmt.Fprintf(os.Stderr, "%s run %d: init %v, new %v, turn1 %v, turn2 %v, tree %d KiB, own %d KiB, %d API requests, exes %v\n",
					a.name, i+1, r.init.Round(time.Microsecond), r.newSession.Round(time.Microsecond),
					r.turn1.Round(time.Microsecond), r.turn2.Round(time.Microsecond), r.peakTree, r.peakOwn, r.apiRequests, r.exes)
				fmt.Fprintf(os.Stderr, "  API requests: %s\n", strings.Join(r.apiSummary, "; "))
			}
		}
	}

	if left := alive(seenAll); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "benchclaude: WARNING: processes still alive after the runs: %v\n", left)
	}

	report(results, adapterMissing, o.only)
	// A failed acpbridge run is a bug to look at; the adapter is only the
	// anchor, so its failures are reported but don't fail the benchmark.
	if len(okRuns(results["acpbridge"])) != len(results["acpbridge"]) {
		return 1
	}
	return 0
}

// runOnce runs agent a once and returns its measurements and every
// process it saw in the agent's tree.
func runOnce(o options, a agent, srv *fakeapi.Server, prefix, claudeReal string) (res result, seen []procID) {
	dir, err := os.MkdirTemp("", "benchclaude-"+a.name+"-")
	if err != nil {
		return result{err: err}, nil
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "%s%s: temporary directory %s\n", a.name, prefix, dir)
	} else {
		defer os.RemoveAll(dir)
	}
	home, cwd, state := filepath.Join(dir, "home"), filepath.Join(dir, "project"), filepath.Join(dir, "state")
	for _, d := range []string{filepath.Join(home, ".claude"), cwd, state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return result{err: err}, nil
		}
	}
	argv := slices.Clone(a.argv)
	for i, s := range argv {
		if s == "STATE" {
			argv[i] = state
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = cwd
	cmd.Env = append(fakeapi.Env(srv.URL+prefix, home), a.env(dir)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return result{err: err}, nil
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{err: err}, nil
	}
	// A file, not a pipe: Wait must not wait for the claude children,
	// which may inherit it.
	stderrPath := filepath.Join(dir, "stderr.log")
	stderrFile, err := os.Create(stderrPath)
	if err != nil {
		return result{err: err}, nil
	}
	defer stderrFile.Close()
	cmd.Stderr = stderrFile

	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{err: err}, nil
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	smp := startSampler(cmd.Process.Pid, claudeReal)

	defer func() {
		// Stop: close stdin, wait a little, then kill every group seen.
		smp.stop()
		stdin.Close()
		select {
		case <-waited:
		case <-time.After(exitGrace):
			if res.err == nil {
				res.err = fmt.Errorf("%s did not exit within %v of its stdin closing", a.name, exitGrace)
			}
		}
		seen = smp.seenProcs()
		killAll(cmd.Process.Pid, seen)
		select {
		case <-waited:
		case <-time.After(exitGrace):
		}
		// The claude children may take a moment to go after SIGKILL.
		deadline := time.Now().Add(exitGrace)
		for len(alive(seen)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		res.peakTree, res.peakPSS, res.peakOwn, res.exes = smp.peaks()
		for _, r := range srv.Requests() {
			if r.Prefix == prefix {
				res.apiRequests++
				res.apiSummary = append(res.apiSummary, fmt.Sprintf("%s %q", r.Model, firstLine(r.LastText, 60)))
			}
		}
		res.maxClaude = smp.maxMatching
		if o.verbose {
			fmt.Fprintf(os.Stderr, "  %s%s process tree:\n%s", a.name, prefix, smp.lives())
		}
		if b, err := os.ReadFile(stderrPath); err == nil {
			if res.err != nil {
				res.stderr = string(b)
			}
			if o.verbose && len(b) > 0 {
				fmt.Fprintf(os.Stderr, "[%s%s stderr]\n%s\n", a.name, prefix, indent(strings.TrimRight(string(b), "\n"), "  "))
			}
		}
	}()

	cl := &client{}
	conn := acp.NewClientSideConnection(cl, stdin, stdout)
	if o.verbose {
		conn.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	} else {
		conn.SetLogger(slog.New(slog.DiscardHandler))
	}
	ctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), o.timeout)
	}

	c, cancel := ctx()
	_, err = conn.Initialize(c, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo: &acp.Implementation{Name: "benchclaude", Version: "0"}})
	cancel()
	if err != nil {
		return result{err: fmt.Errorf("initialize: %w", err)}, nil
	}
	res.init = time.Since(start)

	c, cancel = ctx()
	t := time.Now()
	s, err := conn.NewSession(c, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	cancel()
	if err != nil {
		res.err = fmt.Errorf("session/new: %w", err)
		return res, nil
	}
	res.newSession = time.Since(t)

	turn := func(text string) (time.Duration, error) {
		cl.reset()
		c, cancel := ctx()
		defer cancel()
		t := time.Now()
		r, err := conn.Prompt(c, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
		d := time.Since(t)
		if err != nil {
			return d, fmt.Errorf("session/prompt %q: %w", text, err)
		}
		if r.StopReason != acp.StopReasonEndTurn {
			return d, fmt.Errorf("session/prompt %q: stopReason %q, want end_turn", text, r.StopReason)
		}
		// The notifications before the response are delivered before it;
		// check that the fake's answer came through.
		if got := cl.text(); !strings.Contains(got, fakeapi.AnswerTextPrefix) {
			return d, fmt.Errorf("session/prompt %q: the agent's text was %q, want the fake's answer %q…", text, got, fakeapi.AnswerTextPrefix)
		}
		return d, nil
	}
	if res.turn1, err = turn(prompt1); err != nil {
		res.err = err
		return res, nil
	}
	if res.turn2, err = turn(prompt2); err != nil {
		res.err = err
		return res, nil
	}
	return res, nil
}

// client is the ACP client side: it keeps the agent's message text and
// allows every permission request.
type client struct {
	mu  sync.Mutex
	buf strings.Builder
}

var _ acp.Client = (*client)(nil)

func (c *client) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Reset()
}

func (c *client) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if u := n.Update.AgentMessageChunk; u != nil && u.Content.Text != nil {
		c.mu.Lock()
		c.buf.WriteString(u.Content.Text.Text)
		c.mu.Unlock()
	}
	return nil
}

func (c *client) RequestPermission(_ context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	for _, kind := range []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways} {
		for _, opt := range r.Options {
			if opt.Kind == kind {
				return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(opt.OptionId)}, nil
			}
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

func (c *client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (c *client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (c *client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// procID names a process across pid reuse: its pid, its start time (in
// clock ticks since boot) and its process group.
type procID struct {
	pid, pgid int
	start     uint64
}

// procStat is the part of /proc/PID/stat the sampler needs.
type procStat struct {
	ppid, pgid int
	start      uint64
}

func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state): ppid is field 4, pgrp 5, starttime 22.
	if len(f) < 20 {
		return procStat{}, false
	}
	ppid, _ := strconv.Atoi(f[1])
	pgid, _ := strconv.Atoi(f[2])
	start, _ := strconv.ParseUint(f[19], 10, 64)
	return procStat{ppid, pgid, start}, true
}

// tree returns root and its descendants, from one scan of /proc.
func tree(root int) map[int]procStat {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	children := map[int][]int{}
	stats := map[int]procStat{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, ok := readStat(pid)
		if !ok {
			continue
		}
		stats[pid] = st
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
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// pssKiB is the Pss of pid's smaps_rollup, 0 if it is gone.
func pssKiB(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Pss:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}

// sampler follows a process tree's resident memory every sampleEvery.
type sampler struct {
	root     int
	match    string // the claude executable, to count its processes
	quit     chan struct{}
	finished chan struct{}

	mu       sync.Mutex
	peakTree int64
	peakOwn  int64
	peakPSS  int64
	seen     map[int]procID
	exes     map[string]bool
	life     map[int]*procLife
	t0       time.Time
	// maxMatching is the most processes running match at once.
	maxMatching int
}

func startSampler(root int, match string) *sampler {
	s := &sampler{root: root, match: match, quit: make(chan struct{}), finished: make(chan struct{}),
		seen: map[int]procID{}, exes: map[string]bool{},
		life: map[int]*procLife{}, t0: time.Now()}
	go s.loop()
	return s
}

func (s *sampler) loop() {
	defer close(s.finished)
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		s.sample()
		select {
		case <-s.quit:
			return
		case <-t.C:
		}
	}
}

func (s *sampler) sample() {
	procs := tree(s.root)
	exes := map[int]string{}
	for pid := range procs {
		// Read exe every time: a child seen between fork and exec
		// still shows its parent's.
		exes[pid], _ = os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	}
	var rss, pss, own int64
	claudes := 0
	now := time.Since(s.t0)
	for pid, st := range procs {
		// A child that runs its parent's executable is (in this
		// benchmark) a fork or vfork not yet exec'd: its pages are its
		// parent's, so leave it out of the sums.
		forked := pid != s.root && exes[pid] != "" && exes[pid] == exes[st.ppid]
		r := rssKiB(pid)
		if !forked {
			rss += r
			pss += pssKiB(pid)
		}
		if pid == s.root {
			own = r
		}
		if !forked && exes[pid] == s.match && r > 0 {
			claudes++
		}
		s.mu.Lock()
		if old, ok := s.seen[pid]; !ok || old.start != st.start {
			s.seen[pid] = procID{pid: pid, pgid: st.pgid, start: st.start}
			s.life[pid] = &procLife{pid: pid, ppid: st.ppid, pgid: st.pgid, first: now}
		}
		if exes[pid] != "" {
			s.exes[exes[pid]] = true
		}
		l := s.life[pid]
		l.last = now
		if r > l.peak {
			l.peak = r
		}
		if cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline"); err == nil && len(cmdline) > 0 {
			l.cmdline = strings.ReplaceAll(strings.TrimRight(string(cmdline), "\x00"), "\x00", " ")
		}
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.peakTree = max(s.peakTree, rss)
	s.peakPSS = max(s.peakPSS, pss)
	s.peakOwn = max(s.peakOwn, own)
	s.maxMatching = max(s.maxMatching, claudes)
	s.mu.Unlock()
}

// procLife is what the sampler saw of one process.
type procLife struct {
	pid, ppid, pgid int
	cmdline         string
	first, last     time.Duration // since the agent started
	peak            int64         // KiB
}

func (s *sampler) lives() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ls []*procLife
	for _, l := range s.life {
		ls = append(ls, l)
	}
	slices.SortFunc(ls, func(a, b *procLife) int { return int(a.first - b.first) })
	var b strings.Builder
	for _, l := range ls {
		fmt.Fprintf(&b, "    pid %d ppid %d pgid %d, seen %v–%v, peak %d KiB: %s\n", l.pid, l.ppid, l.pgid,
			l.first.Round(time.Millisecond), l.last.Round(time.Millisecond), l.peak, firstLine(l.cmdline, 160))
	}
	return b.String()
}

// stop takes a last sample and stops the sampler.
func (s *sampler) stop() {
	select {
	case <-s.quit:
		return
	default:
	}
	close(s.quit)
	<-s.finished
	s.sample()
}

func (s *sampler) seenProcs() []procID {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]procID, 0, len(s.seen))
	for _, p := range s.seen {
		out = append(out, p)
	}
	return out
}

func (s *sampler) peaks() (tree, pss, own int64, exes []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for e := range s.exes {
		exes = append(exes, e)
	}
	slices.Sort(exes)
	return s.peakTree, s.peakPSS, s.peakOwn, exes
}

// alive is the processes of ps that still run as themselves (same start
// time), zombies excluded.
func alive(ps []procID) []int {
	var out []int
	for _, p := range ps {
		st, ok := readStat(p.pid)
		if !ok || st.start != p.start {
			continue
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p.pid) + "/stat"); err == nil {
			if i := bytes.LastIndexByte(b, ')'); i >= 0 && len(b) > i+2 && b[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, p.pid)
	}
	return out
}

// killAll SIGKILLs the agent's process group, the process group of every
// process seen in its tree, and each of those processes still running as
// itself.
func killAll(root int, seen []procID) {
	groups := map[int]bool{root: true}
	for _, p := range seen {
		if p.pgid > 1 && p.pgid != syscall.Getpgrp() {
			groups[p.pgid] = true
		}
	}
	for g := range groups {
		_ = syscall.Kill(-g, syscall.SIGKILL)
	}
	for _, pid := range alive(seen) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// --- the report ---

type metric struct {
	name string
	unit string // "ms" or "MiB" or ""
	get  func(result) float64
}

var metrics = []metric{
	{"process start → initialize response", "ms", func(r result) float64 { return ms(r.init) }},
	{"session/new", "ms", func(r result) float64 { return ms(r.newSession) }},
	{"turn 1 (cold, right after session/new)", "ms", func(r result) float64 { return ms(r.turn1) }},
	{"turn 2 (warm, same session)", "ms", func(r result) float64 { return ms(r.turn2) }},
	{"session/new + turn 1", "ms", func(r result) float64 { return ms(r.newSession + r.turn1) }},
	{"start → end of turn 1 (init+new+turn1)", "ms", func(r result) float64 { return ms(r.init + r.newSession + r.turn1) }},
	{"peak RSS, process tree (agent + claude)", "MiB", func(r result) float64 { return float64(r.peakTree) / 1024 }},
	{"peak PSS, process tree (shared pages split)", "MiB", func(r result) float64 { return float64(r.peakPSS) / 1024 }},
	{"peak RSS, agent process alone", "MiB", func(r result) float64 { return float64(r.peakOwn) / 1024 }},
	{"peak RSS, tree minus agent (≈ claude)", "MiB", func(r result) float64 { return float64(r.peakTree-r.peakOwn) / 1024 }},
	{"claude processes at once (max)", "", func(r result) float64 { return float64(r.maxClaude) }},
	{"Messages API requests per run", "", func(r result) float64 { return float64(r.apiRequests) }},
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func okRuns(rs []result) []result {
	var out []result
	for _, r := range rs {
		if r.err == nil {
			out = append(out, r)
		}
	}
	return out
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func report(results map[string][]result, adapterMissing, only string) {
	b, z := okRuns(results["acpbridge"]), okRuns(results["zed-adapter"])
	haveB, haveZ := len(b) > 0, len(z) > 0
	if !haveZ && only != "acpbridge" {
		why := adapterMissing
		if why == "" {
			why = fmt.Sprintf("none of its %d runs succeeded (errors above)", len(results["zed-adapter"]))
		}
		fmt.Printf("NOTE: no numbers for the anchor (Zed's claude-agent-acp): %s.\n      Measuring acpbridge alone; no ratios.\n\n", why)
	}
	if !haveB && only != "zed-adapter" {
		fmt.Printf("NOTE: no run of acpbridge succeeded (errors above); no ratios.\n\n")
	}
	fmt.Printf("%-42s %6s %24s %24s %14s\n", "metric (median; [min–max])", "unit",
		fmt.Sprintf("acpbridge (n=%d)", len(b)), fmt.Sprintf("zed-adapter (n=%d)", len(z)), "zed/acpbridge")
	fmt.Println(strings.Repeat("-", 42+1+6+1+24+1+24+1+14))
	for _, m := range metrics {
		col := func(rs []result) (string, float64) {
			if len(rs) == 0 {
				return "—", 0
			}
			var xs []float64
			for _, r := range rs {
				xs = append(xs, m.get(r))
			}
			med := median(xs)
			return fmt.Sprintf("%s [%s–%s]", num(med), num(slices.Min(xs)), num(slices.Max(xs))), med
		}
		bs, bm := col(b)
		zs, zm := col(z)
		ratio := "—"
		if haveB && haveZ && bm > 0 {
			ratio = fmt.Sprintf("%.2fx", zm/bm)
		}
		fmt.Printf("%-42s %6s %24s %24s %14s\n", m.name, m.unit, bs, zs, ratio)
	}
	for _, name := range []string{"acpbridge", "zed-adapter"} {
		exes := map[string]bool{}
		for _, r := range results[name] {
			for _, e := range r.exes {
				exes[e] = true
			}
		}
		if len(exes) > 0 {
			fmt.Printf("\n%s process tree ran: %s", name, strings.Join(slices.Sorted(maps.Keys(exes)), ", "))
		}
	}
	fmt.Println()
}

func num(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

// --- helpers ---

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/acpbridge/acpbridge")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("not inside the acpbridge repository (from %s)", dir)
		}
	}
}

// fakeEnvOnly is an environment that keeps the claude CLI from touching
// the network or the real HOME, for --version.
func fakeEnvOnly() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "DISABLE_AUTOUPDATER=1", "HOME=" + os.TempDir()}
}

// commandLine runs argv and returns the first line of its output.
func commandLine(env []string, argv ...string) string {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// adapterVersion reads the version from the adapter's package.json.
func adapterVersion(bin string) string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "?"
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(real), "..", "package.json"))
	if err != nil {
		return "?"
	}
	var p struct{ Version string }
	if json.Unmarshal(b, &p) != nil {
		return "?"
	}
	return p.Version
}

func firstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}
