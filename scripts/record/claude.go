package main

import (
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

// claudeOptions are record claude's flags and prompts.
type claudeOptions struct {
	common
	claude  string
	mode    string
	partial bool
	hooks   bool
}

// parseClaudeFlags parses record claude's arguments.
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

// runClaude is record claude; it returns the exit status.
func runClaude(args []string, stderr io.Writer) int {
	return runAgent("claude", args, stderr, parseClaudeFlags, recordClaude)
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

// slugs is the slug of each of paths.
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

// recordClaude records o's prompts with the CLI on the fake Messages
// API, in stream-json mode.
func recordClaude(o claudeOptions, stderr io.Writer) error {
	var err error
	if o.claude, err = binary(o.claude, findClaude); err != nil {
		return err
	}
	r, err := newRecorder("claude", stderr, o.keep)
	if err != nil {
		return err
	}
	defer r.done()
	rw := claudeRewriter(recordkit.Spellings(r.cwd), recordkit.Spellings(r.home))
	toReal := strings.NewReplacer(recordedCwd, r.cwd, recordedHome, r.home)
	fake := fakemessages.New(fakemessages.Directives())
	defer fake.Close()
	cl := cli{name: "the CLI", path: o.claude, args: claudeArgs(o), env: fakemessages.Env(fake.URL, r.home)}
	return r.record(o.common, cl, rw, func() any { return fake.Requests() }, func(s *session) conversation {
		return newClaudeConversation(s, o, toReal)
	})
}

// claudeArgs are the CLI's arguments: stream-json both ways, permission
// prompts over the control protocol, no settings files.
func claudeArgs(o claudeOptions) []string {
	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json"}
	if o.partial {
		args = append(args, "--include-partial-messages")
	}
	args = append(args, "--permission-prompt-tool", "stdio", "--permission-mode", o.mode, "--setting-sources", "")
	return append(args, o.extra...)
}

// claudeInitID is the request_id of the initialize control request.
const claudeInitID = "req_1"

// claudeResult is what the recorder reads of a result line.
type claudeResult struct {
	subtype string
	isError bool
}

// claudeLine is the part of a stdout line the recorder looks at.
type claudeLine struct {
	Type      string          `json:"type"`
	Subtype   string          `json:"subtype"`
	IsError   bool            `json:"is_error"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  struct {
		RequestID string `json:"request_id"`
	} `json:"response"`
}

// claudeConversation initializes the CLI, sends each prompt as a user
// message and waits for its result line; it answers the CLI's control
// requests (claudeAnswer).
type claudeConversation struct {
	*session
	o           claudeOptions
	toReal      *strings.Replacer // maps the recorded paths in prompts to the real ones
	initDone    chan struct{}     // closed at the initialize control_response
	initOnce    func()            // closes initDone
	results     chan claudeResult // the result lines, one per turn
	lastIsError bool              // of the last result line; read after readerDone
}

// newClaudeConversation is the conversation with the CLI of s, for o's
// prompts.
func newClaudeConversation(s *session, o claudeOptions, toReal *strings.Replacer) *claudeConversation {
	c := &claudeConversation{session: s, o: o, toReal: toReal, initDone: make(chan struct{}),
		results: make(chan claudeResult, len(o.prompts)+1)}
	c.initOnce = sync.OnceFunc(func() { close(c.initDone) })
	return c
}

// handle answers a request from the CLI, and passes on what the
// conversation waits for.
func (c *claudeConversation) handle(line []byte, n int) {
	var msg claudeLine
	if !c.decode(line, n, &msg) {
		return
	}
	switch msg.Type {
	case "control_response":
		if msg.Response.RequestID == claudeInitID {
			c.initOnce()
		}
	case "control_request":
		if err := c.send(claudeAnswer(msg.RequestID, msg.Request)); err != nil {
			c.logf("answering %s: %v", msg.RequestID, err)
		}
	case "result":
		c.lastIsError = msg.IsError
		select {
		case c.results <- claudeResult{msg.Subtype, msg.IsError}:
		default: // more results than prompts: nobody waits for them
		}
	}
}

// converse initializes the CLI, then runs each prompt as a turn.
func (c *claudeConversation) converse() error {
	if err := c.initialize(); err != nil {
		return err
	}
	for i, p := range c.o.prompts {
		if err := c.turn(i+1, p); err != nil {
			return err
		}
	}
	return nil
}

// initialize sends the initialize control request (with hook callbacks
// for PreToolUse and PostToolUse if -hooks) and waits for its response.
// It asks for subagents' text, as the bridge does.
func (c *claudeConversation) initialize() error {
	req := map[string]any{"subtype": "initialize", "hooks": nil, "forwardSubagentText": true}
	if c.o.hooks {
		req["hooks"] = map[string]any{
			"PreToolUse":  []any{map[string]any{"matcher": nil, "hookCallbackIds": []string{"hook_0"}}},
			"PostToolUse": []any{map[string]any{"matcher": nil, "hookCallbackIds": []string{"hook_1"}}},
		}
	}
	if err := c.send(map[string]any{"type": "control_request", "request_id": claudeInitID, "request": req}); err != nil {
		return fmt.Errorf("sending initialize: %w", err)
	}
	_, err := next(c.session, c.initDone, c.o.timeout, anyValue,
		"the CLI's stdout ended before the initialize response", fmt.Sprintf("no initialize response within %v", c.o.timeout))
	if err == nil {
		c.logf("initialize answered %v after spawn", time.Since(c.start).Round(time.Millisecond))
	}
	return err
}

// turn sends prompt i (from 1) as a user message and waits for the
// turn's result line.
func (c *claudeConversation) turn(i int, prompt string) error {
	t0 := time.Now()
	msg := map[string]any{
		"type":               "user",
		"message":            map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": c.toReal.Replace(prompt)}}},
		"parent_tool_use_id": nil,
		"session_id":         "",
	}
	if err := c.send(msg); err != nil {
		return fmt.Errorf("sending prompt %d: %w", i, err)
	}
	r, err := next(c.session, c.results, c.o.timeout, anyValue,
		fmt.Sprintf("the CLI's stdout ended during turn %d", i), fmt.Sprintf("turn %d (%q): no result within %v", i, prompt, c.o.timeout))
	if err == nil {
		c.logf("turn %d (%q): result %s (is_error %v) after %v", i, prompt, r.subtype, r.isError, time.Since(t0).Round(time.Millisecond))
	}
	return err
}

// excuse forgives the CLI's exit status 1 after an error result (an API
// error turn, say): that is a fine recording.
func (c *claudeConversation) excuse(err error) error {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && exitErr.ExitCode() == 1 && c.lastIsError {
		c.logf("the CLI exited with 1, as it does after an error result")
		return nil
	}
	return err
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
