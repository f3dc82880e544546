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

// nameAnchor is the column of OpenCode's own adapter, and a value of
// -only.
const nameAnchor = "opencode-acp"

var opencodeAgentOrder = []string{benchkit.NameBridge, benchkit.NameCold, benchkit.NameOwn, nameAnchor}

// opencodeOptions are benchagent opencode's flags.
type opencodeOptions struct {
	benchkit.Options
	opencode string
	pssEvery int
}

// opencodeAgent is one ACP agent command under test. "CWD" in its Argv
// is replaced by the run's working directory.
type opencodeAgent struct {
	benchkit.Agent
	// shared, if set, is the one HOME of every run, as a user's bridges
	// have: acpbridge's daemon is per HOME. Its model requests are under
	// "/" + the agent's name.
	shared *benchkit.Shared
}

// opencodeResult is one run's measurements.
type opencodeResult struct {
	benchkit.Result
	titles     int      // its model requests that were title requests
	userAgents []string // the distinct user-agent headers of its model requests
	sessions   int      // the distinct x-session-id headers of its model requests
}

// opencodeBench is a run of benchagent opencode: the pinned opencode,
// the agents, and the fake Chat Completions API.
type opencodeBench struct {
	o                         opencodeOptions
	ocPath, ocReal            string
	ocVersion                 string
	cold, own, shared, anchor opencodeAgent // shared: acpbridge
	srv                       *fakechat.Server
}

// opencodeRun is benchagent opencode; it returns the exit status.
func opencodeRun(args []string) int {
	o, status, ok := parseOpencodeOptions(args)
	if !ok {
		return status
	}
	b, err := newOpencodeBench(o)
	if err != nil {
		o.Failf("%v", err)
		return 1
	}
	// A failed acpbridge run is a bug to look at; the anchor is only the
	// anchor, so its failures are reported but don't fail the benchmark.
	return benchkit.Run[opencodeAgent, opencodeResult](o.Options, b, true, benchkit.NameBridge, benchkit.NameCold, benchkit.NameOwn)
}

// parseOpencodeOptions parses the flags and sets benchkit.PSSEvery; if
// the program is not to go on, ok is false and status is its exit status.
func parseOpencodeOptions(args []string) (o opencodeOptions, status int, ok bool) {
	fs := o.Flags("benchagent opencode", "limit for each ACP request",
		"run only this agent ("+strings.Join(opencodeAgentOrder, " or ")+")")
	defOpencode := benchkit.EnvOr("ACPBRIDGE_OPENCODE", fakechat.InstalledBin(o.Root))
	fs.StringVar(&o.opencode, "opencode", defOpencode,
		"the native opencode `binary` both agents run (default $ACPBRIDGE_OPENCODE, else the pinned .tools one)")
	// Reading smaps_rollup of an opencode process (≈5,000 mappings)
	// takes ≈12 ms: every 20 ms sample it more than doubled both agents'
	// times.
	fs.IntVar(&o.pssEvery, "pss-every", 10, "read the processes' PSS every `n`th sample of 20ms (it slows a large process down)")
	if status, ok := o.Parse(fs, args); !ok {
		return o, status, false
	}
	benchkit.PSSEvery = o.pssEvery
	if o.Only != "" && !slices.Contains(opencodeAgentOrder, o.Only) {
		o.Failf("-only: unknown agent %q (%s)", o.Only, strings.Join(opencodeAgentOrder, ", "))
		return o, 2, false
	}
	return o, 0, true
}

// newOpencodeBench finds the opencode binary, describes the agents and
// starts the fake; with acpbridge selected, it makes its HOME.
func newOpencodeBench(o opencodeOptions) (*opencodeBench, error) {
	ocPath, ocReal, err := benchkit.Executable(o.opencode)
	if err != nil {
		return nil, fmt.Errorf("no opencode binary at %q (run scripts/install-tools.sh opencode): %v", o.opencode, err)
	}
	b := &opencodeBench{o: o, ocPath: ocPath, ocReal: ocReal, ocVersion: opencodeVersionOf(ocPath)}
	base := benchkit.Bridge(o.Options, "opencode", "ACPBRIDGE_OPENCODE", ocPath)
	b.own = opencodeAgent{Agent: base.Own(o.First)}
	b.anchor = opencodeAgent{Agent: benchkit.Agent{Name: nameAnchor, Argv: []string{ocPath, "acp", "--cwd", "CWD"},
		Version: "opencode " + b.ocVersion, Anchor: true}}
	b.srv = fakechat.New(fakechat.Directives())
	for _, name := range []string{benchkit.NameBridge, benchkit.NameCold} {
		if !o.Selects(name) {
			continue
		}
		sh, err := newOpencodeShared(b.srv, name)
		if err != nil {
			b.Close()
			return nil, err
		}
		if name == benchkit.NameBridge {
			b.shared = opencodeAgent{Agent: base.AsShared(sh), shared: sh}
		} else {
			b.cold = opencodeAgent{Agent: base.Cold(), shared: sh}
		}
	}
	return b, nil
}

