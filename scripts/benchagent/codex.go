package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

const (
	codexPrompt1 = "hello there"
	codexPrompt2 = "hello again"
)

// The agents' names, which are also the table's column titles and -only's
// values.
const (
	codexNameBridge = "acpbridge"
	codexNameShared = "acpbridge-shared"
	nameDirect      = "app-server"
	nameCXT         = "codex-acp"
	nameCXR         = "zed-codex-acp"
)

var codexAgentOrder = []string{codexNameBridge, codexNameShared, nameDirect, nameCXT, nameCXR}

type codexOptions struct {
	benchkit.Options
	codex    string
	cxt, cxr string
}

// codexAgent is one codexAgent under test.
type codexAgent struct {
	name   string // column title
	direct bool   // the app-server driven directly, not ACP
	argv   []string
	// env is added to fakeresponses.Env for a codexRun.
	env []string
	// version describes the codexAgent for the header.
	version string
	// noCatalog drops model_catalog_json from config.toml: the catalog
	// is codex 0.169.0's internal ModelInfo format, which an older
	// codex-core cannot parse.
	noCatalog bool
	// anchor marks an npm adapter: not exiting when its stdin closes is
	// noted (it is killed), not a failed codexRun.
	anchor bool
	// shared, if set, is the one HOME (and CODEX_HOME) of every run, as
	// a user's bridges have: acpbridge --shared's daemon is per HOME.
	shared *sharedHome
}

// sharedHome is the HOME that every run of acpbridge-shared uses, and
// where their daemon lives.
type sharedHome struct {
	*benchkit.Shared
	codexHome, prefix string
}

// codexResult is one codexRun's measurements.
type codexResult struct {
	benchkit.Result
	userAgents    []string // the distinct user-codexAgent headers of its API requests
	otherRequests []string // its API requests for another model than fakeresponses.Model
	lingered      bool     // an anchor that did not exit within ExitGrace of its stdin closing
}

