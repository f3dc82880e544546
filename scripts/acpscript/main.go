// Command acpscript plays a scripted ACP session against an agent, for
// demos and smoke tests.
//
// Usage:
//
//	go run ./scripts/acpscript [flags] -- AGENT_COMMAND [ARGS...] < script.ndjson
//
// It starts AGENT_COMMAND (its stderr goes to ours) and sends it the script
// read from stdin, one JSON-RPC message per line. Blank lines and lines
// starting with '#' are skipped, except the directive "#sleep DURATION"
// (any Go duration), which pauses before the next line. Every $SESSION_ID
// is replaced with the sessionId of the latest session/new response.
//
// After a request (a message with "id" and "method") the driver waits for
// its response before it sends the next line, unless the line starts with
// '&': such a request's response is awaited only at the end of the script,
// so that, say, a session/cancel can follow a session/prompt. Other
// messages (notifications) are sent without waiting.
//
// Every line the agent writes is copied to stdout as it is. The agent's
// session/request_permission requests are answered as --permission says;
// any other request from the agent gets "Method not found".
//
// Once every response has arrived, the agent's stdin is closed and it has
// 10s to exit before it is killed. The exit status is 0 if every request
// was answered; 1 if the agent stopped early or exited with an error, a
// response did not come within --timeout, or the agent wrote a line that
// is not JSON; 2 for a usage error.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/pflag"
)

const (
	// maxLine is the longest line read from the script or the agent.
	maxLine = 16 << 20
	// exitGrace is how long the agent has to exit once its stdin is closed.
	exitGrace = 10 * time.Second
	// sessionVar is replaced in script lines by the latest sessionId.
	sessionVar = "$SESSION_ID"
	// sleepDirective starts a script line that pauses the script.
	sleepDirective = "#sleep "
)

// JSON-RPC error codes used in answers to the agent.
const (
	codeInvalidParams  = -32602
	codeMethodNotFound = -32601
)

const usage = `acpscript plays a scripted ACP session (NDJSON on stdin) against an agent.

Usage: go run ./scripts/acpscript [flags] -- AGENT_COMMAND [ARGS...] < script.ndjson

`

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// options says how drive behaves.
type options struct {
	permission string        // answer to permission requests: allow, reject or cancel
	show       string        // what to print: json (every message) or conversation
	timeout    time.Duration // longest wait for any single response
	exitGrace  time.Duration // wait for the agent's output to end after its stdin closes
	kill       func()        // ends the agent once exitGrace has passed; may be nil
	log        io.Writer     // notes and errors; may be nil
}

// run is the whole program; it returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	opts, argv, err := parseFlags(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "acpscript: %v (see --help)\n", err)
		return 2
	}
	cmd, agentIn, agentOut, err := start(argv, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "acpscript: %v\n", err)
		return 1
	}
	defer agentOut.Close()
	var killed atomic.Bool
	opts.kill = func() {
		killed.Store(true)
		cmd.Process.Kill()
	}
	status := 0
	if err := drive(context.Background(), stdin, agentIn, agentOut, stdout, opts); err != nil {
		fmt.Fprintf(stderr, "acpscript: %v\n", err)
		status = 1
	}
	if err := reap(cmd, opts, &killed); err != nil {
		fmt.Fprintf(stderr, "acpscript: %v\n", err)
		status = 1
	}
	return status
}

func parseFlags(args []string, stderr io.Writer) (options, []string, error) {
	o := options{exitGrace: exitGrace, log: stderr}
	fs := pflag.NewFlagSet("acpscript", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.SetInterspersed(false) // the agent's own flags are not ours
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.permission, "permission", "allow", "answer to session/request_permission: allow, reject or cancel")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "longest wait for any single response")
	fs.StringVar(&o.show, "show", "json", "what to print: json (every message the agent sends, as is) or conversation (for a person)")
	if err := fs.Parse(args); err != nil {
		return o, nil, err
	}
	if _, ok := permissionKinds[o.permission]; !ok {
		return o, nil, fmt.Errorf("--permission is %q; want allow, reject or cancel", o.permission)
	}
	if o.show != "json" && o.show != "conversation" {
		return o, nil, fmt.Errorf("--show is %q; want json or conversation", o.show)
	}
	if o.timeout <= 0 {
		return o, nil, fmt.Errorf("--timeout is %v; want a positive duration", o.timeout)
	}
	if fs.NArg() == 0 {
		return o, nil, errors.New("no agent command given")
	}
	return o, fs.Args(), nil
}

