package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

const (
	codexPrompt1 = "hello there"
	codexPrompt2 = "hello again"
)

// The other agents' names, which are also the table's column titles and
// -only's values.
const (
	nameDirect = "app-server"
	nameCXT    = "codex-acp"
	nameCXR    = "zed-codex-acp"
)

var codexAgentOrder = []string{benchkit.NameBridge, benchkit.NameCold, benchkit.NameOwn, nameDirect, nameCXT, nameCXR}

// codexOptions are benchagent codex's flags.
type codexOptions struct {
	benchkit.Options
	codex    string
	cxt, cxr string
}

// codexAgent is one agent under test.
type codexAgent struct {
	benchkit.Agent
	direct bool // the app-server driven directly, not ACP
	// noCatalog drops model_catalog_json from config.toml: the catalog
	// is codex 0.169.0's internal ModelInfo format, which an older
	// codex-core cannot parse.
	noCatalog bool
	// shared, if set, is the one HOME (and CODEX_HOME) of every run, as
	// a user's bridges have: acpbridge's daemon is per HOME.
	shared *sharedHome
}

// sharedHome is the HOME that every run of acpbridge uses, and where
// their daemon lives.
type sharedHome struct {
	*benchkit.Shared
	codexHome, prefix string
}

// codexResult is one run's measurements.
type codexResult struct {
	benchkit.Result
	userAgents    []string // the distinct user-agent headers of its API requests
	otherRequests []string // its API requests for another model than fakeresponses.Model
}

// codexBench is a run of benchagent codex: the pinned codex, the agents,
// and the fake Responses API.
type codexBench struct {
	o                                   codexOptions
	selected                            func(name string) bool // by -only
	codexPath, codexReal                string
	codexVersion                        string
	cold, own, shared, direct, cxt, cxr codexAgent        // shared: acpbridge
	missing                             map[string]string // why an adapter has no numbers, if it is not installed
	srv                                 *fakeresponses.Server
}

// codexRun is benchagent codex; it returns the exit status.
func codexRun(args []string) int {
	o, status, ok := parseCodexOptions(args)
	if !ok {
		return status
	}
	selected, ok := codexSelection(o.Options)
	if !ok {
		return 2
	}
	b, err := newCodexBench(o, selected)
	if err != nil {
		o.Failf("%v", err)
		return 1
	}
	// A failed acpbridge run is a bug to look at, and a failed direct run
	// makes the comparison meaningless; the adapters are only anchors, so
	// their failures are reported but don't fail the benchmark.
	return benchkit.Run[codexAgent, codexResult](o.Options, b, true, benchkit.NameBridge, benchkit.NameCold, benchkit.NameOwn, nameDirect)
}

// parseCodexOptions parses the flags; if the program is not to go on, ok
// is false and status is its exit status.
func parseCodexOptions(args []string) (o codexOptions, status int, ok bool) {
	fs := o.Flags("benchagent codex", "limit for each request or turn",
		"run only these agents, comma-separated ("+strings.Join(codexAgentOrder, ", ")+")")
	defCodex := benchkit.EnvOr("ACPBRIDGE_CODEX", fakeresponses.InstalledBin(o.Root))
	fs.StringVar(&o.codex, "codex", defCodex, "the native codex `binary` acpbridge, the direct runs and codex-acp run (default $ACPBRIDGE_CODEX, else the pinned .tools one)")
	fs.StringVar(&o.cxt, "codex-acp", filepath.Join(o.Root, ".tools/codex-acp/node_modules/.bin/codex-acp"),
		"the ACP org's codex-acp `binary` (CXT; see scripts/install-tools.sh acp-codex-adapter)")
	fs.StringVar(&o.cxr, "zed-codex-acp", zedNativeBin(o.Root),
		"Zed's native codex-acp `binary` (CXR; see scripts/install-tools.sh zed-codex-adapter)")
	status, ok = o.Parse(fs, args)
	return o, status, ok
}

