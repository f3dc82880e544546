// Command benchcodex measures acpbridge's Codex backend against the same
// pinned `codex app-server` driven directly, and against the npm Codex ACP
// adapters of shared/docs/anchors.md ("CXT" @agentclientprotocol/codex-acp
// and "CXR" @zed-industries/codex-acp), all offline, on one fake Responses
// API (translators/codex/fakeresponses).
//
// Usage:
//
//	go run ./scripts/benchcodex [flags]
//	bash scripts/bench-codex.sh [flags]
//
// It starts one fake server, then runs each agent N times (-n). Every run
// gets a fresh temporary HOME (with HOME/tmp as TMPDIR), CODEX_HOME
// (HOME/.codex, written by fakeresponses.WriteHome for the fake with a
// base_url of its own, so that the fake's requests can be told apart),
// working directory and, for acpbridge, state directory, and the
// environment of fakeresponses.Env. The agents:
//
//	acpbridge      bin/acpbridge --agent codex, running the pinned codex
//	               through $ACPBRIDGE_CODEX (one shared app-server)
//	app-server     the pinned `codex app-server -c tools.update_plan={enabled=true}`
//	               (what acpbridge runs) driven directly by a minimal
//	               JSON-RPC client in this program: no ACP at all
//	codex-acp      CXT, `node …/codex-acp`, running the pinned codex
//	               through $CODEX_PATH (instead of the @openai/codex it bundles)
//	zed-codex-acp  CXR, the native Rust binary of @zed-industries/codex-acp
//	               (run directly, not through its node wrapper): it links
//	               codex-core and runs no codex executable; it reads the
//	               same CODEX_HOME/config.toml
//
// An ACP run, with acp-go-sdk's ClientSideConnection:
//
//	process start → initialize response
//	session/new
//	session/prompt "hello there"  right after session/new: turn 1, cold
//	session/prompt "hello again"  in the same session: turn 2, warm
//
// and a direct run the same on the app-server's own protocol:
//
//	process start → initialize result (then the initialized notification)
//	thread/start {cwd}
//	turn/start "hello there" → turn/completed
//	turn/start "hello again" → turn/completed
//
// while a sampler reads /proc every 20ms for the peak resident memory of
// the agent's whole process tree (the agent and its codex children) and of
// the agent process alone. Then it closes the agent's stdin, gives it a
// few seconds to exit, and kills whatever of its process tree is left
// (every process group it saw). It prints the medians per agent, the ratio
// acpbridge/app-server (the bridge's overhead) and the ratio
// adapter/acpbridge for each adapter.
//
// An adapter that is missing or has no successful run gets a NOTE saying
// why. It exits 1 if any acpbridge or direct app-server run failed (the
// adapters' failures are printed but do not change the exit status), 2 for
// a usage error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/translators/codex/fakeresponses"
	"github.com/coder/acp-go-sdk"
)

const (
	sampleEvery = 20 * time.Millisecond
	exitGrace   = 5 * time.Second
	prompt1     = "hello there"
	prompt2     = "hello again"
)

// The agents' names, which are also the table's column titles and -only's
// values.
const (
	nameBridge = "acpbridge"
	nameDirect = "app-server"
	nameCXT    = "codex-acp"
	nameCXR    = "zed-codex-acp"
)

var agentOrder = []string{nameBridge, nameDirect, nameCXT, nameCXR}

func main() {
	os.Exit(run(os.Args[1:]))
}

type options struct {
	n         int
	acpbridge string
	codex     string
	cxt, cxr  string
	timeout   time.Duration
	verbose   bool
	keep      bool
	only      string
}

// agent is one agent under test.
type agent struct {
	name   string // column title
	direct bool   // the app-server driven directly, not ACP
	argv   []string
	// env is added to fakeresponses.Env for a run.
	env []string
	// version describes the agent for the header.
	version string
	// noCatalog drops model_catalog_json from config.toml: the catalog
	// is codex 0.169.0's internal ModelInfo format, which an older
	// codex-core cannot parse.
	noCatalog bool
	// anchor marks an npm adapter: not exiting when its stdin closes is
	// noted (it is killed), not a failed run.
	anchor bool
}