// start runs the agent with pipes on its stdin and stdout. Its stdout is a
// plain pipe rather than cmd.StdoutPipe, so that cmd.Wait does not close
// it while its last lines are being read.
func start(argv []string, stderr io.Writer) (*exec.Cmd, io.WriteCloser, *os.File, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	agentIn, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("making the agent's stdin: %w", err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("making the agent's stdout: %w", err)
	}
	cmd.Stdout = w
	err = cmd.Start()
	w.Close()
	if err != nil {
		r.Close()
		return nil, nil, nil, fmt.Errorf("starting the agent %q: %w", argv[0], err)
	}
	return cmd, agentIn, r, nil
}

// reap waits for the agent to exit, killing it after opts.exitGrace. It
// returns an error if the agent exited with one (and was not killed).
func reap(cmd *exec.Cmd, opts options, killed *atomic.Bool) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t := time.NewTimer(opts.exitGrace)
	defer t.Stop()
	var err error
	select {
	case err = <-done:
	case <-t.C:
		fmt.Fprintf(opts.log, "acpscript: agent still running %v after its stdin was closed; killing it\n", opts.exitGrace)
		opts.kill()
		err = <-done
	}
	if err != nil && !killed.Load() {
		return fmt.Errorf("agent exited with an error: %w", err)
	}
	return nil
}

// drive plays script to the agent (agentIn, agentOut) and copies what the
// agent writes to out. It returns once every request has its response and
// the agent's output has ended after agentIn was closed (agentIn is closed
// if it is an io.Closer), or at the first failure.
func drive(ctx context.Context, script io.Reader, agentIn io.Writer, agentOut io.Reader, out io.Writer, opts options) error {
	d := newDriver(agentIn, out, opts)
	go d.readAgent(agentOut)
	err := d.play(ctx, script)
	if err == nil {
		err = d.awaitAll(ctx)
	}
	if c, ok := agentIn.(io.Closer); ok {
		c.Close()
	}
	if err != nil {
		return err
	}
	d.awaitEnd(ctx)
	return d.outputErr()
}

// call is a request sent to the agent.
type call struct {
	id     string // as in the script, for messages
	method string
	sent   time.Time
	done   chan struct{} // closed when the response has arrived
}

// driver is one scripted session.
type driver struct {
	opts    options
	agentIn io.Writer
	inMu    sync.Mutex // serialises writes to agentIn
	out     io.Writer
	outMu   sync.Mutex    // serialises writes to out
	conv    *conversation // with --show conversation, what out gets
	logMu   sync.Mutex    // serialises writes to opts.log
	gone    chan struct{}

	mu        sync.Mutex // protects the fields below
	pending   map[string]*call
	calls     []*call // in the order sent
	sessionID string
	badLines  int
	outErr    error // the first error writing out
	readErr   error // why reading the agent's output stopped, if not EOF
}

func newDriver(agentIn io.Writer, out io.Writer, opts options) *driver {
	if opts.log == nil {
		opts.log = io.Discard
	}
	d := &driver{opts: opts, agentIn: agentIn, out: out, gone: make(chan struct{}), pending: make(map[string]*call)}
	if opts.show == "conversation" {
		d.conv = newConversation(out)
	}
	return d
}

func (d *driver) logf(format string, args ...any) {
	d.logMu.Lock()
	defer d.logMu.Unlock()
	fmt.Fprintf(d.opts.log, "acpscript: "+format+"\n", args...)
}