func codexRun(args []string) int {
	var o codexOptions
	fs := o.Flags("benchagent codex", "limit for each request or turn",
		"run only these agents, comma-separated ("+strings.Join(codexAgentOrder, ", ")+")")
	defCodex := os.Getenv("ACPBRIDGE_CODEX")
	if defCodex == "" {
		defCodex = fakeresponses.InstalledBin(o.Root)
	}
	fs.StringVar(&o.codex, "codex", defCodex, "the native codex `binary` acpbridge, the direct runs and codex-acp run (default $ACPBRIDGE_CODEX, else the pinned .tools one)")
	fs.StringVar(&o.cxt, "codex-acp", filepath.Join(o.Root, ".tools/codex-acp/node_modules/.bin/codex-acp"),
		"the ACP org's codex-acp `binary` (CXT; see scripts/install-tools.sh acp-codex-adapter)")
	fs.StringVar(&o.cxr, "zed-codex-acp", zedNativeBin(o.Root),
		"Zed's native codex-acp `binary` (CXR; see scripts/install-tools.sh zed-codex-adapter)")
	if status, ok := o.Parse(fs, args); !ok {
		return status
	}
	want := map[string]bool{}
	for _, s := range strings.Split(o.Only, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if !slices.Contains(codexAgentOrder, s) {
			fmt.Fprintf(os.Stderr, "benchagent codex: -only: unknown agent %q (%s)\n", s, strings.Join(codexAgentOrder, ", "))
			return 2
		}
		want[s] = true
	}
	selected := func(name string) bool { return len(want) == 0 || want[name] }

	codexPath, codexReal, err := benchkit.Executable(o.codex)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benchagent codex: no codex binary at %q (run scripts/install-tools.sh codex): %v\n", o.codex, err)
		return 1
	}
	codexVersion := codexVersionOf(codexPath)

	bridge := codexAgent{
		name:    codexNameBridge,
		argv:    []string{o.Acpbridge, "--agent", "codex", "--state-dir", "STATE"},
		env:     []string{"ACPBRIDGE_CODEX=" + codexPath},
		version: benchkit.CommandLine(os.Environ(), o.Acpbridge, "--version"),
	}

	direct := codexAgent{
		name:    nameDirect,
		direct:  true,
		argv:    []string{codexPath, "app-server", "-c", "tools.update_plan={enabled=true}"},
		version: codexVersion,
	}

	// Why an adapter has no numbers, if it is missing.
	missing := map[string]string{}
	cxt := codexAgent{
		name: nameCXT,
		argv: []string{o.cxt},
		// CODEX_PATH: codexRun the pinned codex, not the bundled one;
		// NO_BROWSER: offer no ChatGPT login (there is no browser).
		env:    []string{"CODEX_PATH=" + codexPath, "NO_BROWSER=1"},
		anchor: true,
	}
	if _, err := os.Stat(o.cxt); err != nil {
		missing[nameCXT] = fmt.Sprintf("CXT is not installed at %s (bash scripts/install-tools.sh acp-codex-adapter): %v", o.cxt, err)
	} else {
		// The @openai/codex it bundles is installed next to it: the
		// binary is …/node_modules/@agentclientprotocol/codex-acp/dist/index.js.
		cxt.version = "@agentclientprotocol/codex-acp " + benchkit.PackageVersion(o.cxt, "..") +
			" (node " + benchkit.CommandLine(os.Environ(), "node", "--version") + "; bundles @openai/codex " +
			benchkit.PackageVersion(o.cxt, "../../../@openai/codex") + ", not used: CODEX_PATH=" + codexPath + ")"
	}
	cxr := codexAgent{
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
		cxr.version = "@zed-industries/codex-acp " + benchkit.PackageVersion(o.cxr, "..") +
			" (native binary, its own codex-core linked in; runs no codex executable)"
	}

	srv := fakeresponses.New(fakeresponses.Directives())
	defer srv.Close()

	shared := bridge
	shared.name = codexNameShared
	shared.argv = append(slices.Clone(bridge.argv), benchkit.SharedFlag)
	if selected(codexNameShared) {
		sh, err := newSharedHome(srv)
		if err != nil {
			fmt.Fprintf(os.Stderr, "benchagent codex: %v\n", err)
			return 1
		}
		defer sh.Close()
		shared.shared = sh
		shared.env = append(slices.Clone(bridge.env), sh.Env())
	}

	var agents []codexAgent
	for _, a := range []codexAgent{bridge, shared, direct, cxt, cxr} {
		if selected(a.name) && missing[a.name] == "" {
			agents = append(agents, a)
		}
	}

	fmt.Printf("codex:         %s (%s); run by acpbridge, app-server and codex-acp\n", codexReal, codexVersion)
	fmt.Printf("fake API:      %s/<agent>-<run>/v1 (fakeresponses.Directives, model %s)\n", strings.TrimSuffix(srv.URL, "/v1"), fakeresponses.Model)
	fmt.Printf("acpbridge:     %s — %s, ACPBRIDGE_CODEX=%s\n", o.Acpbridge, bridge.version, codexPath)
	if shared.shared != nil {
		fmt.Printf("%-14s %s, every run with one HOME; its daemon started by a run not counted, as after a user's first bridge\n",
			codexNameShared+":", strings.Join(shared.argv, " "))
	}
	fmt.Printf("app-server:    %s\n", strings.Join(direct.argv, " "))
	for _, a := range []codexAgent{cxt, cxr} {
		if !selected(a.name) {
			continue
		}
		if why := missing[a.name]; why != "" {
			fmt.Printf("%-14s (missing) %s\n", a.name+":", why)
		} else {
			fmt.Printf("%-14s %s — %s\n", a.name+":", a.argv[0], a.version)
		}
	}
	fmt.Printf("runs:          %d per agent; prompts %q then %q\n\n", o.N, codexPrompt1, codexPrompt2)

	if shared.shared != nil && slices.ContainsFunc(agents, func(a codexAgent) bool { return a.shared != nil }) {
		if r := codexRunOnce(o, shared, srv, "/"+codexNameShared+"-0", codexReal); r.Err != nil {
			fmt.Fprintf(os.Stderr, "benchagent codex: the run that starts the shared daemon failed: %v\n", r.Err)
			return 1
		}
	}
	results := benchkit.Repeat(o.Options, agents, func(a codexAgent) string { return a.name }, true,
		func(a codexAgent, prefix string) codexResult { return codexRunOnce(o, a, srv, prefix, codexReal) })
	codexReport(results, missing, selected, codexReal)
	// A failed acpbridge codexRun is a bug to look at, and a failed direct codexRun
	// makes the comparison meaningless; the adapters are only anchors, so
	// their failures are reported but don't fail the benchmark.
	for _, name := range []string{codexNameBridge, codexNameShared, nameDirect} {
		if len(benchkit.Succeeded(results[name])) != len(results[name]) {
			return 1
		}
	}
	return 0
}

