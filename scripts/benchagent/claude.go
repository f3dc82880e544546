package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

const (
	claudePrompt1 = "Say hello"
	claudePrompt2 = "Say hello again"
)

type claudeOptions struct {
	benchkit.Options
	adapter string
	claude  string
}

// claudeAgent is one ACP claudeAgent command under test.
type claudeAgent struct {
	name string // column title
	argv []string
	// env is added to fakemessages.Env for a claudeRun.
	env []string
	// version describes the claudeAgent for the header.
	version string
	// shared, if set, is the one HOME and project of every run, as a
	// user's bridges have: acpbridge --shared's daemon is per HOME and its
	// spares per project.
	shared *benchkit.Shared
}

const claudeNameShared = "acpbridge-shared"

func claudeRun(args []string) int {
	var o claudeOptions
	fs := o.Flags("benchagent claude", "limit for each ACP request", "run only this agent (acpbridge, acpbridge-shared or zed-adapter)")
	fs.StringVar(&o.adapter, "adapter", filepath.Join(o.Root, ".tools/claude-agent-acp/node_modules/.bin/claude-agent-acp"),
		"Zed's claude-agent-acp `binary` (see scripts/install-tools.sh zed-claude-adapter)")
	defClaude := os.Getenv("ACPBRIDGE_CLAUDE")
	if defClaude == "" {
		defClaude = filepath.Join(o.Root, ".tools/claude/node_modules/.bin/claude")
	}
	fs.StringVar(&o.claude, "claude", defClaude, "the claude `binary` both agents run (default $ACPBRIDGE_CLAUDE, else the pinned .tools one)")
	if status, ok := o.Parse(fs, args); !ok {
		return status
	}

	claudePath, claudeReal, err := benchkit.Executable(o.claude)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchagent claude: no claude binary at %s (run scripts/install-tools.sh): %v\n", o.claude, err)
		return 1
	}
	claudeVersion := benchkit.CommandLine(fakeEnvOnly(), claudePath, "--version")

	bridge := claudeAgent{
		name:    "acpbridge",
		argv:    []string{o.Acpbridge, "--agent", "claude", "--state-dir", "STATE"},
		env:     []string{"ACPBRIDGE_CLAUDE=" + claudePath},
		version: benchkit.CommandLine(os.Environ(), o.Acpbridge, "--version"),
	}
	adapter := claudeAgent{
		name: "zed-adapter",
		argv: []string{o.adapter},
		env:  []string{"CLAUDE_CODE_EXECUTABLE=" + claudePath},
	}
	var adapterMissing string
	if _, err := os.Stat(o.adapter); err != nil {
		adapterMissing = fmt.Sprintf("the Zed adapter is not installed at %s (bash scripts/install-tools.sh zed-claude-adapter): %v", o.adapter, err)
	} else {
		adapter.version = "@agentclientprotocol/claude-agent-acp " + benchkit.PackageVersion(o.adapter, "..") +
			" (node " + benchkit.CommandLine(os.Environ(), "node", "--version") + ")"
	}

	srv := fakemessages.New(fakemessages.Directives())
	defer srv.Close()

	shared := bridge
	shared.name = claudeNameShared
	shared.argv = append(slices.Clone(bridge.argv), benchkit.SharedFlag)
	var agents []claudeAgent
	if o.Only == "" || o.Only == "acpbridge" {
		agents = append(agents, bridge)
	}
	if o.Only == "" || o.Only == claudeNameShared {
		sh, err := benchkit.NewShared("benchclaude-shared-", ".claude")
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchagent claude: %v\n", err)
			return 1
		}
		defer sh.Close()
		shared.shared = sh
		shared.env = append(slices.Clone(bridge.env), sh.Env())
		agents = append(agents, shared)
	}
	if (o.Only == "" || o.Only == "zed-adapter") && adapterMissing == "" {
		agents = append(agents, adapter)
	}

	fmt.Printf("claude CLI: %s (%s), run by both agents\n", claudeReal, claudeVersion)
	fmt.Printf("fake API:   %s (fakemessages.Directives)\n", srv.URL)
	fmt.Printf("acpbridge:  %s %s\n", o.Acpbridge, bridge.version)
	if adapterMissing == "" {
		fmt.Printf("adapter:    %s — %s, CLAUDE_CODE_EXECUTABLE=%s\n", o.adapter, adapter.version, claudePath)
	}
	if shared.shared != nil {
		fmt.Printf("%s: %s, every run with one HOME and project; its daemon started by a run not counted, as after a user's first bridge\n",
			claudeNameShared, strings.Join(shared.argv, " "))
	}
	fmt.Printf("runs:       %d per agent; prompts %q then %q\n\n", o.N, claudePrompt1, claudePrompt2)

	if shared.shared != nil {
		if r := claudeRunOnce(o, shared, srv, "/"+claudeNameShared+"-0", claudeReal); r.Err != nil {
			fmt.Fprintf(os.Stderr, "benchagent claude: the run that starts the shared daemon failed: %v\n", r.Err)
			return 1
		}
	}

	results := benchkit.Repeat(o.Options, agents, func(a claudeAgent) string { return a.name }, false,
		func(a claudeAgent, prefix string) benchkit.Result {
			return claudeRunOnce(o, a, srv, prefix, claudeReal)
		})
	claudeReport(results, adapterMissing, o.Only)
	// A failed acpbridge claudeRun is a bug to look at; the adapter is only the
	// anchor, so its failures are reported but don't fail the benchmark.
	for _, name := range []string{"acpbridge", claudeNameShared} {
		if len(benchkit.Succeeded(results[name])) != len(results[name]) {
			return 1
		}
	}
	return 0
}