// result is one run's measurements.
type result struct {
	init, newSession, turn1, turn2, e2e time.Duration
	peakTree, peakPSS, peakOwn          int64 // KiB
	apiRequests                         int
	apiSummary                          []string // model and last text of each API request, for -v
	userAgents                          []string // the distinct user-agent headers of its API requests
	otherRequests                       []string // its API requests for another model than fakeresponses.Model
	maxCodex                            int      // most pinned-codex processes alive at once in the tree
	exes                                []string // distinct executables in the process tree
	agentInfo                           string   // the agent's initialize answer: ACP agentInfo, or the app-server's userAgent
	lingered                            bool     // an anchor that did not exit within exitGrace of its stdin closing
	err                                 error
	stderr                              string // the agent's stderr, when it failed
}

func run(args []string) int {
	root, err := repoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchcodex:", err)
		return 2
	}
	var o options
	fs := flag.NewFlagSet("benchcodex", flag.ContinueOnError)
	fs.IntVar(&o.n, "n", 5, "runs per agent")
	fs.StringVar(&o.acpbridge, "acpbridge", filepath.Join(root, "bin/acpbridge"), "the acpbridge `binary`")
	defCodex := os.Getenv("ACPBRIDGE_CODEX")
	if defCodex == "" {
		defCodex = fakeresponses.InstalledBin(root)
	}
	fs.StringVar(&o.codex, "codex", defCodex, "the native codex `binary` acpbridge, the direct runs and codex-acp run (default $ACPBRIDGE_CODEX, else the pinned .tools one)")
	fs.StringVar(&o.cxt, "codex-acp", filepath.Join(root, ".tools/codex-acp/node_modules/.bin/codex-acp"),
		"the ACP org's codex-acp `binary` (CXT; see scripts/install-tools.sh acp-codex-adapter)")
	fs.StringVar(&o.cxr, "zed-codex-acp", zedNativeBin(root),
		"Zed's native codex-acp `binary` (CXR; see scripts/install-tools.sh zed-codex-adapter)")
	fs.DurationVar(&o.timeout, "timeout", 120*time.Second, "limit for each request or turn")
	fs.BoolVar(&o.verbose, "v", false, "print each run and pass the agents' stderr through")
	fs.BoolVar(&o.keep, "keep", false, "keep each run's temporary directory")
	fs.StringVar(&o.only, "only", "", "run only these agents, comma-separated ("+strings.Join(agentOrder, ", ")+")")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.n < 1 {
		fmt.Fprintln(os.Stderr, "benchcodex: -n must be at least 1")
		return 2
	}
	want := map[string]bool{}
	for _, s := range strings.Split(o.only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(agentOrder, s) {
			fmt.Fprintf(os.Stderr, "benchcodex: -only: unknown agent %q (%s)\n", s, strings.Join(agentOrder, ", "))
			return 2
		}
		want[s] = true
	}
	selected := func(name string) bool { return len(want) == 0 || want[name] }

	codexPath, err := filepath.Abs(o.codex)
	if err == nil {
		_, err = os.Stat(codexPath)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchcodex: no codex binary at %q (run scripts/install-tools.sh codex): %v\n", o.codex, err)
		return 1
	}
	codexReal, _ := filepath.EvalSymlinks(codexPath)
	codexVersion := codexVersionOf(codexPath)

	bridge := agent{
		name: nameBridge,
		argv: []string{o.acpbridge, "--agent", "codex", "--state-dir", "STATE"},
		env:  []string{"ACPBRIDGE_CODEX=" + codexPath},
	}
	bridge.version = commandLine(os.Environ(), o.acpbridge, "--version")

	direct := agent{
		name:    nameDirect,
		direct:  true,
		argv:    []string{codexPath, "app-server", "-c", "tools.update_plan={enabled=true}"},
		version: codexVersion,
	}

	// Why an adapter has no numbers, if it is missing.
	missing := map[string]string{}
	cxt := agent{
		name: nameCXT,
		argv: []string{o.cxt},
		// CODEX_PATH: run the pinned codex, not the bundled one;
		// NO_BROWSER: offer no ChatGPT login (there is no browser).
		env:    []string{"CODEX_PATH=" + codexPath, "NO_BROWSER=1"},
		anchor: true,
	}
	if _, err := os.Stat(o.cxt); err != nil {
		missing[nameCXT] = fmt.Sprintf("CXT is not installed at %s (bash scripts/install-tools.sh acp-codex-adapter): %v", o.cxt, err)
	} else {
		cxt.version = "@agentclientprotocol/codex-acp " + packageVersion(o.cxt, "..") +
			" (node " + commandLine(os.Environ(), "node", "--version") + "; bundles @openai/codex " +
			bundledCodexVersion(o.cxt) + ", not used: CODEX_PATH=" + codexPath + ")"
	}
	cxr := agent{
		name: nameCXR,
		argv: []string{o.cxr},
		// Its codex-core exits at start-up on 0.169.0's catalog
		// ("failed to parse model_catalog_json … missing field
		// `base_instructions`"); without it, it uses its fallback
		// metadata for fake-model.
		noCatalog: true,
		anchor:    true,
	}
	if _, err := os.Stat(o.cxr); err != nil {
		missing[nameCXR] = fmt.Sprintf("CXR is not installed at %s (bash scripts/install-tools.sh zed-codex-adapter): %v", o.cxr, err)
	} else {
		cxr.version = "@zed-industries/codex-acp " + packageVersion(o.cxr, "..") +
			" (native binary, its own codex-core linked in; runs no codex executable)"
	}

	var agents []agent
	for _, a := range []agent{bridge, direct, cxt, cxr} {
		if selected(a.name) && missing[a.name] == "" {
			agents = append(agents, a)
		}
	}

	srv := fakeresponses.New(fakeresponses.Directives())
	defer srv.Close()

	fmt.Printf("codex:         %s (%s); run by acpbridge, app-server and codex-acp\n", codexReal, codexVersion)
	fmt.Printf("fake API:      %s/<agent>-<run>/v1 (fakeresponses.Directives, model %s)\n", strings.TrimSuffix(srv.URL, "/v1"), fakeresponses.Model)
	fmt.Printf("acpbridge:     %s — %s, ACPBRIDGE_CODEX=%s\n", o.acpbridge, bridge.version, codexPath)
	fmt.Printf("app-server:    %s\n", strings.Join(direct.argv, " "))
	for _, a := range []agent{cxt, cxr} {
		if !selected(a.name) {
			continue
		}
		if why := missing[a.name]; why != "" {
			fmt.Printf("%-14s (missing) %s\n", a.name+":", why)
		} else {
			fmt.Printf("%-14s %s — %s\n", a.name+":", a.argv[0], a.version)
		}
	}
	fmt.Printf("runs:          %d per agent; prompts %q then %q\n\n", o.n, prompt1, prompt2)

	results := map[string][]result{}
	var seenAll []procID
	for _, a := range agents {
		for i := range o.n {
			prefix := fmt.Sprintf("/%s-%d", a.name, i+1)
			r, seen := runOnce(o, a, srv, prefix, codexReal)
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
				fmt.Fprintf(os.Stderr, "%s run %d: init %v, new %v, turn1 %v, turn2 %v, e2e %v, tree %d KiB, own %d KiB, %d API requests, exes %v\n",
					a.name, i+1, r.init.Round(time.Microsecond), r.newSession.Round(time.Microsecond),
					r.turn1.Round(time.Microsecond), r.turn2.Round(time.Microsecond), r.e2e.Round(time.Microsecond),
					r.peakTree, r.peakOwn, r.apiRequests, r.exes)
				fmt.Fprintf(os.Stderr, "  API requests: %s\n", strings.Join(r.apiSummary, "; "))
			}
		}
	}

	if left := alive(seenAll); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "benchcodex: WARNING: processes still alive after the runs: %v\n", left)
	}

	report(results, missing, selected, codexReal)
	// A failed acpbridge run is a bug to look at, and a failed direct run
	// makes the comparison meaningless; the adapters are only anchors, so
	// their failures are reported but don't fail the benchmark.
	for _, name := range []string{nameBridge, nameDirect} {
		if len(okRuns(results[name])) != len(results[name]) {
			return 1
		}
	}
	return 0
}