// codexRunOnce runs codexAgent a once, its fake API requests under prefix, and
// returns its measurements.
func codexRunOnce(o codexOptions, a codexAgent, srv *fakeresponses.Server, prefix, codexReal string) (res codexResult) {
	fail := func(err error) codexResult { return codexResult{Result: benchkit.Result{Err: err}} }
	dirs, cleanup, err := benchkit.MakeDirs(os.Stderr, "benchcodex-"+a.name+"-", a.name+prefix, o.Keep, "tmp")
	if err != nil {
		return fail(err)
	}
	defer cleanup()
	home, codexHome := dirs.Home, filepath.Join(dirs.Home, ".codex")
	// Each codexRun's own base_url, so that its requests can be counted;
	// the shared runs' one, whose requests are counted from the run's start.
	baseURL := strings.TrimSuffix(srv.URL, "/v1") + prefix + "/v1"
	before := 0
	if sh := a.shared; sh != nil {
		home, codexHome, prefix, before = sh.Home, sh.codexHome, sh.prefix, len(srv.Requests())
	} else if err := fakeresponses.WriteHome(codexHome, baseURL, fakeresponses.HomeOptions{}); err != nil {
		return fail(err)
	}
	if a.noCatalog {
		if err := dropCatalog(filepath.Join(codexHome, "config.toml")); err != nil {
			return fail(err)
		}
	}
	p, err := dirs.Start(a.argv, append(fakeresponses.Env(home, codexHome), a.env...), codexReal)
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

	var s benchkit.Session
	if a.direct {
		s = &directSession{rc: newRPCClient(p.Stdin, p.Stdout)}
	} else {
		s = benchkit.NewACPSession(p.Stdin, p.Stdout, "benchcodex", o.Verbose, codexCheckAnswer)
	}
	res.Times, res.Err = benchkit.Measure(s, p.Started, o.Timeout, o.Think, dirs.Cwd, [2]string{codexPrompt1, codexPrompt2})
	return res
}

// newSharedHome makes the HOME of acpbridge-shared's runs, its model
// requests under its own prefix.
func newSharedHome(srv *fakeresponses.Server) (*sharedHome, error) {
	sh, err := benchkit.NewShared("benchcodex-shared-", "tmp")
	if err != nil {
		return nil, err
	}
	h := &sharedHome{Shared: sh, codexHome: filepath.Join(sh.Home, ".codex"), prefix: "/" + codexNameShared}
	baseURL := strings.TrimSuffix(srv.URL, "/v1") + h.prefix + "/v1"
	if err := fakeresponses.WriteHome(h.codexHome, baseURL, fakeresponses.HomeOptions{}); err != nil {
		sh.Close()
		return nil, err
	}
	return h, nil
}

// countRequests notes the fake's requests of the codexRun, those under prefix.
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

// codexCheckAnswer checks that text, the codexAgent's text of the turn of prompt,
// has the fake's answer to it.
func codexCheckAnswer(prompt, text string) error {
	if want := fakeresponses.AnswerTextPrefix + prompt; !strings.Contains(text, want) {
		return fmt.Errorf("the agent's text was %q, want the fake's answer %q", text, want)
	}
	return nil
}

// directSession drives a codexRun on the app-server's own protocol (codex.md
// §3-5).
type directSession struct {
	rc       *rpcClient
	threadID string
}

// Initialize sends initialize and returns the app-server's userAgent.
func (d *directSession) Initialize(ctx context.Context) (string, error) {
	var ir struct {
		UserAgent string `json:"userAgent"`
	}
	err := d.rc.call(ctx, "initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "benchcodex", "title": "benchcodex", "version": "0"},
		"capabilities": map[string]any{"experimentalApi": false},
	}, &ir)
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	return ir.UserAgent, nil
}

// Initialized sends the initialized notification.
func (d *directSession) Initialized() error {
	if err := d.rc.notify("initialized", nil); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	return nil
}

// NewSession sends thread/start.
func (d *directSession) NewSession(ctx context.Context, cwd string) error {
	var tr struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := d.rc.call(ctx, "thread/start", map[string]any{"cwd": cwd}, &tr); err != nil {
		return fmt.Errorf("thread/start: %w", err)
	}
	if tr.Thread.ID == "" {
		return errors.New("thread/start: no thread id in the result")
	}
	d.threadID = tr.Thread.ID
	return nil
}