// codexSelection is whether -only, a comma-separated list (none for all),
// selects an agent; ok is false, said on stderr, if it names an unknown
// one.
func codexSelection(o benchkit.Options) (selected func(string) bool, ok bool) {
	want := map[string]bool{}
	for _, s := range strings.Split(o.Only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(codexAgentOrder, s) {
			o.Failf("-only: unknown agent %q (%s)", s, strings.Join(codexAgentOrder, ", "))
			return nil, false
		}
		want[s] = true
	}
	return func(name string) bool { return len(want) == 0 || want[name] }, true
}

// newCodexBench finds the codex binary, describes the agents and starts
// the fake; with acpbridge selected, it makes its HOME.
func newCodexBench(o codexOptions, selected func(string) bool) (*codexBench, error) {
	codexPath, codexReal, err := benchkit.Executable(o.codex)
	if err != nil {
		return nil, fmt.Errorf("no codex binary at %q (run scripts/install-tools.sh codex): %v", o.codex, err)
	}
	b := &codexBench{o: o, selected: selected, codexPath: codexPath, codexReal: codexReal,
		codexVersion: codexVersionOf(codexPath), missing: map[string]string{}}
	base := benchkit.Bridge(o.Options, "codex", "ACPBRIDGE_CODEX", codexPath)
	b.own = codexAgent{Agent: base.Own(o.First)}
	b.direct = codexAgent{Agent: benchkit.Agent{Name: nameDirect, Version: b.codexVersion,
		Argv: []string{codexPath, "app-server", "-c", "tools.update_plan={enabled=true}"}}, direct: true}
	b.cxt, b.missing[nameCXT] = cxtAdapter(o.cxt, codexPath)
	b.cxr, b.missing[nameCXR] = cxrAdapter(o.cxr)
	b.srv = fakeresponses.New(fakeresponses.Directives())
	for _, name := range []string{benchkit.NameBridge, benchkit.NameCold} {
		if !selected(name) {
			continue
		}
		sh, err := newSharedHome(b.srv, name)
		if err != nil {
			b.Close()
			return nil, err
		}
		if name == benchkit.NameBridge {
			b.shared = codexAgent{Agent: base.AsShared(sh.Shared), shared: sh}
		} else {
			b.cold = codexAgent{Agent: base.Cold(), shared: sh}
		}
	}
	return b, nil
}

// cxtAdapter is CXT at path, running the pinned codex at codex, and why it
// has no numbers if it is not installed.
func cxtAdapter(path, codex string) (a codexAgent, missing string) {
	a.Name, a.Argv, a.Anchor = nameCXT, []string{path}, true
	// CODEX_PATH: run the pinned codex, not the bundled one;
	// NO_BROWSER: offer no ChatGPT login (there is no browser).
	a.Env = []string{"CODEX_PATH=" + codex, "NO_BROWSER=1"}
	if _, err := os.Stat(path); err != nil {
		return a, fmt.Sprintf("CXT is not installed at %s (bash scripts/install-tools.sh acp-codex-adapter): %v", path, err)
	}
	// The @openai/codex it bundles is installed next to it: the
	// binary is …/node_modules/@agentclientprotocol/codex-acp/dist/index.js.
	a.Version = "@agentclientprotocol/codex-acp " + benchkit.PackageVersion(path, "..") +
		" (node " + benchkit.CommandLine(os.Environ(), "node", "--version") + "; bundles @openai/codex " +
		benchkit.PackageVersion(path, "../../../@openai/codex") + ", not used: CODEX_PATH=" + codex + ")"
	return a, ""
}

// cxrAdapter is CXR at path, and why it has no numbers if it is not
// installed.
func cxrAdapter(path string) (a codexAgent, missing string) {
	a.Name, a.Argv, a.Anchor = nameCXR, []string{path}, true
	// Its codex-core exits at start-up on 0.169.0's catalog
	// ("failed to parse model_catalog_json … missing field
	// `base_instructions`"); without it, it uses its fallback
	// metadata for fake-model.
	a.noCatalog = true
	if _, err := os.Stat(path); err != nil {
		return a, fmt.Sprintf("CXR is not installed at %s (bash scripts/install-tools.sh zed-codex-adapter): %v", path, err)
	}
	a.Version = "@zed-industries/codex-acp " + benchkit.PackageVersion(path, "..") +
		" (native binary, its own codex-core linked in; runs no codex executable)"
	return a, ""
}