// claudeRunOnce runs claudeAgent a once, its fake API requests under prefix, and
// returns its measurements.
func claudeRunOnce(o claudeOptions, a claudeAgent, srv *fakemessages.Server, prefix, claudeReal string) (res benchkit.Result) {
	dirs, cleanup, err := benchkit.MakeDirs(os.Stderr, "benchclaude-"+a.name+"-", a.name+prefix, o.Keep, ".claude")
	if err != nil {
		return benchkit.Result{Err: err}
	}
	defer cleanup()
	// Each run's own base URL, so that its requests can be counted; the
	// shared runs' one (the daemon's spares were started with it), whose
	// requests are counted from the run's start.
	before := 0
	if sh := a.shared; sh != nil {
		dirs.Home, dirs.Cwd, prefix, before = sh.Home, sh.Cwd, "/"+claudeNameShared, len(srv.Requests())
	}
	p, err := dirs.Start(a.argv, append(fakemessages.Env(srv.URL+prefix, dirs.Home), a.env...), claudeReal)
	if err != nil {
		return benchkit.Result{Err: err}
	}
	defer func() {
		if !p.Stop(benchkit.ExitGrace) && res.Err == nil {
			res.Err = fmt.Errorf("%s did not exit within %v of its stdin closing", a.name, benchkit.ExitGrace)
		}
		for _, r := range srv.Requests()[before:] {
			if r.Prefix == prefix {
				res.APIRequests++
				res.APISummary = append(res.APISummary, fmt.Sprintf("%s %q", r.Model, benchkit.FirstLine(r.LastText, 60)))
			}
		}
		p.Record(&res, os.Stderr, a.name+prefix, o.Verbose)
	}()
	s := benchkit.NewACPSession(p.Stdin, p.Stdout, "benchclaude", o.Verbose, claudeCheckAnswer)
	res.Times, res.Err = benchkit.Measure(s, p.Started, o.Timeout, o.Think, dirs.Cwd, [2]string{claudePrompt1, claudePrompt2})
	return res
}

// claudeCheckAnswer checks that text, the claudeAgent's text of a turn, has the
// fake's answer (its beginning, which does not depend on the prompt).
func claudeCheckAnswer(_, text string) error {
	if !strings.Contains(text, fakemessages.AnswerTextPrefix) {
		return fmt.Errorf("the agent's text was %q, want the fake's answer %q…", text, fakemessages.AnswerTextPrefix)
	}
	return nil
}

// claudeReport prints the table of results.
func claudeReport(results map[string][]benchkit.Result, adapterMissing, only string) {
	b, z := benchkit.Succeeded(results["acpbridge"]), benchkit.Succeeded(results["zed-adapter"])
	b = append(b, benchkit.Succeeded(results[claudeNameShared])...)
	if len(z) == 0 && only != "acpbridge" {
		why := adapterMissing
		if why == "" {
			why = fmt.Sprintf("none of its %d runs succeeded (errors above)", len(results["zed-adapter"]))
		}
		fmt.Printf("NOTE: no numbers for the anchor (Zed's claude-agent-acp): %s.\n      Measuring acpbridge alone; no ratios.\n\n", why)
	}
	if len(b) == 0 && only != "zed-adapter" {
		fmt.Printf("NOTE: no run of acpbridge succeeded (errors above); no ratios.\n\n")
	}
	names := []string{"acpbridge", claudeNameShared, "zed-adapter"}
	benchkit.Table[benchkit.Result]{
		Metrics: benchkit.Metrics(benchkit.Labels{NewSession: "session/new", Child: "claude", Matching: "claude", API: "Messages"}),
		Agents:  names,
		Results: results,
		Ratios: []benchkit.Ratio{{Title: "zed/acpbridge", Num: "zed-adapter", Den: "acpbridge"},
			{Title: "zed/shared", Num: "zed-adapter", Den: claudeNameShared}},
		Width: 24,
	}.Print(os.Stdout)
	for _, name := range names {
		if exes := benchkit.Distinct(results[name], func(r benchkit.Result) []string { return r.Exes }); len(exes) > 0 {
			fmt.Printf("\n%s process tree ran: %s", name, strings.Join(exes, ", "))
		}
	}
	fmt.Println()
}

// fakeEnvOnly is an environment that keeps the claude CLI from touching
// the network or the real HOME, for --version.
func fakeEnvOnly() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "DISABLE_AUTOUPDATER=1", "HOME=" + os.TempDir()}
}
