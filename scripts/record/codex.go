package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/scripts/internal/recordkit"
	"github.com/acpbridge/acpbridge/translators/codex/fakeresponses"
)

// recordedCodexHome is the CODEX_HOME recordings show.
const recordedCodexHome = "/home/dev/.codex"

// codexOptions are record codex's flags and prompts.
type codexOptions struct {
	common
	codex        string
	root         string
	approval     string
	sandbox      string
	homeApproval string
	homeSandbox  string
	decision     string
	clientName   string
}

// parseCodexFlags parses record codex's arguments.
func parseCodexFlags(args []string, stderr io.Writer) (codexOptions, error) {
	var o codexOptions
	fs := flags("codex", stderr)
	fs.StringVar(&o.codex, "codex", "", "the codex `binary` (default $CODEX_BIN, else the native binary under .tools/codex)")
	fs.StringVar(&o.root, "root", "", "the repository `dir` whose .tools/codex holds codex (default: the one holding the working directory)")
	fs.StringVar(&o.approval, "approval", "untrusted", "thread/start's approvalPolicy (\"\" to leave it out)")
	fs.StringVar(&o.sandbox, "sandbox", "danger-full-access", "thread/start's sandbox (\"\" to leave it out)")
	fs.StringVar(&o.homeApproval, "home-approval", "", "config.toml's approval_policy (\"\" to leave it out)")
	fs.StringVar(&o.homeSandbox, "home-sandbox", "", "config.toml's sandbox_mode (\"\" to leave it out)")
	fs.StringVar(&o.decision, "decision", "accept", "the decision for every approval request (accept, acceptForSession, decline, cancel)")
	fs.StringVar(&o.clientName, "client", "acpbridge", "initialize's clientInfo.name (codex sends it upstream as the originator)")
	err := o.parse(fs, args, "with CODEX_HOME and the project directory", "codex app-server")
	return o, err
}

// runCodex is record codex; it returns the exit status.
func runCodex(args []string, stderr io.Writer) int {
	return runAgent("codex", args, stderr, parseCodexFlags, recordCodex)
}

// findCodex is $CODEX_BIN, else fakeresponses.InstalledBin in root, or
// without one in the repository that holds the working directory.
func findCodex(root string) (string, error) {
	if p := os.Getenv("CODEX_BIN"); p != "" {
		return p, nil
	}
	if root == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", err
		}
		if root, err = fakeresponses.RepoRoot(wd); err != nil {
			return "", fmt.Errorf("%v, and CODEX_BIN is not set", err)
		}
	}
	p := fakeresponses.InstalledBin(root)
	if p == "" {
		return "", errors.New("codex has no binary for this platform; set CODEX_BIN")
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no codex at %s: run scripts/install-tools.sh or set CODEX_BIN", p)
	}
	return p, nil
}

// codexRewriter rewrites cwd and codexHome (both inside home) and home, in
// each of the given spellings.
func codexRewriter(cwds, codexHomes, homes []string) recordkit.Rewriter {
	return recordkit.NewRewriter(recordkit.Rule{From: cwds, To: recordedCwd},
		recordkit.Rule{From: codexHomes, To: recordedCodexHome}, recordkit.Rule{From: homes, To: recordedHome})
}

// codexMessage is the part of a JSON-RPC line the recorder looks at.
type codexMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// approvalMethods are the server requests that take {"decision": …}.
var approvalMethods = map[string]bool{
	"item/commandExecution/requestApproval": true,
	"item/fileChange/requestApproval":       true,
	"item/permissions/requestApproval":      true,
	"execCommandApproval":                   true,
	"applyPatchApproval":                    true,
}

// codexAnswer is the reply to a request from codex: the decision for an
// approval request, else a JSON-RPC "method not found" error.
func codexAnswer(id json.RawMessage, method, decision string) map[string]any {
	if approvalMethods[method] {
		d := decision
		if method == "execCommandApproval" || method == "applyPatchApproval" {
			d = legacyDecision(decision)
		}
		return map[string]any{"id": id, "result": map[string]any{"decision": d}}
	}
	return map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "record codex does not handle " + method}}
}

