package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/scripts/internal/recordkit"
)

type claudeOptions struct {
	common
	claude  string
	mode    string
	partial bool
	hooks   bool
}

func parseClaudeFlags(args []string, stderr io.Writer) (claudeOptions, error) {
	var o claudeOptions
	fs := flags("claude", stderr)
	fs.StringVar(&o.claude, "claude", "", "the claude `binary` (default $CLAUDE_BIN, else .tools/claude/node_modules/.bin/claude)")
	fs.StringVar(&o.mode, "mode", "default", "the CLI's --permission-mode")
	fs.BoolVar(&o.partial, "partial", true, "pass --include-partial-messages")
	fs.BoolVar(&o.hooks, "hooks", false, "register PreToolUse and PostToolUse hook callbacks in initialize")
	err := o.parse(fs, args, "and its project directory", "CLI")
	return o, err
}

func runClaude(args []string, stderr io.Writer) int {
	return runAgent("claude", args, stderr, parseClaudeFlags, func(o claudeOptions, stderr io.Writer) error {
		if o.claude == "" {
			var err error
			if o.claude, err = findClaude(); err != nil {
				return err
			}
		}
		return recordClaude(o, stderr)
	})
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

// claudeRewriter rewrites cwd (inside home) and home, in each of the given
// spellings, and their project slugs.
func claudeRewriter(cwds, homes []string) recordkit.Rewriter {
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

func recordClaude(o claudeOptions, stderr io.Writer) error {
	stderr = &recordkit.LockedWriter{W: stderr}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "record claude: "+format+"\n", args...) }

	home, cwd, done, err := tempHome("recordclaude-", o.keep, logf)
	if err != nil {
		return err
	}
	defer done()
	rw := claudeRewriter(recordkit.Spellings(cwd), recordkit.Spellings(home))
	toReal := strings.NewReplacer(recordedCwd, cwd, recordedHome, home)

	fake := fakemessages.New(fakemessages.Directives())
	defer fake.Close()

	bw, closeOut, err := output(o.out)
	if err != nil {
		return err
	}
	defer closeOut()

	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}
	if o.partial {
		args = append(args, "--include-partial-messages")
	}
	args = append(args, "--permission-prompt-tool", "stdio", "--permission-mode", o.mode, "--setting-sources", "")
	args = append(args, o.extra...)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := startAgent(ctx, o.claude, args, cwd, fakemessages.Env(fake.URL, home), stderr, logf)
	if err != nil {
		return err
	}
	stdout, start, send := p.stdout, p.start, p.send

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
				if err := send(claudeAnswer(msg.RequestID, msg.Request)); err != nil {
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

	werr := p.end("the CLI", readerDone, cancel, firstLine, logf)
	if scanErr != nil && failed == nil {
		failed = fmt.Errorf("reading the CLI's stdout: %w", scanErr)
	}
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
	return finish(failed, bw, o.common, fake.Requests(), rw)
}

// claudeAnswer is the control_response to a control request from the CLI.
func claudeAnswer(id string, raw json.RawMessage) map[string]any {
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
			"error": "record claude does not handle " + req.Subtype}
	}
	return map[string]any{"type": "control_response", "response": resp}
}