// play sends the script line by line.
func (d *driver) play(ctx context.Context, script io.Reader) error {
	sc := bufio.NewScanner(script)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for n := 1; sc.Scan(); n++ {
		if err := d.step(ctx, sc.Text()); err != nil {
			return fmt.Errorf("script line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading the script: %w", err)
	}
	return nil
}

// step plays one script line.
func (d *driver) step(ctx context.Context, line string) error {
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, sleepDirective):
		return sleep(ctx, strings.TrimPrefix(line, sleepDirective))
	case line == "" || strings.HasPrefix(line, "#"):
		return nil
	}
	async := strings.HasPrefix(line, "&")
	if async {
		line = strings.TrimSpace(line[1:])
	}
	line, err := d.expand(line)
	if err != nil {
		return err
	}
	c, err := d.register(line)
	if err != nil {
		return err
	}
	if d.conv != nil {
		m, _ := parseMessage([]byte(line)) // register parsed it
		d.conv.sent(m)
	}
	if err := d.send([]byte(line)); err != nil {
		return err
	}
	if c == nil || async {
		return nil
	}
	return d.await(ctx, c)
}

func sleep(ctx context.Context, arg string) error {
	dur, err := time.ParseDuration(strings.TrimSpace(arg))
	if err != nil {
		return fmt.Errorf("bad %q directive: %w", strings.TrimSpace(sleepDirective), err)
	}
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// expand replaces $SESSION_ID in line, escaped for a JSON string.
func (d *driver) expand(line string) (string, error) {
	if !strings.Contains(line, sessionVar) {
		return line, nil
	}
	d.mu.Lock()
	id := d.sessionID
	d.mu.Unlock()
	if id == "" {
		return "", errors.New(sessionVar + " is used before any session/new was answered with a sessionId")
	}
	q, err := json.Marshal(id)
	if err != nil {
		return "", fmt.Errorf("quoting the session id: %w", err)
	}
	return strings.ReplaceAll(line, sessionVar, string(q[1:len(q)-1])), nil
}

// register records line as a pending call if it is a request; it returns
// nil for a message that gets no response.
func (d *driver) register(line string) (*call, error) {
	m, err := parseMessage([]byte(line))
	if err != nil {
		return nil, err
	}
	if m.Method == "" || !hasID(m.ID) {
		return nil, nil
	}
	key := idKey(m.ID)
	d.mu.Lock()
	defer d.mu.Unlock()
	if prev := d.pending[key]; prev != nil {
		return nil, fmt.Errorf("id %s is reused while request %s (%s) is unanswered", prev.id, prev.id, prev.method)
	}
	c := &call{id: compact(m.ID), method: m.Method, sent: time.Now(), done: make(chan struct{})}
	d.pending[key] = c
	d.calls = append(d.calls, c)
	return c, nil
}

// send writes one message to the agent.
func (d *driver) send(msg []byte) error {
	select {
	case <-d.gone:
		return errors.New("agent's output ended (has it exited?) before this message was sent")
	default:
	}
	buf := make([]byte, 0, len(msg)+1)
	buf = append(append(buf, msg...), '\n')
	d.inMu.Lock()
	defer d.inMu.Unlock()
	if _, err := d.agentIn.Write(buf); err != nil {
		return fmt.Errorf("writing to the agent: %w", err)
	}
	return nil
}

// await waits for c's response, at most opts.timeout after it was sent.
func (d *driver) await(ctx context.Context, c *call) error {
	t := time.NewTimer(time.Until(c.sent.Add(d.opts.timeout)))
	defer t.Stop()
	select {
	case <-c.done:
		return nil
	default:
	}
	select {
	case <-c.done:
		return nil
	case <-d.gone:
		select {
		case <-c.done:
			return nil
		default:
		}
		return fmt.Errorf("agent's output ended (has it exited?) before the response to request %s (%s)", c.id, c.method)
	case <-t.C:
		return fmt.Errorf("no response to request %s (%s) within %v", c.id, c.method, d.opts.timeout)
	case <-ctx.Done():
		return fmt.Errorf("waiting for request %s (%s): %w", c.id, c.method, context.Cause(ctx))
	}
}

// awaitAll waits for the responses still outstanding, in the order sent.
func (d *driver) awaitAll(ctx context.Context) error {
	d.mu.Lock()
	calls := d.calls
	d.mu.Unlock()
	for _, c := range calls {
		if err := d.await(ctx, c); err != nil {
			return fmt.Errorf("end of script: %w", err)
		}
	}
	return nil
}

// awaitEnd waits for the agent's output to end, killing the agent if it
// takes longer than opts.exitGrace.
func (d *driver) awaitEnd(ctx context.Context) {
	t := time.NewTimer(d.opts.exitGrace)
	defer t.Stop()
	select {
	case <-d.gone:
		return
	case <-ctx.Done():
		return
	case <-t.C:
	}
	d.logf("agent still running %v after its stdin was closed; killing it", d.opts.exitGrace)
	if d.opts.kill == nil {
		return
	}
	d.opts.kill()
	select {
	case <-d.gone:
	case <-time.After(time.Second):
	case <-ctx.Done():
	}
}

// outputErr reports what went wrong with the agent's output, if anything.
func (d *driver) outputErr() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.badLines > 0:
		return fmt.Errorf("agent wrote %d line(s) that are not JSON (printed above)", d.badLines)
	case d.readErr != nil:
		return fmt.Errorf("reading the agent's output: %w", d.readErr)
	case d.outErr != nil:
		return fmt.Errorf("writing the agent's messages: %w", d.outErr)
	}
	if d.conv != nil {
		if err := d.conv.writeErr(); err != nil {
			return fmt.Errorf("writing the conversation: %w", err)
		}
	}
	return nil
}

