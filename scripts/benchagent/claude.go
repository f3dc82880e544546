package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

const (
	claudePrompt1 = "Say hello"
	claudePrompt2 = "Say hello again"
)

// nameZed is the column of Zed's adapter.
const nameZed = "zed-adapter"

// claudeOptions are benchagent claude's flags.
type claudeOptions struct {
	benchkit.Options
	adapter string
	claude  string
}

// claudeAgent is one ACP agent command under test.
type claudeAgent struct {
	benchkit.Agent
	// shared, if set, is the one HOME and project of every run, as a
	// user's bridges have: acpbridge's daemon is per HOME and its spares
	// per project.
	shared *benchkit.Shared
}

// claudeBench is a run of benchagent claude: the claude binary both
// agents run, the agents, and the fake Messages API.
type claudeBench struct {
	o                          claudeOptions
	claudePath, claudeReal     string
	claudeVersion              string
	cold, own, shared, adapter claudeAgent // acpbridge-cold, acpbridge-own, acpbridge
	adapterMissing             string      // why the adapter has no numbers, if it is not installed
	srv                        *fakemessages.Server
}

// claudeRun is benchagent claude; it returns the exit status.
func claudeRun(args []string) int {
	o, status, ok := parseClaudeOptions(args)
	if !ok {
		return status
	}
	b, err := newClaudeBench(o)
	if err != nil {
		o.Failf("%v", err)
		return 1
	}
	// A failed acpbridge run is a bug to look at; the adapter is only the
	// anchor, so its failures are reported but don't fail the benchmark.
	return benchkit.Run[claudeAgent, benchkit.Result](o.Options, b, false, benchkit.NameBridge, benchkit.NameCold, benchkit.NameOwn)
}

// parseClaudeOptions parses the flags; if the program is not to go on, ok
// is false and status is its exit status.
func parseClaudeOptions(args []string) (o claudeOptions, status int, ok bool) {
	fs := o.Flags("benchagent claude", "limit for each ACP request", "run only this agent (acpbridge, acpbridge-cold, acpbridge-own or zed-adapter)")
	fs.StringVar(&o.adapter, "adapter", filepath.Join(o.Root, ".tools/claude-agent-acp/node_modules/.bin/claude-agent-acp"),
		"Zed's claude-agent-acp `binary` (see scripts/install-tools.sh zed-claude-adapter)")
	defClaude := benchkit.EnvOr("ACPBRIDGE_CLAUDE", filepath.Join(o.Root, ".tools/claude/node_modules/.bin/claude"))
	fs.StringVar(&o.claude, "claude", defClaude, "the claude `binary` both agents run (default $ACPBRIDGE_CLAUDE, else the pinned .tools one)")
	status, ok = o.Parse(fs, args)
	return o, status, ok
}

// newClaudeBench finds the claude binary, describes the agents and
// starts the fake; with acpbridge selected, it makes its HOME.
func newClaudeBench(o claudeOptions) (*claudeBench, error) {
	claudePath, claudeReal, err := benchkit.Executable(o.claude)
	if err != nil {
		return nil, fmt.Errorf("no claude binary at %s (run scripts/install-tools.sh): %v", o.claude, err)
	}
	b := &claudeBench{o: o, claudePath: claudePath, claudeReal: claudeReal,
		claudeVersion: benchkit.CommandLine(fakeEnvOnly(), claudePath, "--version")}
	base := benchkit.Bridge(o.Options, "claude", "ACPBRIDGE_CLAUDE", claudePath)
	b.own = claudeAgent{Agent: base.Own(o.First)}
	b.adapter, b.adapterMissing = zedAdapter(o.adapter, claudePath)
	b.srv = fakemessages.New(fakemessages.Directives())
	for _, name := range []string{benchkit.NameBridge, benchkit.NameCold} {
		if !o.Selects(name) {
			continue
		}
		sh, err := benchkit.NewShared("benchclaude-"+name+"-", ".claude")
		if err != nil {
			b.Close()
			return nil, err
		}
		if name == benchkit.NameBridge {
			b.shared = claudeAgent{Agent: base.AsShared(sh), shared: sh}
		} else {
			b.cold = claudeAgent{Agent: base.Cold(), shared: sh}
		}
	}
	return b, nil
}

