// Command recordclaude records what the real Claude Code CLI prints in its
// long-lived stream-json mode, against the scripted fake Messages API of
// translators/claude/fakeapi, offline.
//
// Usage:
//
//	go run ./scripts/recordclaude -o FILE [flags] PROMPT...
//	bash scripts/record-claude.sh -o FILE [flags] PROMPT...
//
// It starts the fake (with fakeapi.Directives, so the prompts are its
// directives: "RUN_BASH: echo hi", "THINK about it", …), then the CLI
// ($CLAUDE_BIN, else .tools/claude/node_modules/.bin/claude under the
// repository root; see scripts/install-tools.sh) as the SDKs run it:
//
//	claude --output-format stream-json --verbose --input-format stream-json
//	       --include-partial-messages --permission-prompt-tool stdio
//	       --permission-mode default --setting-sources ""
//
// with the environment of fakeapi.Env, a fresh HOME and the working
// directory HOME/project. It sends the initialize control request, then
// each PROMPT as one user message, waiting for that turn's result line
// before the next (any result: an API error turn is recorded too). Every
// can_use_tool request is allowed (echoing the tool's input as
// updatedInput), every hook_callback is answered {"continue":true}, and
// any other request from the CLI gets an error response. After the last
// result it closes the CLI's stdin and waits for it to exit.
//
// Every line the CLI printed on stdout goes to the -o file, one raw
// stream-json line per line, with the temporary paths rewritten: the
// working directory to /home/dev/project, HOME to /home/dev (and their
// project slugs to -home-dev-project and -home-dev). Prompts may use those
// paths: they are mapped the other way before the CLI sees them, so that
// "WRITE_FILE: /home/dev/project/notes.txt hi" writes into the temporary
// project and is recorded as written. Timings go to stderr.
// The exit status is 0 when every turn ended with a result and the CLI
// exited, 1 otherwise, 2 for a usage error.
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
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/translators/claude/fakeapi"
)

// The paths recordings show instead of the temporary ones.
const (
	recordedHome = "/home/dev"
	recordedCwd  = "/home/dev/project"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

type options struct {
	out      string
	claude   string
	mode     string
	partial  bool
	hooks    bool
	timeout  time.Duration
	requests string
	keep     bool
	extra    []string
	prompts  []string
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("recordclaude", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: recordclaude -o FILE [flags] PROMPT...")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.out, "o", "", "write the CLI's stdout lines to `file` (required; - for stdout)")
	fs.StringVar(&o.claude, "claude", "", "the claude `binary` (default $CLAUDE_BIN, else .tools/claude/node_modules/.bin/claude)")
	fs.StringVar(&o.mode, "mode", "default", "the CLI's --permission-mode")
	fs.BoolVar(&o.partial, "partial", true, "pass --include-partial-messages")
	fs.BoolVar(&o.hooks, "hooks", false, "register PreToolUse and PostToolUse hook callbacks in initialize")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "how long initialize and each turn may take")
	fs.BoolVar(&o.keep, "keep", false, "keep the temporary HOME (and its project directory) and print its path")
	fs.StringVar(&o.requests, "requests", "", "also write the fake API's decoded requests, as JSON, to `file`")
	extra := fs.String("args", "", "extra CLI arguments, space-separated")
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
		fmt.Fprintln(stderr, "recordclaude:", err)
		return 2
	}
	if o.claude == "" {
		o.claude, err = findClaude()
		if err != nil {
			fmt.Fprintln(stderr, "recordclaude:", err)
			return 1
		}
	}
	if err := record(o, stderr); err != nil {
		fmt.Fprintln(stderr, "recordclaude:", err)
		return 1
	}
	return 0
}

// findClaude is $CLAUDE_BIN, else .tools/claude/node_modules/.bin/claude in
// the repository that holds the working directory.
func findClaude() (string, error) {
	if p := os.Getenv("CLAUDE_BIN"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, ".tools", "claude", "node_modules", ".bin", "claude")
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("no claude at %s: run scripts/install-tools.sh or set CLAUDE_BIN", p)
			}
			return p, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", errors.New("no go.mod above the working directory, and CLAUDE_BIN is not set")
		}
		dir = up
	}
}

// newRewriter rewrites cwd (inside home) and home, in each of the given
// spellings, and their project slugs.
func newRewriter(cwds, homes []string) recordkit.Rewriter {
	return recordkit.NewRewriter(
		recordkit.Rule{From: cwds, To: recordedCwd}, recordkit.Rule{From: slugs(cwds), To: slug(recordedCwd)},
		recordkit.Rule{From: homes, To: recordedHome}, recordkit.Rule{From: slugs(homes), To: slug(recordedHome)})
}

func slugs(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = slug(p)
	}
	return out
}