// newOpencodeShared makes the HOME of the runs of name (acpbridge or
// acpbridge-cold), its model requests under "/" + name.
func newOpencodeShared(srv *fakechat.Server, name string) (*benchkit.Shared, error) {
	sh, err := benchkit.NewShared("benchopencode-" + name + "-")
	if err != nil {
		return nil, err
	}
	if err := gitInit(sh.Cwd); err != nil {
		sh.Close()
		return nil, err
	}
	if err := fakechat.WriteHome(sh.Home, srv.URL+"/"+name); err != nil {
		sh.Close()
		return nil, err
	}
	return sh, nil
}

// Warmups are acpbridge and acpbridge-cold, those that run.
func (b *opencodeBench) Warmups() []opencodeAgent {
	var ws []opencodeAgent
	for _, a := range []opencodeAgent{b.shared, b.cold} {
		if a.shared != nil {
			ws = append(ws, a)
		}
	}
	return ws
}

// Close stops the daemons and the fake.
func (b *opencodeBench) Close() {
	b.shared.shared.Close()
	b.cold.shared.Close()
	b.srv.Close()
}

// Agents are the agents to run, in order.
func (b *opencodeBench) Agents() []opencodeAgent {
	agents := b.Warmups()
	for _, a := range []opencodeAgent{b.own, b.anchor} {
		if b.o.Selects(a.Name) {
			agents = append(agents, a)
		}
	}
	return agents
}

// Header prints what runs against what.
func (b *opencodeBench) Header() {
	fmt.Printf("opencode:      %s (%s), run by both agents\n", b.ocReal, b.ocVersion)
	fmt.Printf("fake API:      %s/<agent>-<run>/v1 (fakechat.Directives, model %s)\n", b.srv.URL, fakechat.ModelRef)
	fmt.Printf("acpbridge:     %s — %s, ACPBRIDGE_OPENCODE=%s\n", b.o.Acpbridge, b.own.Version, b.ocPath)
	fmt.Printf("%-14s %s (default flags), every run with one HOME and project; its daemon started by a run not counted, and settled before each run\n",
		benchkit.NameBridge+":", strings.Join(b.shared.Argv, " "))
	fmt.Printf("%-14s the same with no daemon running: each run's started by it, stopped after it\n", benchkit.NameCold+":")
	fmt.Printf("%-14s %s, each run a new HOME and project\n", benchkit.NameOwn+":", strings.Join(b.own.Argv, " "))
	fmt.Printf("opencode-acp:  %s — %s\n", strings.ReplaceAll(strings.Join(b.anchor.Argv, " "), "CWD", "<run cwd>"), b.anchor.Version)
	fmt.Printf("runs:          %d per agent; prompts %q then %q; RSS sampled every %v, PSS every %v\n\n",
		b.o.N, opencodePrompt1, opencodePrompt2, benchkit.SampleEvery, time.Duration(max(b.o.pssEvery, 1))*benchkit.SampleEvery)
}

// RunOnce runs agent a once, its model requests under prefix, and returns
// its measurements.
func (b *opencodeBench) RunOnce(a opencodeAgent, prefix string) (res opencodeResult) {
	fail := func(err error) opencodeResult { return opencodeResult{Result: benchkit.Result{Err: err}} }
	dirs, cleanup, err := benchkit.MakeDirs(os.Stderr, "benchopencode-"+a.Name+"-", a.Name+prefix, b.o.Keep)
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	home, before := dirs.Home, 0
	if sh := a.shared; sh != nil {
		sh.Settle()
		home, dirs.Cwd, prefix, before = sh.Home, sh.Cwd, "/"+a.Name, len(b.srv.Requests())
	} else if err := fakechat.WriteHome(dirs.Home, b.srv.URL+prefix); err != nil {
		return fail(err)
	} else if err := gitInit(dirs.Cwd); err != nil {
		return fail(err)
	}
	p, err := dirs.Start(withCwd(a.Argv, dirs.Cwd), append(fakechat.Env(home, fakechat.ConfigPath(home)), a.Env...), b.ocReal)
	if err != nil {
		return fail(err)
	}
	s := benchkit.NewACPSession(p.Stdin, p.Stdout, "benchopencode", b.o.Verbose, opencodeCheckAnswer)
	defer func() {
		p.Finish(&res.Result, a.Agent, s, a.Name+prefix, b.o.Verbose)
		res.countRequests(b.srv.Requests()[before:], prefix)
	}()
	res.Times, res.Err = benchkit.Measure(s, p.Started, b.o.Timeout, b.o.Think, dirs.Cwd, [2]string{opencodePrompt1, opencodePrompt2})
	return res
}