// zedAdapter is Zed's adapter at path, running the claude at claude, and
// why it has no numbers if it is not installed.
func zedAdapter(path, claude string) (a claudeAgent, missing string) {
	a.Name, a.Argv, a.Env = nameZed, []string{path}, []string{"CLAUDE_CODE_EXECUTABLE=" + claude}
	if _, err := os.Stat(path); err != nil {
		return a, fmt.Sprintf("the Zed adapter is not installed at %s (bash scripts/install-tools.sh zed-claude-adapter): %v", path, err)
	}
	a.Version = "@agentclientprotocol/claude-agent-acp " + benchkit.PackageVersion(path, "..") +
		" (node " + benchkit.CommandLine(os.Environ(), "node", "--version") + ")"
	return a, ""
}

// Warmups are acpbridge and acpbridge-cold, those that run.
func (b *claudeBench) Warmups() []claudeAgent {
	var ws []claudeAgent
	for _, a := range []claudeAgent{b.shared, b.cold} {
		if a.shared != nil {
			ws = append(ws, a)
		}
	}
	return ws
}

// Close stops the daemons and the fake.
func (b *claudeBench) Close() {
	b.shared.shared.Close()
	b.cold.shared.Close()
	b.srv.Close()
}

// Agents are the agents to run, in order.
func (b *claudeBench) Agents() []claudeAgent {
	agents := b.Warmups()
	if b.o.Selects(benchkit.NameOwn) {
		agents = append(agents, b.own)
	}
	if b.o.Selects(nameZed) && b.adapterMissing == "" {
		agents = append(agents, b.adapter)
	}
	return agents
}

// Header prints what runs against what.
func (b *claudeBench) Header() {
	fmt.Printf("claude CLI: %s (%s), run by both agents\n", b.claudeReal, b.claudeVersion)
	fmt.Printf("fake API:   %s (fakemessages.Directives)\n", b.srv.URL)
	fmt.Printf("acpbridge:  %s %s\n", b.o.Acpbridge, b.own.Version)
	if b.adapterMissing == "" {
		fmt.Printf("adapter:    %s — %s, CLAUDE_CODE_EXECUTABLE=%s\n", b.o.adapter, b.adapter.Version, b.claudePath)
	}
	fmt.Printf("%s: %s (default flags), every run with one HOME and project, its daemon started by a run not counted "+
		"and settled before each run; %s: the same with no daemon running, each run's started by it and stopped after it; %s: %s\n",
		benchkit.NameBridge, strings.Join(b.shared.Argv, " "), benchkit.NameCold, benchkit.NameOwn, strings.Join(b.own.Argv, " "))
	fmt.Printf("runs:       %d per agent; prompts %q then %q\n\n", b.o.N, claudePrompt1, claudePrompt2)
}

// RunOnce runs agent a once, its fake API requests under prefix, and
// returns its measurements.
func (b *claudeBench) RunOnce(a claudeAgent, prefix string) (res benchkit.Result) {
	dirs, cleanup, err := benchkit.MakeDirs(os.Stderr, "benchclaude-"+a.Name+"-", a.Name+prefix, b.o.Keep, ".claude")
	if err != nil {
		return benchkit.Result{Err: err}
	}
	defer cleanup()
	// Each run's own base URL, so that its requests can be counted; the
	// shared runs' one (the daemon's spares were started with it), whose
	// requests are counted from the run's start.
	before := 0
	if sh := a.shared; sh != nil {
		sh.Settle()
		dirs.Home, dirs.Cwd, prefix, before = sh.Home, sh.Cwd, "/"+a.Name, len(b.srv.Requests())
	}
	p, err := dirs.Start(a.Argv, append(fakemessages.Env(b.srv.URL+prefix, dirs.Home), a.Env...), b.claudeReal)
	if err != nil {
		return benchkit.Result{Err: err}
	}
	s := benchkit.NewACPSession(p.Stdin, p.Stdout, "benchclaude", b.o.Verbose, claudeCheckAnswer)
	defer func() {
		p.Finish(&res, a.Agent, s, a.Name+prefix, b.o.Verbose)
		countClaudeRequests(&res, b.srv.Requests()[before:], prefix)
	}()
	res.Times, res.Err = benchkit.Measure(s, p.Started, b.o.Timeout, b.o.Think, dirs.Cwd, [2]string{claudePrompt1, claudePrompt2})
	return res
}