// readAgent handles the agent's output line by line until it ends.
func (d *driver) readAgent(r io.Reader) {
	defer close(d.gone)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	for sc.Scan() {
		d.handle(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		d.mu.Lock()
		d.readErr = err
		d.mu.Unlock()
		d.logf("reading the agent's output: %v", err)
	}
}

// handle copies one line from the agent to out and acts on it.
func (d *driver) handle(line []byte) {
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	m, err := parseMessage(line)
	if err != nil {
		d.mu.Lock()
		d.badLines++
		d.mu.Unlock()
		d.logf("agent wrote a line that is not JSON (%v): %s", err, line)
		return
	}
	if d.conv != nil {
		d.conv.received(m)
	} else {
		d.echo(line)
	}
	switch {
	case m.Method != "" && hasID(m.ID):
		d.answer(m)
	case m.Method != "":
		// A notification, such as session/update: printing it is all.
	default:
		d.settle(m)
	}
}

func (d *driver) echo(line []byte) {
	buf := make([]byte, 0, len(line)+1)
	buf = append(append(buf, line...), '\n')
	d.outMu.Lock()
	_, err := d.out.Write(buf)
	d.outMu.Unlock()
	if err != nil {
		d.mu.Lock()
		if d.outErr == nil {
			d.outErr = err
		}
		d.mu.Unlock()
	}
}

// settle hands a response to the call waiting for it.
func (d *driver) settle(m message) {
	if !hasID(m.ID) {
		d.logf("agent sent a response with no id: %s", m.Error)
		return
	}
	key := idKey(m.ID)
	d.mu.Lock()
	c := d.pending[key]
	delete(d.pending, key)
	if c != nil && c.method == "session/new" && m.Error == nil {
		if id := sessionIDOf(m.Result); id != "" {
			d.sessionID = id
		}
	}
	d.mu.Unlock()
	if c == nil {
		d.logf("agent answered id %s, which no request is waiting for", compact(m.ID))
		return
	}
	if m.Error != nil {
		d.logf("request %s (%s) failed: %s", c.id, c.method, m.Error)
	}
	close(c.done)
}

func sessionIDOf(result json.RawMessage) string {
	var r struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(result, &r)
	return r.SessionID
}

// answer replies to a request from the agent.
func (d *driver) answer(m message) {
	var reply response
	if m.Method == "session/request_permission" {
		result, note, err := choosePermission(d.opts.permission, m.Params)
		if err != nil {
			d.logf("agent's session/request_permission (id %s) is malformed: %v", compact(m.ID), err)
			reply = errorResponse(m.ID, codeInvalidParams, "Invalid params", err.Error())
		} else {
			if d.conv != nil {
				d.conv.note(note)
			} else {
				d.logf("%s", note)
			}
			reply = response{JSONRPC: "2.0", ID: m.ID, Result: result}
		}
	} else {
		d.logf("agent asked %s (id %s); answering Method not found", m.Method, compact(m.ID))
		reply = errorResponse(m.ID, codeMethodNotFound, "Method not found", map[string]string{"method": m.Method})
	}
	msg, err := json.Marshal(reply)
	if err == nil {
		err = d.send(msg)
	}
	if err != nil {
		d.logf("answering the agent's %s (id %s): %v", m.Method, compact(m.ID), err)
	}
}

// permissionKinds are the option kinds each --permission answer picks,
// best first; "cancel" picks none.
var permissionKinds = map[string][]string{
	"allow":  {"allow_once", "allow_always"},
	"reject": {"reject_once", "reject_always"},
	"cancel": nil,
}

type permissionRequest struct {
	ToolCall struct {
		ToolCallID string  `json:"toolCallId"`
		Title      *string `json:"title"`
	} `json:"toolCall"`
	Options []struct {
		OptionID string `json:"optionId"`
		Kind     string `json:"kind"`
	} `json:"options"`
}

type permissionResult struct {
	Outcome permissionOutcome `json:"outcome"`
}

type permissionOutcome struct {
	Outcome  string `json:"outcome"` // "selected" or "cancelled"
	OptionID string `json:"optionId,omitempty"`
}

// choosePermission answers a session/request_permission by policy (a key
// of permissionKinds); note describes the answer for the log.
func choosePermission(policy string, params json.RawMessage) (result permissionResult, note string, err error) {
	var req permissionRequest
	if err := json.Unmarshal(params, &req); err != nil {
		return result, "", err
	}
	what := req.ToolCall.ToolCallID
	if req.ToolCall.Title != nil {
		what = fmt.Sprintf("%q", *req.ToolCall.Title)
	}
	for _, kind := range permissionKinds[policy] {
		for _, o := range req.Options {
			if o.Kind == kind {
				result.Outcome = permissionOutcome{Outcome: "selected", OptionID: o.OptionID}
				return result, fmt.Sprintf("permission for %s: selected %q (%s)", what, o.OptionID, kind), nil
			}
		}
	}
	result.Outcome = permissionOutcome{Outcome: "cancelled"}
	note = fmt.Sprintf("permission for %s: cancelled", what)
	if policy != "cancel" {
		note += " (no " + policy + " option was offered)"
	}
	return result, note, nil
}

// message is any JSON-RPC 2.0 message.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) String() string {
	if e == nil {
		return "no error"
	}
	s := fmt.Sprintf("error %d: %s", e.Code, e.Message)
	if e.Data != nil {
		if data, err := json.Marshal(e.Data); err == nil {
			s += " " + string(data)
		}
	}
	return s
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

func errorResponse(id json.RawMessage, code int, msg string, data any) response {
	return response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg, Data: data}}
}

// parseMessage decodes one line, which must hold a JSON object.
func parseMessage(line []byte) (message, error) {
	var m message
	if t := bytes.TrimSpace(line); len(t) == 0 || t[0] != '{' {
		return m, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(line, &m); err != nil {
		return m, fmt.Errorf("not a JSON-RPC message: %w", err)
	}
	return m, nil
}

// hasID reports whether a message's id is present and not null.
func hasID(id json.RawMessage) bool {
	return len(id) > 0 && string(id) != "null"
}

// idKey identifies a request by its id, whatever its JSON spelling:
// 7 and 7.0 are the same number, and "7" is a different, string, id.
func idKey(id json.RawMessage) string {
	dec := json.NewDecoder(bytes.NewReader(id))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return compact(id)
	}
	switch v := v.(type) {
	case string:
		return "s:" + v
	case json.Number:
		if f, err := v.Float64(); err == nil {
			return fmt.Sprintf("n:%v", f)
		}
		return "n:" + v.String()
	}
	return compact(id)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return string(raw)
	}
	return b.String()
}
