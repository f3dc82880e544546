// Command recordcodex records what the real Codex CLI prints as
// `codex app-server` (JSON-RPC over stdio), against the scripted fake
// Responses API of translators/codex/fakeresponses, offline.
//
// Usage:
//
//	go run ./scripts/recordcodex -o FILE [flags] PROMPT...
//	bash scripts/record-codex.sh -o FILE [flags] PROMPT...
//
// It starts the fake (with fakeresponses.Directives, so the prompts are its
// directives: "run: echo hi", "patch: hello.txt", "think about it", …),
// writes a CODEX_HOME for it (fakeresponses.WriteHome: no approval_policy
// or sandbox_mode unless -home-approval / -home-sandbox), then runs codex
// ($CODEX_BIN, else the native binary under .tools/codex in the repository,
// -root or the one holding the working directory; see
// scripts/install-tools.sh) as
//
//	codex app-server -c 'tools.update_plan={enabled=true}'
//
// with the environment of fakeresponses.Env, a fresh HOME, CODEX_HOME
// HOME/.codex and the working directory HOME/project. It sends initialize
// (clientInfo name "acpbridge") and initialized, then thread/start {cwd,
// approvalPolicy, sandbox} (-approval, -sandbox; "" leaves one out), then
// each PROMPT as one turn/start, waiting for that turn's turn/completed
// before the next (any status: a failed turn is recorded too). Every
// approval request (item/commandExecution/requestApproval,
// item/fileChange/requestApproval, item/permissions/requestApproval and
// the legacy execCommandApproval / applyPatchApproval) is answered
// {"decision": -decision}; any other request from codex gets a JSON-RPC
// error. After the last turn it closes codex's stdin and waits for it to
// exit.
//
// Every line codex printed on stdout goes to the -o file as it was
// printed, one raw JSON-RPC message per line (server → client only), with
// the temporary paths rewritten: the working directory to
// /home/dev/project, CODEX_HOME to /home/dev/.codex and HOME to /home/dev.
// Prompts may use those paths: they are mapped the other way before codex
// sees them. Timings go to stderr. The exit status is 0 when every turn
// completed and codex exited cleanly, 1 otherwise, 2 for a usage error.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"github.com/acpbridge/acpbridge/scripts/internal/recordkit"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/translators/codex/fakeresponses"
)

// The paths recordings show instead of the temporary ones.
const (
	recordedHome      = "/home/dev"
	recordedCodexHome = "/home/dev/.codex"
	recordedCwd       = "/home/dev/project"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

type options struct {
	out          string
	codex        string
	root         string
	approval     string
	sandbox      string
	homeApproval string
	homeSandbox  string
	decision     string
	clientName   string
	timeout      time.Duration
	requests     string
	keep         bool
	extra        []string
	prompts      []string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("recordcodex", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: recordcodex -o FILE [flags] PROMPT...")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.out, "o", "", "write codex's stdout lines to `file` (required; - for stdout)")
	fs.StringVar(&o.codex, "codex", "", "the codex `binary` (default $CODEX_BIN, else the native binary under .tools/codex)")
	fs.StringVar(&o.root, "root", "", "the repository `dir` whose .tools/codex holds codex (default: the one holding the working directory)")
	fs.StringVar(&o.approval, "approval", "untrusted", "thread/start's approvalPolicy (\"\" to leave it out)")
	fs.StringVar(&o.sandbox, "sandbox", "danger-full-access", "thread/start's sandbox (\"\" to leave it out)")
	fs.StringVar(&o.homeApproval, "home-approval", "", "config.toml's approval_policy (\"\" to leave it out)")
	fs.StringVar(&o.homeSandbox, "home-sandbox", "", "config.toml's sandbox_mode (\"\" to leave it out)")
	fs.StringVar(&o.decision, "decision", "accept", "the decision for every approval request (accept, acceptForSession, decline, cancel)")
	fs.StringVar(&o.clientName, "client", "acpbridge", "initialize's clientInfo.name (codex sends it upstream as the originator)")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "how long initialize and each turn may take")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary HOME (with CODEX_HOME and the project directory) and print its path")
	fs.StringVar(&o.requests, "requests", "", "also write the fake API's decoded requests, as JSON, to `file`")
	extra := fs.String("args", "", "extra codex app-server arguments, space-separated")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	o.prompts = fs.Args()
	o.extra = strings.Fields(*extra)
	if o.out == "" || len(o.prompts) == 0 {
		fs.Usage()
		return o, errors.New("need -o and at least one prompt")
	}
	return o, nil
}

func run(args []string, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "recordcodex:", err)
		return 2
	}
	if o.codex == "" {
		o.codex, err = findCodex(o.root)
		if err != nil {
			fmt.Fprintln(stderr, "recordcodex:", err)
			return 1
		}
	}
	if err := record(o, stderr); err != nil {
		fmt.Fprintln(stderr, "recordcodex:", err)
		return 1
	}
	return 0
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