// runOnce runs agent a once and returns its measurements and every
// process it saw in the agent's tree.
func runOnce(o options, a agent, srv *fakeresponses.Server, prefix, codexReal string) (res result, seen []procID) {
	dir, err := os.MkdirTemp("", "benchcodex-"+a.name+"-")
	if err != nil {
		return result{err: err}, nil
	}
	if o.keep {
		fmt.Fprintf(os.Stderr, "%s%s: temporary directory %s\n", a.name, prefix, dir)
	} else {
		defer os.RemoveAll(dir)
	}
	home, cwd, state := filepath.Join(dir, "home"), filepath.Join(dir, "project"), filepath.Join(dir, "state")
	codexHome := filepath.Join(home, ".codex")
	for _, d := range []string{filepath.Join(home, "tmp"), cwd, state} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return result{err: err}, nil
		}
	}
	// Each run's own base_url, so that its requests can be counted.
	baseURL := strings.TrimSuffix(srv.URL, "/v1") + prefix + "/v1"
	if err := fakeresponses.WriteHome(codexHome, baseURL, fakeresponses.HomeOptions{}); err != nil {
		return result{err: err}, nil
	}
	if a.noCatalog {
		if err := dropCatalog(filepath.Join(codexHome, "config.toml")); err != nil {
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
	cmd.Env = append(fakeresponses.Env(home, codexHome), a.env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return result{err: err}, nil
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return result{err: err}, nil
	}
	// A file, not a pipe: Wait must not wait for the codex children,
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
	smp := startSampler(cmd.Process.Pid, codexReal)

	defer func() {
		// Stop: close stdin, wait a little, then kill every group seen.
		smp.stop()
		stdin.Close()
		select {
		case <-waited:
		case <-time.After(exitGrace):
			switch {
			case a.anchor:
				res.lingered = true
			case res.err == nil:
				res.err = fmt.Errorf("%s did not exit within %v of its stdin closing", a.name, exitGrace)
			}
		}
		seen = smp.seenProcs()
		killAll(cmd.Process.Pid, seen)
		select {
		case <-waited:
		case <-time.After(exitGrace):
		}
		// The codex children may take a moment to go after SIGKILL.
		deadline := time.Now().Add(exitGrace)
		for len(alive(seen)) > 0 && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		res.peakTree, res.peakPSS, res.peakOwn, res.exes = smp.peaks()
		uas := map[string]bool{}
		for _, r := range srv.Requests() {
			if strings.HasPrefix(r.Path, prefix+"/") {
				res.apiRequests++
				res.apiSummary = append(res.apiSummary, fmt.Sprintf("%s %q", r.Model, firstLine(r.LastUserText, 60)))
				uas[r.Header.Get("User-Agent")] = true
				if r.Model != fakeresponses.Model {
					res.otherRequests = append(res.otherRequests, fmt.Sprintf("model %s: %q", r.Model, firstLine(r.LastUserText, 60)))
				}
			}
		}
		res.userAgents = slices.Sorted(maps.Keys(uas))
		res.maxCodex = smp.maxMatching
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

	if a.direct {
		res.err = driveDirect(o, &res, stdin, stdout, start, cwd)
	} else {
		res.err = driveACP(o, &res, stdin, stdout, start, cwd)
	}
	return res, nil
}

// driveACP runs the ACP half of a run, filling in res's times.
func driveACP(o options, res *result, stdin io.Writer, stdout io.Reader, start time.Time, cwd string) error {
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
	ir, err := conn.Initialize(c, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo: &acp.Implementation{Name: "benchcodex", Version: "0"}})
	cancel()
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	res.init = time.Since(start)
	if ir.AgentInfo != nil {
		res.agentInfo = ir.AgentInfo.Name + " " + ir.AgentInfo.Version
	}

	c, cancel = ctx()
	t := time.Now()
	s, err := conn.NewSession(c, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	cancel()
	if err != nil {
		return fmt.Errorf("session/new: %w", err)
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
		if got, want := cl.text(), fakeresponses.AnswerTextPrefix+text; !strings.Contains(got, want) {
			return d, fmt.Errorf("session/prompt %q: the agent's text was %q, want the fake's answer %q", text, got, want)
		}
		return d, nil
	}
	if res.turn1, err = turn(prompt1); err != nil {
		return err
	}
	res.e2e = time.Since(start)
	if res.turn2, err = turn(prompt2); err != nil {
		return err
	}
	return nil
}

// driveDirect runs a run on the app-server's own protocol (codex.md §3-5),
// filling in res's times.
func driveDirect(o options, res *result, stdin io.Writer, stdout io.Reader, start time.Time, cwd string) error {
	rc := newRPCClient(stdin, stdout)
	ctx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), o.timeout)
	}

	c, cancel := ctx()
	var ir struct {
		UserAgent string `json:"userAgent"`
	}
	err := rc.call(c, "initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "benchcodex", "title": "benchcodex", "version": "0"},
		"capabilities": map[string]any{"experimentalApi": false},
	}, &ir)
	cancel()
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	res.init = time.Since(start)
	res.agentInfo = ir.UserAgent
	if err := rc.notify("initialized", nil); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}

	c, cancel = ctx()
	t := time.Now()
	var tr struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	err = rc.call(c, "thread/start", map[string]any{"cwd": cwd}, &tr)
	cancel()
	if err != nil {
		return fmt.Errorf("thread/start: %w", err)
	}
	res.newSession = time.Since(t)
	if tr.Thread.ID == "" {
		return errors.New("thread/start: no thread id in the result")
	}

	turn := func(text string) (time.Duration, error) {
		c, cancel := ctx()
		defer cancel()
		rc.resetText()
		t := time.Now()
		var sr struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		err := rc.call(c, "turn/start", map[string]any{"threadId": tr.Thread.ID,
			"input": []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}}}, &sr)
		if err != nil {
			return time.Since(t), fmt.Errorf("turn/start %q: %w", text, err)
		}
		status, err := rc.waitTurn(c, sr.Turn.ID)
		d := time.Since(t)
		if err != nil {
			return d, fmt.Errorf("turn %q: %w", text, err)
		}
		if status != "completed" {
			return d, fmt.Errorf("turn %q: status %q, want completed", text, status)
		}
		if got, want := rc.text(), fakeresponses.AnswerTextPrefix+text; !strings.Contains(got, want) {
			return d, fmt.Errorf("turn %q: the agent's text was %q, want the fake's answer %q", text, got, want)
		}
		return d, nil
	}
	if res.turn1, err = turn(prompt1); err != nil {
		return err
	}
	res.e2e = time.Since(start)
	if res.turn2, err = turn(prompt2); err != nil {
		return err
	}
	return nil
}

