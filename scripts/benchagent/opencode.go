package main

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/fakechat"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

const (
	opencodePrompt1 = "hello there"
	opencodePrompt2 = "hello again"
)

// The agents' names, which are also the table's column titles and -only's
// values.
const (
	opencodeNameBridge = "acpbridge"
	opencodeNameShared = "acpbridge-shared"
	nameAnchor         = "opencode-acp"
)

var opencodeAgentOrder = []string{opencodeNameBridge, opencodeNameShared, nameAnchor}

type opencodeOptions struct {
	benchkit.Options
	opencode string
	pssEvery int
}

// opencodeAgent is one ACP opencodeAgent command under test.
type opencodeAgent struct {
	name string // column title
	// argv is the command; "CWD" in it is replaced by the opencodeRun's working
	// directory (and "STATE" by its state directory, by Dirs.Start).
	argv []string
	// env is added to fakechat.Env for a opencodeRun.
	env []string
	// version describes the opencodeAgent for the header.
	version string
	// anchor marks OpenCode's own adapter: not exiting when its stdin
	// closes is noted (it is killed), not a failed opencodeRun.
	anchor bool
	// shared, if set, is the one HOME of every run, as a user's bridges
	// have: acpbridge --shared's daemon is per HOME. Its model requests
	// are under opencodeSharedPrefix.
	shared *benchkit.Shared
}

// opencodeSharedPrefix is where acpbridge-shared's model requests go.
const opencodeSharedPrefix = "/" + opencodeNameShared

// opencodeResult is one opencodeRun's measurements.
type opencodeResult struct {
	benchkit.Result
	titles     int      // its model requests that were title requests
	userAgents []string // the distinct user-opencodeAgent headers of its model requests
	sessions   int      // the distinct x-session-id headers of its model requests
	lingered   bool     // an anchor that did not exit within ExitGrace of its stdin closing
}

func opencodeRun(args []string) int {
	var o opencodeOptions
	fs := o.Flags("benchagent opencode", "limit for each ACP request",
		"run only this agent ("+strings.Join(opencodeAgentOrder, " or ")+")")
	defOpencode := os.Getenv("ACPBRIDGE_OPENCODE")
	if defOpencode == "" {
		defOpencode = fakechat.InstalledBin(o.Root)
	}
	fs.StringVar(&o.opencode, "opencode", defOpencode,
		"the native opencode `binary` both agents run (default $ACPBRIDGE_OPENCODE, else the pinned .tools one)")
	// Reading smaps_rollup of an opencode process (≈5,000 mappings)
	// takes ≈12 ms: every 20 ms sample it more than doubled both agents'
	// times.
	fs.IntVar(&o.pssEvery, "pss-every", 10, "read the processes' PSS every `n`th sample of 20ms (it slows a large process down)")
	if status, ok := o.Parse(fs, args); !ok {
		return status
	}
	benchkit.PSSEvery = o.pssEvery
	if o.Only != "" && !slices.Contains(opencodeAgentOrder, o.Only) {
		fmt.Fprintf(os.Stderr, "benchagent opencode: -only: unknown agent %q (%s)\n", o.Only, strings.Join(opencodeAgentOrder, ", "))
		return 2
	}

	ocPath, ocReal, err := benchkit.Executable(o.opencode)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchagent opencode: no opencode binary at %q (run scripts/install-tools.sh opencode): %v\n", o.opencode, err)
		return 1
	}
	ocVersion := opencodeVersionOf(ocPath)

	bridge := opencodeAgent{
		name:    opencodeNameBridge,
		argv:    []string{o.Acpbridge, "--agent", "opencode", "--state-dir", "STATE"},
		env:     []string{"ACPBRIDGE_OPENCODE=" + ocPath},
		version: benchkit.CommandLine(os.Environ(), o.Acpbridge, "--version"),
	}
	anchor := opencodeAgent{
		name:    nameAnchor,
		argv:    []string{ocPath, "acp", "--cwd", "CWD"},
		version: "opencode " + ocVersion,
		anchor:  true,
	}
	srv := fakechat.New(fakechat.Directives())
	defer srv.Close()

	shared := bridge
	shared.name = opencodeNameShared
	shared.argv = append(slices.Clone(bridge.argv), benchkit.SharedFlag)
	if o.Only == "" || o.Only == opencodeNameShared {
		sh, err := benchkit.NewShared("benchopencode-shared-")
		if err == nil {
			err = fakechat.WriteHome(sh.Home, srv.URL+opencodeSharedPrefix)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchagent opencode: %v\n", err)
			return 1
		}
		defer sh.Close()
		shared.shared = sh
		shared.env = append(slices.Clone(bridge.env), sh.Env())
	}
	var agents []opencodeAgent
	for _, a := range []opencodeAgent{bridge, shared, anchor} {
		if o.Only == "" || o.Only == a.name {
			agents = append(agents, a)
		}
	}

	fmt.Printf("opencode:      %s (%s), run by both agents\n", ocReal, ocVersion)
	fmt.Printf("fake API:      %s/<agent>-<run>/v1 (fakechat.Directives, model %s)\n", srv.URL, fakechat.ModelRef)
	fmt.Printf("acpbridge:     %s — %s, ACPBRIDGE_OPENCODE=%s\n", o.Acpbridge, bridge.version, ocPath)
	if shared.shared != nil {
		fmt.Printf("%-14s %s, every run with one HOME; its daemon started by a run not counted, as after a user's first bridge\n",
			opencodeNameShared+":", strings.Join(shared.argv, " "))
	}
	fmt.Printf("opencode-acp:  %s — %s\n", strings.ReplaceAll(strings.Join(anchor.argv, " "), "CWD", "<run cwd>"), anchor.version)
	fmt.Printf("runs:          %d per agent; prompts %q then %q; RSS sampled every %v, PSS every %v\n\n",
		o.N, opencodePrompt1, opencodePrompt2, benchkit.SampleEvery, time.Duration(max(o.pssEvery, 1))*benchkit.SampleEvery)

	if shared.shared != nil {
		if r := opencodeRunOnce(o, shared, srv, opencodeSharedPrefix+"-0", ocReal); r.Err != nil {
			fmt.Fprintf(os.Stderr, "benchagent opencode: the run that starts the shared daemon failed: %v\n", r.Err)
			return 1
		}
	}
	results := benchkit.Repeat(o.Options, agents, func(a opencodeAgent) string { return a.name }, true,
		func(a opencodeAgent, prefix string) opencodeResult { return opencodeRunOnce(o, a, srv, prefix, ocReal) })
	opencodeReport(results, o.Only)
	// A failed acpbridge opencodeRun is a bug to look at; the anchor is only the
	// anchor, so its failures are reported but don't fail the benchmark.
	for _, name := range []string{opencodeNameBridge, opencodeNameShared} {
		if len(benchkit.Succeeded(results[name])) != len(results[name]) {
			return 1
		}
	}
	return 0
}

