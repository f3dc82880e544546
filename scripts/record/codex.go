package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/scripts/internal/recordkit"
)

// recordedCodexHome is the CODEX_HOME recordings show.
const recordedCodexHome = "/home/dev/.codex"

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

func runCodex(args []string, stderr io.Writer) int {
	return runAgent("codex", args, stderr, parseCodexFlags, func(o codexOptions, stderr io.Writer) error {
		if o.codex == "" {
			var err error
			if o.codex, err = findCodex(o.root); err != nil {
				return err
			}
		}
		return recordCodex(o, stderr)
	})
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

func recordCodex(o codexOptions, stderr io.Writer) error {
	stderr = &recordkit.LockedWriter{W: stderr}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "record codex: "+format+"\n", args...) }

	home, cwd, done, err := tempHome("recordcodex-", o.keep, logf, "tmp")
	if err != nil {
		return err
	}
	defer done()
	codexHome := filepath.Join(home, ".codex")
	rw := codexRewriter(recordkit.Spellings(cwd), recordkit.Spellings(codexHome), recordkit.Spellings(home))
	toReal := strings.NewReplacer(recordedCwd, cwd, recordedCodexHome, codexHome, recordedHome, home)

	fake := fakeresponses.New(fakeresponses.Directives())
	defer fake.Close()
	if err := fakeresponses.WriteHome(codexHome, fake.URL, fakeresponses.HomeOptions{
		ApprovalPolicy: o.homeApproval, SandboxMode: o.homeSandbox,
	}); err != nil {
		return err
	}

	bw, closeOut, err := output(o.out)
	if err != nil {
		return err
	}
	defer closeOut()

	args := append([]string{"app-server", "-c", "tools.update_plan={enabled=true}"}, o.extra...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := startAgent(ctx, o.codex, args, cwd, fakeresponses.Env(home, codexHome), stderr, logf)
	if err != nil {
		return err
	}
	stdout, start, send := p.stdout, p.start, p.send

	responses := make(chan codexMessage, 16)
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
			var msg codexMessage
			if err := json.Unmarshal(line, &msg); err != nil {
				logf("stdout line %d is not JSON: %v", n, err)
				continue
			}
			switch {
			case msg.Method != "" && len(msg.ID) > 0: // a request from codex
				if err := send(codexAnswer(msg.ID, msg.Method, o.decision)); err != nil {
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

	werr := p.end("codex", readerDone, cancel, firstLine, logf)
	if scanErr != nil && failed == nil {
		failed = fmt.Errorf("reading codex's stdout: %w", scanErr)
	}
	if werr != nil && failed == nil {
		failed = fmt.Errorf("codex: %w", werr)
	}
	return finish(failed, bw, o.common, fake.Requests(), rw)
}