// legacyDecision maps a v2 decision to the legacy ReviewDecision.
func legacyDecision(d string) string {
	switch d {
	case "accept":
		return "approved"
	case "acceptForSession":
		return "approved_for_session"
	case "decline":
		return "denied"
	case "cancel":
		return "abort"
	}
	return d
}

// recordCodex records o's prompts with codex app-server on the fake
// Responses API.
func recordCodex(o codexOptions, stderr io.Writer) error {
	var err error
	if o.codex, err = binary(o.codex, func() (string, error) { return findCodex(o.root) }); err != nil {
		return err
	}
	r, err := newRecorder("codex", stderr, o.keep, "tmp")
	if err != nil {
		return err
	}
	defer r.done()
	codexHome := filepath.Join(r.home, ".codex")
	rw := codexRewriter(recordkit.Spellings(r.cwd), recordkit.Spellings(codexHome), recordkit.Spellings(r.home))
	toReal := strings.NewReplacer(recordedCwd, r.cwd, recordedCodexHome, codexHome, recordedHome, r.home)
	fake := fakeresponses.New(fakeresponses.Directives())
	defer fake.Close()
	if err := fakeresponses.WriteHome(codexHome, fake.URL, fakeresponses.HomeOptions{
		ApprovalPolicy: o.homeApproval, SandboxMode: o.homeSandbox,
	}); err != nil {
		return err
	}
	args := append([]string{"app-server", "-c", "tools.update_plan={enabled=true}"}, o.extra...)
	cl := cli{name: "codex", path: o.codex, args: args, env: fakeresponses.Env(r.home, codexHome)}
	return r.record(o.common, cl, rw, func() any { return fake.Requests() }, func(s *session) conversation {
		return newCodexConversation(s, o, r.cwd, toReal)
	})
}

// codexCompletion is a turn/completed notification.
type codexCompletion struct{ turnID, status string }

// codexConversation initializes codex, starts a thread and runs each
// prompt as a turn, waiting for its turn/completed; it answers codex's
// requests (codexAnswer).
type codexConversation struct {
	*session
	o           codexOptions
	cwd         string
	toReal      *strings.Replacer    // maps the recorded paths in prompts to the real ones
	responses   chan codexMessage    // responses to the recorder's requests
	completions chan codexCompletion // turn/completed notifications
	nextID      int                  // of the next request; used by converse alone
}

// newCodexConversation is the conversation with the CLI of s, for o's
// prompts.
func newCodexConversation(s *session, o codexOptions, cwd string, toReal *strings.Replacer) *codexConversation {
	return &codexConversation{session: s, o: o, cwd: cwd, toReal: toReal, responses: make(chan codexMessage, 16),
		completions: make(chan codexCompletion, len(o.prompts)+16), nextID: 1}
}

// handle answers a request from the CLI, and passes on what the
// conversation waits for.
func (c *codexConversation) handle(line []byte, n int) {
	var msg codexMessage
	if !c.decode(line, n, &msg) {
		return
	}
	switch {
	case msg.Method != "" && len(msg.ID) > 0: // a request from codex
		if err := c.send(codexAnswer(msg.ID, msg.Method, c.o.decision)); err != nil {
			c.logf("answering %s %s: %v", msg.Method, msg.ID, err)
		}
	case msg.Method == "turn/completed":
		c.completed(msg.Params)
	case msg.Method == "":
		select {
		case c.responses <- msg:
		default:
			c.logf("dropped an unexpected response %s", line)
		}
	}
}

// completed passes on a turn/completed notification, unless nobody can
// wait for it.
func (c *codexConversation) completed(params json.RawMessage) {
	var p struct {
		Turn struct{ ID, Status string }
	}
	_ = json.Unmarshal(params, &p)
	select {
	case c.completions <- codexCompletion{p.Turn.ID, p.Turn.Status}:
	default:
	}
}