// opencodeRunOnce runs opencodeAgent a once, its model requests under prefix, and returns
// its measurements.
func opencodeRunOnce(o opencodeOptions, a opencodeAgent, srv *fakechat.Server, prefix, ocReal string) (res opencodeResult) {
	fail := func(err error) opencodeResult { return opencodeResult{Result: benchkit.Result{Err: err}} }
	dirs, cleanup, err := benchkit.MakeDirs(os.Stderr, "benchopencode-"+a.name+"-", a.name+prefix, o.Keep)
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	home, before := dirs.Home, 0
	if a.shared != nil {
		home, prefix, before = a.shared.Home, opencodeSharedPrefix, len(srv.Requests())
	} else if err := fakechat.WriteHome(dirs.Home, srv.URL+prefix); err != nil {
		return fail(err)
	}
	if err := gitInit(dirs.Cwd); err != nil {
		return fail(err)
	}
	argv := slices.Clone(a.argv)
	for i, s := range argv {
		if s == "CWD" {
			argv[i] = dirs.Cwd
		}
	}
	p, err := dirs.Start(argv, append(fakechat.Env(home, fakechat.ConfigPath(home)), a.env...), ocReal)
	if err != nil {
		return fail(err)
	}
	defer func() {
		exited := p.Stop(benchkit.ExitGrace)
		switch {
		case exited:
		case a.anchor:
			res.lingered = true
		case res.Err == nil:
			res.Err = fmt.Errorf("%s did not exit within %v of its stdin closing", a.name, benchkit.ExitGrace)
		}
		res.countRequests(srv.Requests()[before:], prefix)
		p.Record(&res.Result, os.Stderr, a.name+prefix, o.Verbose)
	}()
	s := benchkit.NewACPSession(p.Stdin, p.Stdout, "benchopencode", o.Verbose, opencodeCheckAnswer)
	res.Times, res.Err = benchkit.Measure(s, p.Started, o.Timeout, o.Think, dirs.Cwd, [2]string{opencodePrompt1, opencodePrompt2})
	return res
}

// countRequests notes the fake's requests of the opencodeRun, those under prefix.
func (res *opencodeResult) countRequests(reqs []fakechat.Request, prefix string) {
	uas, sessions := map[string]bool{}, map[string]bool{}
	for _, r := range reqs {
		if r.Prefix != prefix {
			continue
		}
		res.APIRequests++
		kind := ""
		if r.Title {
			res.titles++
			kind = "title "
		}
		res.APISummary = append(res.APISummary, fmt.Sprintf("%s%s %q", kind, r.Model, benchkit.FirstLine(r.LastUserText, 60)))
		uas[r.Header.Get("User-Agent")] = true
		if r.SessionID != "" {
			sessions[r.SessionID] = true
		}
	}
	res.userAgents = slices.Sorted(maps.Keys(uas))
	res.sessions = len(sessions)
}