// Turn sends turn/start and waits for the turn's turn/completed.
func (d *directSession) Turn(ctx context.Context, prompt string) error {
	d.rc.text.Reset()
	var sr struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	err := d.rc.call(ctx, "turn/start", map[string]any{"threadId": d.threadID,
		"input": []any{map[string]any{"type": "text", "text": prompt, "text_elements": []any{}}}}, &sr)
	if err != nil {
		return fmt.Errorf("turn/start %q: %w", prompt, err)
	}
	status, err := d.rc.waitTurn(ctx, sr.Turn.ID)
	if err != nil {
		return fmt.Errorf("turn %q: %w", prompt, err)
	}
	if status != "completed" {
		return fmt.Errorf("turn %q: status %q, want completed", prompt, status)
	}
	if err := codexCheckAnswer(prompt, d.rc.text.String()); err != nil {
		return fmt.Errorf("turn %q: %w", prompt, err)
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
	readErr  error               // why the reader stopped
	gone     chan struct{}       // closed when the reader stops
	text     benchkit.TextBuffer // the codexAgent message text of the turn
	complete chan turnEnd        // turn/completed, in order
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

func (c *rpcClient) call(ctx context.Context, method string, params, codexResult any) error {
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
		if codexResult != nil {
			return json.Unmarshal(m.Result, codexResult)
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
			c.text.WriteString(p.Delta)
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

// --- the codexReport ---

// ratios are the ratio columns of the table.
var ratios = []benchkit.Ratio{
	{Title: "bridge/direct", Num: codexNameBridge, Den: nameDirect},
	{Title: "CXT/bridge", Num: nameCXT, Den: codexNameBridge},
	{Title: "CXR/bridge", Num: nameCXR, Den: codexNameBridge},
	{Title: "CXR/shared", Num: nameCXR, Den: codexNameShared},
}

// codexReport prints the notes on the adapters, the table of results and
// what each codexAgent's process tree ran.
func codexReport(results map[string][]codexResult, missing map[string]string, selected func(string) bool, codexReal string) {
	for _, name := range codexAgentOrder {
		if !selected(name) || len(benchkit.Succeeded(results[name])) > 0 {
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
				name, benchkit.ExitGrace, lingered, len(results[name]))
		}
	}
	fmt.Println()

	benchkit.Table[codexResult]{
		Metrics: benchkit.Metrics(benchkit.Labels{NewSession: "session/new (direct: thread/start)", Child: "codex",
			Matching: "pinned codex", API: "Responses", WallClock: true}),
		Agents:  codexAgentOrder,
		Results: results,
		Ratios:  ratios,
		Width:   22,
	}.Print(os.Stdout)
	printOverhead(benchkit.Succeeded(results[codexNameBridge]), benchkit.Succeeded(results[nameDirect]))
	fmt.Println()
	fmt.Println("bridge/direct is acpbridge's overhead over codex app-server driven directly (for \"agent process alone\"")
	fmt.Println("it compares acpbridge's own process with the app-server's). acpbridge starts the shared app-server at the")
	fmt.Println("first session/new without waiting for it, and its first prompt waits for the server and thread/start: so")
	fmt.Println("compare start → end of turn 1, not its parts. CXT/bridge and CXR/bridge compare each npm adapter with")
	fmt.Println("acpbridge (CXT = @agentclientprotocol/codex-acp, CXR = @zed-industries/codex-acp). acpbridge-shared is")
	fmt.Println("acpbridge --shared on a daemon app-server already running (started by a run not counted): its memory")
	fmt.Println("columns leave the daemon out, which all of a user's bridges share.")
	for _, name := range codexAgentOrder {
		benchkit.PrintRuns(name, results[name], func(r codexResult) []string { return r.Exes },
			func(r codexResult) string { return r.AgentInfo }, func(r codexResult) []string { return r.userAgents })
	}
	fmt.Println()
}

// printOverhead prints the differences of medians between the successful
// runs of acpbridge b and those of the app-server driven directly d.
func printOverhead(b, d []codexResult) {
	if len(b) == 0 || len(d) == 0 {
		return
	}
	diff := func(get func(benchkit.Result) float64) float64 {
		return benchkit.MedianOf(b, get) - benchkit.MedianOf(d, get)
	}
	fmt.Printf("\nacpbridge − app-server (medians): start → end of turn 1 %+.0f ms, warm turn %+.1f ms, "+
		"peak tree RSS %+.1f MiB, peak tree PSS %+.1f MiB\n",
		diff(func(r benchkit.Result) float64 { return benchkit.Ms(r.EndOfTurn1) }),
		diff(func(r benchkit.Result) float64 { return benchkit.Ms(r.Turn2) }),
		diff(func(r benchkit.Result) float64 { return benchkit.MiB(r.PeakTree) }),
		diff(func(r benchkit.Result) float64 { return benchkit.MiB(r.PeakPSS) }))
}

// adapterNote says how an adapter that ran found codex and reached the
// model: CXT runs the pinned binary, CXR its own linked-in codex-core.
func adapterNote(name string, rs []codexResult, codexReal string) string {
	rs = benchkit.Succeeded(rs)
	if len(rs) == 0 {
		return ""
	}
	var uas, others []string
	ranPinned := 0
	for _, r := range rs {
		uas = append(uas, r.userAgents...)
		others = append(others, r.otherRequests...)
		if slices.Contains(r.Exes, codexReal) {
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

// --- helpers ---

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