// withCwd is argv with each "CWD" replaced by cwd.
func withCwd(argv []string, cwd string) []string {
	argv = slices.Clone(argv)
	for i, s := range argv {
		if s == "CWD" {
			argv[i] = cwd
		}
	}
	return argv
}

// countRequests notes the fake's requests of the run, those under prefix.
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

// opencodeCheckAnswer checks that text, the agent's text of the turn of
// prompt, has the fake's answer to it.
func opencodeCheckAnswer(prompt, text string) error {
	if want := fakechat.AnswerTextPrefix + prompt; !strings.Contains(text, want) {
		return fmt.Errorf("the agent's text was %q, want the fake's answer %q", text, want)
	}
	return nil
}

// opencodeTableNote explains the table's ratios.
const opencodeTableNote = `
anchor/bridge is opencode-acp's median over acpbridge's. acpbridge is its default flags on a daemon
opencode serve already running (started by a run not counted), as for every bridge of a user but the first
in --shared's time: its memory columns leave the daemon out, which all of a user's bridges share (its idle
memory is below the table). acpbridge-cold is the default flags with no daemon running, as a user's
first bridge of the day (the run starts the daemon, which its memory leaves out too, and finds the
catalog a run not counted kept in its HOME); acpbridge-own is --shared=0, a server of the bridge's own,
each run a new HOME and project. acpbridge answers session/new from the catalog kept on disk, or, when
there is none (acpbridge-own), from opencode.json's model, and its first prompt waits for the server;
opencode-acp starts its in-process server inside initialize. So compare start → end of turn 1, not its
parts. For opencode-acp "agent process alone" is the opencode process itself, and the tree minus it is
any helper it spawned.
`

// Report prints the notes, the table of results and what each agent's
// process tree ran.
func (b *opencodeBench) Report(results map[string][]opencodeResult) {
	b.notes(results)
	fmt.Println()
	benchkit.Table[opencodeResult]{
		Metrics: benchkit.Metrics(benchkit.Labels{NewSession: "session/new", Child: "opencode",
			Matching: "opencode", API: "Chat Completions", WallClock: true}),
		Agents:  opencodeAgentOrder,
		Results: results,
		Ratios: []benchkit.Ratio{{Title: "anchor/bridge", Num: nameAnchor, Den: benchkit.NameBridge},
			{Title: "anchor/cold", Num: nameAnchor, Den: benchkit.NameCold}, {Title: "anchor/own", Num: nameAnchor, Den: benchkit.NameOwn}},
		Width: 16,
	}.Print(os.Stdout)
	b.shared.shared.PrintDaemons(os.Stdout)
	fmt.Print(opencodeTableNote)
	benchkit.PrintRuns(opencodeAgentOrder, results, func(r opencodeResult) []string { return r.userAgents })
	fmt.Println()
}

// notes prints, for each selected agent, a NOTE if it has no numbers, if
// it did not exit by itself, and on how it used the model.
func (b *opencodeBench) notes(results map[string][]opencodeResult) {
	for _, name := range opencodeAgentOrder {
		if !b.o.Selects(name) {
			continue
		}
		if len(benchkit.Succeeded(results[name])) == 0 {
			fmt.Printf("NOTE: no numbers for %s: none of its %d runs succeeded (errors above). No ratios.\n", name, len(results[name]))
		}
		benchkit.NoteLingered(name, results[name])
		if note := requestNote(name, benchkit.Succeeded(results[name])); note != "" {
			fmt.Printf("NOTE: %s\n", note)
		}
	}
}

// requestNote says how agent name's successful runs used the model: the
// requests per run, how many of them were title requests, and the
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
// directories and TMPDIR in a scratch directory (any run of opencode
// creates its directories there).
func opencodeVersionOf(opencode string) string {
	scratch, err := os.MkdirTemp("", "benchopencode-version-")
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer os.RemoveAll(scratch)
	return benchkit.CommandLine(fakechat.Env(scratch, ""), opencode, "--version")
}