// slug is the CLI's project directory name for a path: every character
// that is not an ASCII letter or digit becomes '-'.
func slug(path string) string {
	b := []byte(path)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

func record(o options, stderr io.Writer) error {
	stderr = &recordkit.LockedWriter{W: stderr}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "recordclaude: "+format+"\n", args...) }

	home, err := os.MkdirTemp("", "recordclaude-")
	if err != nil {
		return err
	}
	if o.keep {
		logf("keeping HOME %s", home)
	} else {
		defer os.RemoveAll(home)
	}
	cwd := filepath.Join(home, "project")
	if err := os.Mkdir(cwd, 0o755); err != nil {
		return err
	}
	rw := newRewriter(recordkit.Spellings(cwd), recordkit.Spellings(home))
	toReal := strings.NewReplacer(recordedCwd, cwd, recordedHome, home)

	fake := fakeapi.New(fakeapi.Directives())
	defer fake.Close()

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

	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}
	if o.partial {
		args = append(args, "--include-partial-messages")
	}
	args = append(args, "--permission-prompt-tool", "stdio", "--permission-mode", o.mode, "--setting-sources", "")
	args = append(args, o.extra...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, o.claude, args...)
	cmd.Dir = cwd
	cmd.Env = fakeapi.Env(fake.URL, home)
	cmd.Stderr = stderr
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
	logf("started %s %s", o.claude, strings.Join(recordkit.QuoteAll(args), " "))

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

	const initID = "req_1"
	initDone := make(chan struct{})
	type result struct {
		subtype string
		isError bool
	}
	results := make(chan result, len(o.prompts)+1)
	var lastIsError bool // of the last result line
	readerDone := make(chan struct{})
	var scanErr error
	var firstLine time.Duration
	go func() {
		defer close(readerDone)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		initOnce := sync.OnceFunc(func() { close(initDone) })
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
			var msg struct {
				Type      string          `json:"type"`
				Subtype   string          `json:"subtype"`
				IsError   bool            `json:"is_error"`
				RequestID string          `json:"request_id"`
				Request   json.RawMessage `json:"request"`
				Response  struct {
					RequestID string `json:"request_id"`
				} `json:"response"`
			}
			if err := json.Unmarshal(line, &msg); err != nil {
				logf("stdout line %d is not JSON: %v", n, err)
				continue
			}
			switch msg.Type {
			case "control_response":
				if msg.Response.RequestID == initID {
					initOnce()
				}
			case "control_request":
				if err := send(answer(msg.RequestID, msg.Request)); err != nil {
					logf("answering %s: %v", msg.RequestID, err)
				}
			case "result":
				lastIsError = msg.IsError
				select {
				case results <- result{msg.Subtype, msg.IsError}:
				default: // more results than prompts: nobody waits for them
				}
			}
		}
		scanErr = sc.Err()
	}()

	initReq := map[string]any{"subtype": "initialize", "hooks": nil}
	if o.hooks {
		initReq["hooks"] = map[string]any{
			"PreToolUse":  []any{map[string]any{"matcher": nil, "hookCallbackIds": []string{"hook_0"}}},
			"PostToolUse": []any{map[string]any{"matcher": nil, "hookCallbackIds": []string{"hook_1"}}},
		}
	}
	if err := send(map[string]any{"type": "control_request", "request_id": initID, "request": initReq}); err != nil {
		return fmt.Errorf("sending initialize: %w", err)
	}
	var failed error
	select {
	case <-initDone:
		logf("initialize answered %v after spawn", time.Since(start).Round(time.Millisecond))
	case <-readerDone:
		failed = errors.New("the CLI's stdout ended before the initialize response")
	case <-time.After(o.timeout):
		failed = fmt.Errorf("no initialize response within %v", o.timeout)
	}
	for i, p := range o.prompts {
		if failed != nil {
			break
		}
		t0 := time.Now()
		msg := map[string]any{
			"type":               "user",
			"message":            map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": toReal.Replace(p)}}},
			"parent_tool_use_id": nil,
			"session_id":         "",
		}
		if err := send(msg); err != nil {
			failed = fmt.Errorf("sending prompt %d: %w", i+1, err)
			break
		}
		select {
		case r := <-results:
			logf("turn %d (%q): result %s (is_error %v) after %v", i+1, p, r.subtype, r.isError, time.Since(t0).Round(time.Millisecond))
		case <-readerDone:
			failed = fmt.Errorf("the CLI's stdout ended during turn %d", i+1)
		case <-time.After(o.timeout):
			failed = fmt.Errorf("turn %d (%q): no result within %v", i+1, p, o.timeout)
		}
	}

	// Close stdin, and give the CLI 10s to exit before it is killed; read
	// all of its stdout before Wait closes the pipe.
	t0 := time.Now()
	stdin.Close()
	select {
	case <-readerDone:
	case <-time.After(10 * time.Second):
		logf("the CLI did not exit within 10s of stdin closing; killing it")
		cancel()
		<-readerDone
	}
	if scanErr != nil && failed == nil {
		failed = fmt.Errorf("reading the CLI's stdout: %w", scanErr)
	}
	werr := cmd.Wait()
	logf("first stdout line %v after spawn; exit %v after stdin closed (%v in all)",
		firstLine.Round(time.Millisecond), time.Since(t0).Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	// The CLI exits with 1 when its last result was an error (an API
	// error turn, say): that is a fine recording.
	var exitErr *exec.ExitError
	if errors.As(werr, &exitErr) && exitErr.ExitCode() == 1 && lastIsError {
		logf("the CLI exited with 1, as it does after an error result")
		werr = nil
	}
	if werr != nil && failed == nil {
		failed = fmt.Errorf("the CLI: %w", werr)
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

// answer is the control_response to a control request from the CLI.
func answer(id string, raw json.RawMessage) map[string]any {
	var req struct {
		Subtype string          `json:"subtype"`
		Input   json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(raw, &req)
	var resp map[string]any
	switch req.Subtype {
	case "can_use_tool":
		input := req.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		resp = map[string]any{"subtype": "success", "request_id": id,
			"response": map[string]any{"behavior": "allow", "updatedInput": input}}
	case "hook_callback":
		resp = map[string]any{"subtype": "success", "request_id": id,
			"response": map[string]any{"continue": true}}
	default:
		resp = map[string]any{"subtype": "error", "request_id": id,
			"error": "recordclaude does not handle " + req.Subtype}
	}
	return map[string]any{"type": "control_response", "response": resp}
}