// rpcClient is a minimal client of codex app-server's line-delimited
// JSON-RPC (codex.md §2): the server omits "jsonrpc"; its own requests
// (approvals) get "accept"; notifications feed the turn's text and
// turn/completed.
type rpcClient struct {
	w   io.Writer
	wmu sync.Mutex

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]chan rpcMessage
	readErr  error         // why the reader stopped
	gone     chan struct{} // closed when the reader stops
	buf      strings.Builder
	complete chan turnEnd // turn/completed, in order
}

type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type turnEnd struct{ id, status string }

func newRPCClient(w io.Writer, r io.Reader) *rpcClient {
	c := &rpcClient{w: w, pending: map[int64]chan rpcMessage{}, gone: make(chan struct{}), complete: make(chan turnEnd, 64)}
	go c.read(r)
	return c
}

func (c *rpcClient) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(append(b, '\n'))
	return err
}

func (c *rpcClient) call(ctx context.Context, method string, params, result any) error {
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan rpcMessage, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
	}()
	if err := c.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-c.gone:
		return fmt.Errorf("the server closed its stdout: %v", c.readErr)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *rpcClient) notify(method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return c.send(m)
}

func (c *rpcClient) read(r io.Reader) {
	defer close(c.gone)
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			c.handle(line)
		}
		if err != nil {
			c.readErr = err
			return
		}
	}
}