// opencodeCheckAnswer checks that text, the opencodeAgent's text of the turn of prompt,
// has the fake's answer to it.
func opencodeCheckAnswer(prompt, text string) error {
	if want := fakechat.AnswerTextPrefix + prompt; !strings.Contains(text, want) {
		return fmt.Errorf("the agent's text was %q, want the fake's answer %q", text, want)
	}
	return nil
}

// opencodeReport prints the notes, the table of results and what each opencodeAgent's
// process tree ran.
func opencodeReport(results map[string][]opencodeResult, only string) {
	for _, name := range opencodeAgentOrder {
		if only != "" && only != name {
			continue
		}
		if len(benchkit.Succeeded(results[name])) == 0 {
			fmt.Printf("NOTE: no numbers for %s: none of its %d runs succeeded (errors above). No ratios.\n", name, len(results[name]))
		}
		lingered := 0
		for _, r := range results[name] {
			if r.lingered {
				lingered++
			}
		}
		if lingered > 0 {
			fmt.Printf("NOTE: %s did not exit within %v of its stdin closing in %d of %d runs; it was killed (SIGKILL to its process groups).\n",
				name, benchkit.ExitGrace, lingered, len(results[name]))
		}
		if note := requestNote(name, benchkit.Succeeded(results[name])); note != "" {
			fmt.Printf("NOTE: %s\n", note)
		}
	}
	fmt.Println()

	benchkit.Table[opencodeResult]{
		Metrics: benchkit.Metrics(benchkit.Labels{NewSession: "session/new", Child: "opencode",
			Matching: "opencode", API: "Chat Completions", WallClock: true}),
		Agents:  opencodeAgentOrder,
		Results: results,
		Ratios: []benchkit.Ratio{{Title: "anchor/bridge", Num: nameAnchor, Den: opencodeNameBridge},
			{Title: "anchor/shared", Num: nameAnchor, Den: opencodeNameShared}},
		Width: 24,
	}.Print(os.Stdout)
	fmt.Println()
	fmt.Println("anchor/bridge is opencode-acp's median over acpbridge's. acpbridge starts `opencode serve` and reads its")
	fmt.Println("catalog in the background at initialize, and its session/new waits for both; opencode-acp starts its")
	fmt.Println("in-process server inside initialize. So compare start → end of turn 1, not its parts. For opencode-acp")
	fmt.Println("\"agent process alone\" is the opencode process itself, and the tree minus it is any helper it spawned.")
	fmt.Println("acpbridge-shared is acpbridge --shared on a daemon opencode serve already running (started by a run not")
	fmt.Println("counted): its memory columns leave the daemon out, which all of a user's bridges share.")
	for _, name := range opencodeAgentOrder {
		benchkit.PrintRuns(name, results[name], func(r opencodeResult) []string { return r.Exes },
			func(r opencodeResult) string { return r.AgentInfo }, func(r opencodeResult) []string { return r.userAgents })
	}
	fmt.Println()
}

// requestNote says how opencodeAgent name's successful runs used the model: the
// requests per opencodeRun, how many of them were title requests, and the
// OpenCode sessions they came from.
func requestNote(name string, rs []opencodeResult) string {
	if len(rs) == 0 {
		return ""
	}
	var reqs, titles, sessions []string
	for _, r := range rs {
		reqs = append(reqs, fmt.Sprint(r.APIRequests))
		titles = append(titles, fmt.Sprint(r.titles))
		sessions = append(sessions, fmt.Sprint(r.sessions))
	}
	return fmt.Sprintf("%s made %s model requests per run, of which %s title requests (OpenCode titles a session "+
		"after its first prompt), from %s OpenCode sessions.", name, strings.Join(compact(reqs), "/"),
		strings.Join(compact(titles), "/"), strings.Join(compact(sessions), "/"))
}

// compact is the sorted distinct strings of ss.
func compact(ss []string) []string {
	ss = slices.Clone(ss)
	slices.Sort(ss)
	return slices.Compact(ss)
}

// gitInit makes dir a git repository, quietly and offline.
func gitInit(dir string) error {
	cmd := exec.Command("git", "init", "-q", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git init %s: %v: %s", dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// opencodeVersionOf runs `opencode --version` with HOME, the XDG
// directories and TMPDIR in a scratch directory (any opencodeRun of opencode
// creates its directories there).
func opencodeVersionOf(opencode string) string {
	scratch, err := os.MkdirTemp("", "benchopencode-version-")
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer os.RemoveAll(scratch)
	return benchkit.CommandLine(fakechat.Env(scratch, ""), opencode, "--version")
}