// countClaudeRequests notes in res the fake's requests of the run, those
// under prefix.
func countClaudeRequests(res *benchkit.Result, reqs []fakemessages.Request, prefix string) {
	for _, r := range reqs {
		if r.Prefix == prefix {
			res.APIRequests++
			res.APISummary = append(res.APISummary, fmt.Sprintf("%s %q", r.Model, benchkit.FirstLine(r.LastText, 60)))
		}
	}
}

// claudeCheckAnswer checks that text, the agent's text of a turn, has the
// fake's answer (its beginning, which does not depend on the prompt).
func claudeCheckAnswer(_, text string) error {
	if !strings.Contains(text, fakemessages.AnswerTextPrefix) {
		return fmt.Errorf("the agent's text was %q, want the fake's answer %q…", text, fakemessages.AnswerTextPrefix)
	}
	return nil
}

// Report prints the notes, the table of results and what each agent's
// process tree ran.
func (b *claudeBench) Report(results map[string][]benchkit.Result) {
	b.noteMissing(results)
	names := []string{benchkit.NameBridge, benchkit.NameCold, benchkit.NameOwn, nameZed}
	benchkit.Table[benchkit.Result]{
		Metrics: benchkit.Metrics(benchkit.Labels{NewSession: "session/new", Child: "claude", Matching: "claude", API: "Messages"}),
		Agents:  names,
		Results: results,
		Ratios: []benchkit.Ratio{{Title: "zed/acpbridge", Num: nameZed, Den: benchkit.NameBridge},
			{Title: "zed/cold", Num: nameZed, Den: benchkit.NameCold}, {Title: "zed/own", Num: nameZed, Den: benchkit.NameOwn}},
		Width: 16,
	}.Print(os.Stdout)
	b.shared.shared.PrintDaemons(os.Stdout)
	for _, name := range names {
		if exes := benchkit.Distinct(results[name], func(r benchkit.Result) []string { return r.Exes }); len(exes) > 0 {
			fmt.Printf("\n%s process tree ran: %s", name, strings.Join(exes, ", "))
		}
	}
	fmt.Println()
}

// noteMissing says which side of the comparison has no numbers, and why.
func (b *claudeBench) noteMissing(results map[string][]benchkit.Result) {
	var bridge []benchkit.Result
	for _, name := range []string{benchkit.NameBridge, benchkit.NameCold, benchkit.NameOwn} {
		bridge = append(bridge, benchkit.Succeeded(results[name])...)
	}
	if len(benchkit.Succeeded(results[nameZed])) == 0 && (b.o.Only == "" || b.o.Only == nameZed) {
		why := b.adapterMissing
		if why == "" {
			why = fmt.Sprintf("none of its %d runs succeeded (errors above)", len(results[nameZed]))
		}
		fmt.Printf("NOTE: no numbers for the anchor (Zed's claude-agent-acp): %s.\n      Measuring acpbridge alone; no ratios.\n\n", why)
	}
	if len(bridge) == 0 && b.o.Only != nameZed {
		fmt.Printf("NOTE: no run of acpbridge succeeded (errors above); no ratios.\n\n")
	}
}

// fakeEnvOnly is an environment that keeps the claude CLI from touching
// the network or the real HOME, for --version.
func fakeEnvOnly() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "DISABLE_AUTOUPDATER=1", "HOME=" + os.TempDir()}
}