func (c *rpcClient) handle(line []byte) {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return
	}
	switch {
	case m.Method == "" && len(m.ID) > 0: // a response
		id, err := strconv.ParseInt(string(m.ID), 10, 64)
		if err != nil {
			return
		}
		c.mu.Lock()
		ch := c.pending[id]
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	case len(m.ID) > 0: // a server request: an approval
		_ = c.send(map[string]any{"id": m.ID, "result": map[string]any{"decision": "accept"}})
	case m.Method == "item/agentMessage/delta":
		var p struct {
			Delta string `json:"delta"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			c.mu.Lock()
			c.buf.WriteString(p.Delta)
			c.mu.Unlock()
		}
	case m.Method == "turn/completed":
		var p struct {
			Turn struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			} `json:"turn"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			c.complete <- turnEnd{p.Turn.ID, p.Turn.Status}
		}
	}
}

func (c *rpcClient) resetText() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf.Reset()
}

func (c *rpcClient) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// waitTurn waits for turn/completed of turn id and returns its status.
func (c *rpcClient) waitTurn(ctx context.Context, id string) (string, error) {
	for {
		select {
		case e := <-c.complete:
			if e.id == id {
				return e.status, nil
			}
		case <-c.gone:
			return "", fmt.Errorf("the server closed its stdout before turn/completed: %v", c.readErr)
		case <-ctx.Done():
			return "", fmt.Errorf("no turn/completed: %w", ctx.Err())
		}
	}
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
	match    string // the pinned codex executable, to count its processes
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
	codexes := 0
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
			codexes++
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
	s.maxMatching = max(s.maxMatching, codexes)
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
// --- the report ---

type metric struct {
	name string
	unit string // "ms" or "MiB" or ""
	get  func(result) float64
}

var metrics = []metric{
	{"process start → initialize response", "ms", func(r result) float64 { return ms(r.init) }},
	{"session/new (direct: thread/start)", "ms", func(r result) float64 { return ms(r.newSession) }},
	{"turn 1 (cold, right after session/new)", "ms", func(r result) float64 { return ms(r.turn1) }},
	{"turn 2 (warm, same session)", "ms", func(r result) float64 { return ms(r.turn2) }},
	{"session/new + turn 1", "ms", func(r result) float64 { return ms(r.newSession + r.turn1) }},
	{"start → end of turn 1 (wall clock)", "ms", func(r result) float64 { return ms(r.e2e) }},
	{"peak RSS, process tree (agent + codex)", "MiB", func(r result) float64 { return float64(r.peakTree) / 1024 }},
	{"peak PSS, process tree (shared pages split)", "MiB", func(r result) float64 { return float64(r.peakPSS) / 1024 }},
	{"peak RSS, agent process alone", "MiB", func(r result) float64 { return float64(r.peakOwn) / 1024 }},
	{"peak RSS, tree minus agent (≈ codex)", "MiB", func(r result) float64 { return float64(r.peakTree-r.peakOwn) / 1024 }},
	{"pinned codex processes at once (max)", "", func(r result) float64 { return float64(r.maxCodex) }},
	{"Responses API requests per run", "", func(r result) float64 { return float64(r.apiRequests) }},
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

// ratio is one ratio column: num's median over den's.
type ratio struct{ title, num, den string }

var ratios = []ratio{
	{"bridge/direct", nameBridge, nameDirect},
	{"CXT/bridge", nameCXT, nameBridge},
	{"CXR/bridge", nameCXR, nameBridge},
}

func report(results map[string][]result, missing map[string]string, selected func(string) bool, codexReal string) {
	ok := map[string][]result{}
	for _, name := range agentOrder {
		ok[name] = okRuns(results[name])
	}
	for _, name := range agentOrder {
		if !selected(name) || len(ok[name]) > 0 {
			continue
		}
		why := missing[name]
		if why == "" {
			why = fmt.Sprintf("none of its %d runs succeeded (errors above)", len(results[name]))
		}
		fmt.Printf("NOTE: no numbers for %s: %s. No ratios with it.\n", name, why)
	}
	for _, name := range []string{nameCXT, nameCXR} {
		if note := adapterNote(name, results[name], codexReal); note != "" {
			fmt.Printf("NOTE: %s\n", note)
		}
		lingered := 0
		for _, r := range results[name] {
			if r.lingered {
				lingered++
			}
		}
		if lingered > 0 {
			fmt.Printf("NOTE: %s did not exit within %v of its stdin closing in %d of %d runs; it was killed (SIGKILL to its process groups).\n",
				name, exitGrace, lingered, len(results[name]))
		}
	}
	fmt.Println()

	const wm, wu, wc, wr = 42, 6, 22, 14
	fmt.Printf("%-*s %*s", wm, "metric (median; [min–max])", wu, "unit")
	for _, name := range agentOrder {
		fmt.Printf(" %*s", wc, fmt.Sprintf("%s (n=%d)", name, len(ok[name])))
	}
	for _, r := range ratios {
		fmt.Printf(" %*s", wr, r.title)
	}
	fmt.Println()
	fmt.Println(strings.Repeat("-", wm+1+wu+len(agentOrder)*(wc+1)+len(ratios)*(wr+1)))
	for _, m := range metrics {
		meds := map[string]float64{}
		fmt.Printf("%-*s %*s", wm, m.name, wu, m.unit)
		for _, name := range agentOrder {
			rs := ok[name]
			if len(rs) == 0 {
				fmt.Printf(" %*s", wc, "—")
				continue
			}
			var xs []float64
			for _, r := range rs {
				xs = append(xs, m.get(r))
			}
			meds[name] = median(xs)
			fmt.Printf(" %*s", wc, fmt.Sprintf("%s [%s–%s]", num(meds[name]), num(slices.Min(xs)), num(slices.Max(xs))))
		}
		for _, r := range ratios {
			s := "—"
			if len(ok[r.num]) > 0 && len(ok[r.den]) > 0 && meds[r.den] > 0 {
				s = fmt.Sprintf("%.2fx", meds[r.num]/meds[r.den])
			}
			fmt.Printf(" %*s", wr, s)
		}
		fmt.Println()
	}
	if b, d := ok[nameBridge], ok[nameDirect]; len(b) > 0 && len(d) > 0 {
		diff := func(get func(result) float64) float64 {
			med := func(rs []result) float64 {
				var xs []float64
				for _, r := range rs {
					xs = append(xs, get(r))
				}
				return median(xs)
			}
			return med(b) - med(d)
		}
		fmt.Printf("\nacpbridge − app-server (medians): start → end of turn 1 %+.0f ms, warm turn %+.1f ms, "+
			"peak tree RSS %+.1f MiB, peak tree PSS %+.1f MiB\n",
			diff(func(r result) float64 { return ms(r.e2e) }), diff(func(r result) float64 { return ms(r.turn2) }),
			diff(func(r result) float64 { return float64(r.peakTree) / 1024 }), diff(func(r result) float64 { return float64(r.peakPSS) / 1024 }))
	}
	fmt.Println()
	fmt.Println("bridge/direct is acpbridge's overhead over codex app-server driven directly (for \"agent process alone\"")
	fmt.Println("it compares acpbridge's own process with the app-server's). acpbridge starts the shared app-server at the")
	fmt.Println("first session/new without waiting for it, and its first prompt waits for the server and thread/start: so")
	fmt.Println("compare start → end of turn 1, not its parts. CXT/bridge and CXR/bridge compare each npm adapter with")
	fmt.Println("acpbridge (CXT = @agentclientprotocol/codex-acp, CXR = @zed-industries/codex-acp).")
	for _, name := range agentOrder {
		exes, uas, infos := map[string]bool{}, map[string]bool{}, map[string]bool{}
		for _, r := range results[name] {
			for _, e := range r.exes {
				exes[e] = true
			}
			for _, u := range r.userAgents {
				uas[u] = true
			}
			if r.agentInfo != "" {
				infos[r.agentInfo] = true
			}
		}
		if len(exes) == 0 {
			continue
		}
		fmt.Printf("\n%s process tree ran: %s", name, strings.Join(slices.Sorted(maps.Keys(exes)), ", "))
		if len(infos) > 0 {
			fmt.Printf("\n%s initialize: %s", name, strings.Join(slices.Sorted(maps.Keys(infos)), "; "))
		}
		if len(uas) > 0 {
			fmt.Printf("\n%s → fake API user-agent: %s", name, strings.Join(slices.Sorted(maps.Keys(uas)), "; "))
		}
	}
	fmt.Println()
}

// adapterNote says how an adapter that ran found codex and reached the
// model: CXT runs the pinned binary, CXR its own linked-in codex-core.
func adapterNote(name string, rs []result, codexReal string) string {
	rs = okRuns(rs)
	if len(rs) == 0 {
		return ""
	}
	var uas, others []string
	ranPinned := 0
	for _, r := range rs {
		uas = append(uas, r.userAgents...)
		others = append(others, r.otherRequests...)
		if slices.Contains(r.exes, codexReal) {
			ranPinned++
		}
	}
	slices.Sort(uas)
	slices.Sort(others)
	if name == nameCXT {
		note := fmt.Sprintf("%s (CXT) ran the pinned codex (through CODEX_PATH) in %d of %d successful runs", name, ranPinned, len(rs))
		if len(others) > 0 {
			note += fmt.Sprintf("; it also made %d Responses requests for another model than %s (a thread title): %s",
				len(others), fakeresponses.Model, strings.Join(slices.Compact(others), "; "))
		}
		return note + "."
	}
	if name != nameCXR {
		return ""
	}
	return fmt.Sprintf("%s (CXR) does not run the pinned codex: it links its own codex-core (its requests' user-agent: %s) and read "+
		"the same CODEX_HOME/config.toml, so it talked to the same fake; but without model_catalog_json, which that codex-core "+
		"cannot parse (\"missing field `base_instructions`\"), so it ran fake-model on its fallback model metadata.",
		name, strings.Join(slices.Compact(uas), "; "))
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
	return commandLine([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + scratch,
		"CODEX_HOME=" + filepath.Join(scratch, "none"), "TMPDIR=" + scratch}, codex, "--version")
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

// packageVersion reads the version from the package.json in up (relative
// to the directory of bin, after symlinks).
func packageVersion(bin, up string) string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "?"
	}
	return jsonVersion(filepath.Join(filepath.Dir(real), up, "package.json"))
}

// bundledCodexVersion is the version of the @openai/codex that CXT
// bundles (installed next to it).
func bundledCodexVersion(bin string) string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "?"
	}
	// real is …/node_modules/@agentclientprotocol/codex-acp/dist/index.js.
	nm := filepath.Join(filepath.Dir(real), "..", "..", "..")
	return jsonVersion(filepath.Join(nm, "@openai", "codex", "package.json"))
}

func jsonVersion(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "?"
	}
	var p struct{ Version string }
	if json.Unmarshal(b, &p) != nil || p.Version == "" {
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