// call sends a request and waits for its response.
func (c *codexConversation) call(method string, params any) (json.RawMessage, error) {
	id := c.nextID
	c.nextID++
	req := map[string]any{"id": id, "method": method}
	if params != nil {
		req["params"] = params
	}
	if err := c.send(req); err != nil {
		return nil, fmt.Errorf("sending %s: %w", method, err)
	}
	m, err := next(c.session, c.responses, c.o.timeout, func(m codexMessage) bool {
		if string(m.ID) != strconv.Itoa(id) {
			c.logf("response to id %s while waiting for %d", m.ID, id)
			return false
		}
		return true
	}, fmt.Sprintf("codex's stdout ended before the %s response", method), fmt.Sprintf("no %s response within %v", method, c.o.timeout))
	if err != nil {
		return nil, err
	}
	if m.Error != nil {
		return nil, fmt.Errorf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	return m.Result, nil
}

// converse initializes the CLI, then runs each prompt as a turn.
func (c *codexConversation) converse() error {
	if err := c.initialize(); err != nil {
		return err
	}
	thread, err := c.startThread()
	if err != nil {
		return err
	}
	for i, p := range c.o.prompts {
		if err := c.turn(thread, i+1, p); err != nil {
			return err
		}
	}
	return nil
}

// initialize sends initialize, as client -client, then initialized.
func (c *codexConversation) initialize() error {
	if _, err := c.call("initialize", map[string]any{
		"clientInfo":   map[string]any{"name": c.o.clientName, "title": c.o.clientName, "version": "0.0.1"},
		"capabilities": map[string]any{"experimentalApi": false},
	}); err != nil {
		return err
	}
	c.logf("initialize answered %v after spawn", time.Since(c.start).Round(time.Millisecond))
	return c.send(map[string]any{"method": "initialized"})
}

// startThread sends thread/start (with -approval and -sandbox unless
// empty) and returns the thread's id.
func (c *codexConversation) startThread() (string, error) {
	params := map[string]any{"cwd": c.cwd}
	if c.o.approval != "" {
		params["approvalPolicy"] = c.o.approval
	}
	if c.o.sandbox != "" {
		params["sandbox"] = c.o.sandbox
	}
	t0 := time.Now()
	res, err := c.call("thread/start", params)
	if err != nil {
		return "", err
	}
	var ts struct{ Thread struct{ ID string } }
	if err := json.Unmarshal(res, &ts); err != nil || ts.Thread.ID == "" {
		return "", fmt.Errorf("thread/start result %s: %v", res, err)
	}
	c.logf("thread/start answered in %v", time.Since(t0).Round(time.Millisecond))
	return ts.Thread.ID, nil
}

// turn sends prompt i (from 1) as a turn/start on thread and waits for the
// turn's turn/completed.
func (c *codexConversation) turn(thread string, i int, prompt string) error {
	t0 := time.Now()
	res, err := c.call("turn/start", map[string]any{
		"threadId": thread,
		"input":    []any{map[string]any{"type": "text", "text": c.toReal.Replace(prompt), "text_elements": []any{}}},
	})
	if err != nil {
		return fmt.Errorf("turn %d: %w", i, err)
	}
	var tr struct{ Turn struct{ ID string } }
	_ = json.Unmarshal(res, &tr)
	done, err := next(c.session, c.completions, c.o.timeout, func(d codexCompletion) bool { return d.turnID == tr.Turn.ID },
		fmt.Sprintf("codex's stdout ended during turn %d", i), fmt.Sprintf("turn %d (%q): no turn/completed within %v", i, prompt, c.o.timeout))
	if err == nil {
		c.logf("turn %d (%q): %s after %v", i, prompt, done.status, time.Since(t0).Round(time.Millisecond))
	}
	return err
}

// excuse leaves every exit error of codex an error.
func (c *codexConversation) excuse(err error) error { return err }