// newRewriter rewrites cwd and codexHome (both inside home) and home, in
// each of the given spellings.
func newRewriter(cwds, codexHomes, homes []string) recordkit.Rewriter {
	return recordkit.NewRewriter(recordkit.Rule{From: cwds, To: recordedCwd},
		recordkit.Rule{From: codexHomes, To: recordedCodexHome}, recordkit.Rule{From: homes, To: recordedHome})
}

// message is the part of a JSON-RPC line the recorder looks at.
type message struct {
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

// answer is the reply to a request from codex: the decision for an
// approval request, else a JSON-RPC "method not found" error.
func answer(id json.RawMessage, method, decision string) map[string]any {
	if approvalMethods[method] {
		d := decision
		if method == "execCommandApproval" || method == "applyPatchApproval" {
			d = legacyDecision(decision)
		}
		return map[string]any{"id": id, "result": map[string]any{"decision": d}}
	}
	return map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "recordcodex does not handle " + method}}
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

func record(o options, stderr io.Writer) error {
	stderr = &recordkit.LockedWriter{W: stderr}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "recordcodex: "+format+"\n", args...) }

	home, err := os.MkdirTemp("", "recordcodex-")
	if err != nil {
		return err
	}
	if o.keep {
		logf("keeping HOME %s", home)
	} else {
		defer os.RemoveAll(home)
	}
	cwd := filepath.Join(home, "project")
	codexHome := filepath.Join(home, ".codex")
	for _, d := range []string{cwd, filepath.Join(home, "tmp")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			return err
		}
	}
	rw := newRewriter(recordkit.Spellings(cwd), recordkit.Spellings(codexHome), recordkit.Spellings(home))
	toReal := strings.NewReplacer(recordedCwd, cwd, recordedCodexHome, codexHome, recordedHome, home)

	fake := fakeresponses.New(fakeresponses.Directives())
	defer fake.Close()
	if err := fakeresponses.WriteHome(codexHome, fake.URL, fakeresponses.HomeOptions{
		ApprovalPolicy: o.homeApproval, SandboxMode: o.homeSandbox,
	}); err != nil {
		return err
	}

	var out io.Writer = os.Stdout
	if o.out != "-" {
		f, err := os.Create(o.out)
		if err != nil {
			return err
		}
		defer f.Close()
		out = f
	}
	bw := bufio.NewWriter(out)
	defer bw.Flush()

	args := append([]string{"app-server", "-c", "tools.update_plan={enabled=true}"}, o.extra...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, o.codex, args...)
	cmd.Dir = cwd
	cmd.Env = fakeresponses.Env(home, codexHome)
	cmd.Stderr = stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	logf("started %s %s", o.codex, strings.Join(recordkit.QuoteAll(args), " "))

	var wmu sync.Mutex
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		wmu.Lock()
		defer wmu.Unlock()
		_, err = stdin.Write(append(b, '\n'))
		return err
	}

	responses := make(chan message, 16)
	type completion struct{ turnID, status string }
	completions := make(chan completion, len(o.prompts)+16)
	readerDone := make(chan struct{})
	var scanErr error
	var firstLine time.Duration
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		n := 0
		for sc.Scan() {
			line := sc.Bytes()
			if n == 0 {
				firstLine = time.Since(start)
			}
			n++
			bw.WriteString(rw.Rewrite(string(line)))
			bw.WriteByte('\n')
			bw.Flush() // so that -o - shows the stream as it comes
			var msg message
			if err := json.Unmarshal(line, &msg); err != nil {
				logf("stdout line %d is not JSON: %v", n, err)
				continue
			}
			switch {
			case msg.Method != "" && len(msg.ID) > 0: // a request from codex
				if err := send(answer(msg.ID, msg.Method, o.decision)); err != nil {
					logf("answering %s %s: %v", msg.Method, msg.ID, err)
				}
			case msg.Method == "turn/completed":
				var p struct {
					Turn struct{ ID, Status string }
				}
				_ = json.Unmarshal(msg.Params, &p)
				select {
				case completions <- completion{p.Turn.ID, p.Turn.Status}:
				default:
				}
			case msg.Method == "":
				select {
				case responses <- msg:
				default:
					logf("dropped an unexpected response %s", line)
				}
			}
		}
		scanErr = sc.Err()
	}()

	nextID := 1
	call := func(method string, params any) (json.RawMessage, error) {
		id := nextID
		nextID++
		req := map[string]any{"id": id, "method": method}
		if params != nil {
			req["params"] = params
		}
		if err := send(req); err != nil {
			return nil, fmt.Errorf("sending %s: %w", method, err)
		}
		deadline := time.After(o.timeout)
		for {
			select {
			case m := <-responses:
				if string(m.ID) != strconv.Itoa(id) {
					logf("response to id %s while waiting for %d", m.ID, id)
					continue
				}
				if m.Error != nil {
					return nil, fmt.Errorf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
				}
				return m.Result, nil
			case <-readerDone:
				return nil, fmt.Errorf("codex's stdout ended before the %s response", method)
			case <-deadline:
				return nil, fmt.Errorf("no %s response within %v", method, o.timeout)
			}
		}
	}

	failed := func() error {
		if _, err := call("initialize", map[string]any{
			"clientInfo":   map[string]any{"name": o.clientName, "title": o.clientName, "version": "0.0.1"},
			"capabilities": map[string]any{"experimentalApi": false},
		}); err != nil {
			return err
		}
		logf("initialize answered %v after spawn", time.Since(start).Round(time.Millisecond))
		if err := send(map[string]any{"method": "initialized"}); err != nil {
			return err
		}
		params := map[string]any{"cwd": cwd}
		if o.approval != "" {
			params["approvalPolicy"] = o.approval
		}
		if o.sandbox != "" {
			params["sandbox"] = o.sandbox
		}
		t0 := time.Now()
		res, err := call("thread/start", params)
		if err != nil {
			return err
		}
		var ts struct{ Thread struct{ ID string } }
		if err := json.Unmarshal(res, &ts); err != nil || ts.Thread.ID == "" {
			return fmt.Errorf("thread/start result %s: %v", res, err)
		}
		logf("thread/start answered in %v", time.Since(t0).Round(time.Millisecond))
		for i, p := range o.prompts {
			t0 := time.Now()
			res, err := call("turn/start", map[string]any{
				"threadId": ts.Thread.ID,
				"input":    []any{map[string]any{"type": "text", "text": toReal.Replace(p), "text_elements": []any{}}},
			})
			if err != nil {
				return fmt.Errorf("turn %d: %w", i+1, err)
			}
			var tr struct{ Turn struct{ ID string } }
			_ = json.Unmarshal(res, &tr)
			deadline := time.After(o.timeout)
		wait:
			for {
				select {
				case c := <-completions:
					if c.turnID != tr.Turn.ID {
						continue
					}
					logf("turn %d (%q): %s after %v", i+1, p, c.status, time.Since(t0).Round(time.Millisecond))
					break wait
				case <-readerDone:
					return fmt.Errorf("codex's stdout ended during turn %d", i+1)
				case <-deadline:
					return fmt.Errorf("turn %d (%q): no turn/completed within %v", i+1, p, o.timeout)
				}
			}
		}
		return nil
	}()

	// Close stdin, and give codex 10s to exit before it is killed; read
	// all of its stdout before Wait closes the pipe.
	t0 := time.Now()
	stdin.Close()
	select {
	case <-readerDone:
	case <-time.After(10 * time.Second):
		logf("codex did not exit within 10s of stdin closing; killing it")
		cancel()
		<-readerDone
	}
	if scanErr != nil && failed == nil {
		failed = fmt.Errorf("reading codex's stdout: %w", scanErr)
	}
	werr := cmd.Wait()
	logf("first stdout line %v after spawn; exit %v after stdin closed (%v in all)",
		firstLine.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	if werr != nil && failed == nil {
		failed = fmt.Errorf("codex: %w", werr)
	}
	if err := bw.Flush(); err != nil && failed == nil {
		failed = err
	}
	if o.requests != "" {
		if err := recordkit.WriteJSON(o.requests, fake.Requests(), rw); err != nil && failed == nil {
			failed = err
		}
	}
	return failed
}