// newSharedHome makes the HOME of the runs of name (acpbridge or
// acpbridge-cold), its model requests under its own prefix.
func newSharedHome(srv *fakeresponses.Server, name string) (*sharedHome, error) {
	sh, err := benchkit.NewShared("benchcodex-"+name+"-", "tmp")
	if err != nil {
		return nil, err
	}
	h := &sharedHome{Shared: sh, codexHome: filepath.Join(sh.Home, ".codex"), prefix: "/" + name}
	if err := writeCodexHome(h.codexHome, srv, h.prefix); err != nil {
		sh.Close()
		return nil, err
	}
	return h, nil
}

// writeCodexHome writes a CODEX_HOME whose model requests go to srv under
// prefix.
func writeCodexHome(codexHome string, srv *fakeresponses.Server, prefix string) error {
	baseURL := strings.TrimSuffix(srv.URL, "/v1") + prefix + "/v1"
	return fakeresponses.WriteHome(codexHome, baseURL, fakeresponses.HomeOptions{})
}

// Warmups are acpbridge and acpbridge-cold, those that run.
func (b *codexBench) Warmups() []codexAgent {
	var ws []codexAgent
	for _, a := range []codexAgent{b.shared, b.cold} {
		if a.shared != nil {
			ws = append(ws, a)
		}
	}
	return ws
}

// Close stops the daemons and the fake.
func (b *codexBench) Close() {
	for _, a := range b.Warmups() {
		a.shared.Close()
	}
	b.srv.Close()
}

// Agents are the agents to run, in order: the selected ones that are
// installed.
func (b *codexBench) Agents() []codexAgent {
	var agents []codexAgent
	for _, a := range []codexAgent{b.shared, b.cold, b.own, b.direct, b.cxt, b.cxr} {
		if b.selected(a.Name) && b.missing[a.Name] == "" {
			agents = append(agents, a)
		}
	}
	return agents
}

// Header prints what runs against what.
func (b *codexBench) Header() {
	fmt.Printf("codex:         %s (%s); run by acpbridge, app-server and codex-acp\n", b.codexReal, b.codexVersion)
	fmt.Printf("fake API:      %s/<agent>-<run>/v1 (fakeresponses.Directives, model %s)\n", strings.TrimSuffix(b.srv.URL, "/v1"), fakeresponses.Model)
	fmt.Printf("acpbridge:     %s — %s, ACPBRIDGE_CODEX=%s\n", b.o.Acpbridge, b.own.Version, b.codexPath)
	fmt.Printf("%-14s %s (default flags), every run with one HOME; its daemon started by a run not counted, and settled before each run\n",
		benchkit.NameBridge+":", strings.Join(b.shared.Argv, " "))
	fmt.Printf("%-14s the same with no daemon running: each run's started by it, stopped after it\n", benchkit.NameCold+":")
	fmt.Printf("%-14s %s, each run a new HOME\n", benchkit.NameOwn+":", strings.Join(b.own.Argv, " "))
	fmt.Printf("app-server:    %s\n", strings.Join(b.direct.Argv, " "))
	for _, a := range []codexAgent{b.cxt, b.cxr} {
		if !b.selected(a.Name) {
			continue
		}
		if why := b.missing[a.Name]; why != "" {
			fmt.Printf("%-14s (missing) %s\n", a.Name+":", why)
		} else {
			fmt.Printf("%-14s %s — %s\n", a.Name+":", a.Argv[0], a.Version)
		}
	}
	fmt.Printf("runs:          %d per agent; prompts %q then %q\n\n", b.o.N, codexPrompt1, codexPrompt2)
}

// RunOnce runs agent a once, its fake API requests under prefix, and
// returns its measurements.
func (b *codexBench) RunOnce(a codexAgent, prefix string) (res codexResult) {
	fail := func(err error) codexResult { return codexResult{Result: benchkit.Result{Err: err}} }
	dirs, cleanup, err := benchkit.MakeDirs(os.Stderr, "benchcodex-"+a.Name+"-", a.Name+prefix, b.o.Keep, "tmp")
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	// Each run's own base_url, so that its requests can be counted; the
	// shared runs' one, whose requests are counted from the run's start.
	home, codexHome, before := dirs.Home, filepath.Join(dirs.Home, ".codex"), 0
	if sh := a.shared; sh != nil {
		sh.Settle()
		home, codexHome, prefix, before = sh.Home, sh.codexHome, sh.prefix, len(b.srv.Requests())
	} else if err := writeCodexHome(codexHome, b.srv, prefix); err != nil {
		return fail(err)
	}
	if a.noCatalog {
		if err := dropCatalog(filepath.Join(codexHome, "config.toml")); err != nil {
			return fail(err)
		}
	}
	p, err := dirs.Start(a.Argv, append(fakeresponses.Env(home, codexHome), a.Env...), b.codexReal)
	if err != nil {
		return fail(err)
	}
	s := b.session(a, p)
	defer func() {
		p.Finish(&res.Result, a.Agent, s, a.Name+prefix, b.o.Verbose)
		res.countRequests(b.srv.Requests()[before:], prefix)
	}()
	res.Times, res.Err = benchkit.Measure(s, p.Started, b.o.Timeout, b.o.Think, dirs.Cwd, [2]string{codexPrompt1, codexPrompt2})
	return res
}

// session is how a run drives agent a on p: ACP, or the app-server's own
// protocol for the direct runs.
func (b *codexBench) session(a codexAgent, p *benchkit.Process) benchkit.Session {
	if a.direct {
		return &directSession{rc: newRPCClient(p.Stdin, p.Stdout)}
	}
	return benchkit.NewACPSession(p.Stdin, p.Stdout, "benchcodex", b.o.Verbose, codexCheckAnswer)
}

// countRequests notes the fake's requests of the run, those under prefix.
func (res *codexResult) countRequests(reqs []fakeresponses.Request, prefix string) {
	uas := map[string]bool{}
	for _, r := range reqs {
		if !strings.HasPrefix(r.Path, prefix+"/") {
			continue
		}
		res.APIRequests++
		res.APISummary = append(res.APISummary, fmt.Sprintf("%s %q", r.Model, benchkit.FirstLine(r.LastUserText, 60)))
		uas[r.Header.Get("User-Agent")] = true
		if r.Model != fakeresponses.Model {
			res.otherRequests = append(res.otherRequests, fmt.Sprintf("model %s: %q", r.Model, benchkit.FirstLine(r.LastUserText, 60)))
		}
	}
	res.userAgents = slices.Sorted(maps.Keys(uas))
}

// codexCheckAnswer checks that text, the agent's text of the turn of
// prompt, has the fake's answer to it.
func codexCheckAnswer(prompt, text string) error {
	if want := fakeresponses.AnswerTextPrefix + prompt; !strings.Contains(text, want) {
		return fmt.Errorf("the agent's text was %q, want the fake's answer %q", text, want)
	}
	return nil
}

// dropCatalog removes the model_catalog_json line from a config.toml.
func dropCatalog(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var out []string
	for line := range strings.SplitSeq(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "model_catalog_json") {
			out = append(out, line)
		}
	}
	return os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644)
}

// zedNativeBin is where scripts/install-tools.sh zed-codex-adapter puts
// the native codex-acp binary for this platform (the npm package's
// bin/codex-acp.js only spawnSyncs it).
func zedNativeBin(root string) string {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	return filepath.Join(root, ".tools/zed-codex-acp/node_modules/@zed-industries",
		"codex-acp-"+runtime.GOOS+"-"+arch, "bin", "codex-acp")
}

// codexVersionOf runs `codex --version` with HOME, CODEX_HOME and TMPDIR
// in a scratch directory (so that it writes nothing elsewhere).
func codexVersionOf(codex string) string {
	scratch, err := os.MkdirTemp("", "benchcodex-version-")
	if err != nil {
		return "(" + err.Error() + ")"
	}
	defer os.RemoveAll(scratch)
	return benchkit.CommandLine([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + scratch,
		"CODEX_HOME=" + filepath.Join(scratch, "none"), "TMPDIR=" + scratch}, codex, "--version")
}
