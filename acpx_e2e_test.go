package main

// End-to-end tests with a real ACP client: acpx (npm acpx@0.19.1, the
// headless ACP client of github.com/openclaw/acpx) drives the bridge, built
// with `go build`, on the mock agent. Install acpx with
// scripts/install-tools.sh, or point env ACPX at its binary. Without acpx
// the tests skip, unless ACPBRIDGE_REQUIRE_E2E=1.
//
// What acpx 0.19.1 does, as observed (and asserted below):
//   - exec: spawns the agent itself and sends initialize, session/new and
//     one session/prompt, then closes stdin; no queue owner stays behind.
//   - sessions new: initialize and session/new, then closes the agent.
//   - prompt: hands the prompt to a detached "queue owner" process that
//     spawns the agent and keeps it alive for --ttl seconds (default 300;
//     0 means forever). A queue owner that starts on an existing session
//     reconnects with initialize and session/resume, since the bridge
//     advertises sessionCapabilities.resume (session/load only without it).
//     A prompt sent while an owner lives reuses its connection.
//   - --format json prints every JSON-RPC message, both ways, on stdout.
//   - --deny-all answers request_permission with the reject option; the
//     turn still ends with end_turn, but acpx exits with code 5.
//
// Every helper here is prefixed with acpx: bench_test.go shares the package.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
)

// acpxTimeout bounds every acpx invocation.
const acpxTimeout = 60 * time.Second

// acpxDenyExitCode is acpx's exit code when a permission was denied.
const acpxDenyExitCode = 5

// acpxPath finds the acpx binary, or skips (or fails, with
// ACPBRIDGE_REQUIRE_E2E=1) the test when it is not installed.
func acpxPath(t *testing.T) string {
	t.Helper()
	return toolbin.Find(t, "acpx", "ACPX", func(root string) string {
		return filepath.Join(root, ".tools", "acpx", "node_modules", ".bin", "acpx")
	})
}

// acpxRaceEnabled reports whether this test binary was built with -race;
// the bridge under test is then built with -race too.
func acpxRaceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// acpxBuildBridge builds acpbridge into dir and returns its path.
func acpxBuildBridge(t *testing.T, dir string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(dir, "acpbridge")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	args := []string{"build", "-o", bin}
	if acpxRaceEnabled() {
		args = append(args, "-race")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool, append(args, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s .: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

// acpxEnv is one isolated acpx + bridge setup: its own HOME (acpx keeps
// its sessions in ~/.acpx), bridge state dir and working directory.
type acpxEnv struct {
	t                            *testing.T
	acpx, bridge                 string
	home, state, cwd, raceLogDir string
}

func acpxSetup(t *testing.T) *acpxEnv {
	t.Helper()
	acpx := acpxPath(t)
	root := t.TempDir()
	e := &acpxEnv{t: t, acpx: acpx}
	e.home, e.state, e.cwd, e.raceLogDir = filepath.Join(root, "home"), filepath.Join(root, "state"), filepath.Join(root, "cwd"), filepath.Join(root, "race")
	for _, d := range []string{e.home, e.cwd, e.raceLogDir} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	e.bridge = acpxBuildBridge(t, root)
	t.Cleanup(e.cleanup)
	return e
}

// agent is the --agent command line for acpx, which splits it like a
// shell; every word is single-quoted.
func (e *acpxEnv) agent() string {
	words := []string{e.bridge, "--agent", "mock", "--state-dir", e.state, "--log-level", "debug"}
	for i, w := range words {
		words[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(words, " ")
}

// acpxResult is one finished acpx invocation.
type acpxResult struct {
	args           []string
	stdout, stderr string
	code           int
}

// dump shows the invocation and its output, for failure messages.
func (r acpxResult) dump() string {
	return fmt.Sprintf("acpx %s\nexit code: %d\n--- stdout ---\n%s\n--- stderr ---\n%s",
		strings.Join(r.args, " "), r.code, r.stdout, r.stderr)
}

// run runs acpx with --agent, --cwd and --verbose (so that the bridge's
// stderr shows up in the result, when acpx spawns it itself) before args.
func (e *acpxEnv) run(t *testing.T, args ...string) acpxResult {
	t.Helper()
	args = append([]string{"--agent", e.agent(), "--cwd", e.cwd, "--verbose"}, args...)
	ctx, cancel := context.WithTimeout(context.Background(), acpxTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.acpx, args...)
	cmd.Dir = e.cwd
	cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "GORACE=") || strings.HasPrefix(kv, "ACPBRIDGE_")
	}), "HOME="+e.home, "GORACE=atexit_sleep_ms=0 log_path="+filepath.Join(e.raceLogDir, "race"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	r := acpxResult{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("acpx timed out after %v\n%s", acpxTimeout, r.dump())
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("running acpx: %v\n%s", err, r.dump())
	}
	return r
}

// runOK runs acpx and fails the test unless it exits 0.
func (e *acpxEnv) runOK(t *testing.T, args ...string) acpxResult {
	t.Helper()
	r := e.run(t, args...)
	if r.code != 0 {
		t.Fatalf("acpx exited with %d, want 0\n%s", r.code, r.dump())
	}
	return r
}

// runOwned is runOK for a command that starts an acpx queue owner. acpx
// gives the owner about 6 s to bind its socket (120 tries, 50 ms apart)
// and fails with "queue owner failed to start" past that, which a loaded
// machine can exceed before the bridge is even asked anything: then the
// owner is waited for, and the command is run once more.
func (e *acpxEnv) runOwned(t *testing.T, args ...string) acpxResult {
	t.Helper()
	r := e.run(t, args...)
	if r.code != 0 && strings.Contains(r.stdout, "queue owner failed to start") {
		t.Logf("acpx's queue owner did not bind within acpx's start-up window; trying again once it has gone\n%s", r.dump())
		e.waitOwnersGone(time.Minute)
		r = e.run(t, args...)
	}
	if r.code != 0 {
		t.Fatalf("acpx exited with %d, want 0\n%s", r.code, r.dump())
	}
	return r
}

// queueLocks lists the lock files of acpx queue owners still running.
func (e *acpxEnv) queueLocks() []string {
	locks, _ := filepath.Glob(filepath.Join(e.home, ".acpx", "queues", "*.lock"))
	return locks
}

// waitOwnersGone waits until every acpx queue owner (and so its bridge)
// has exited, and reports whether they did within d.
func (e *acpxEnv) waitOwnersGone(d time.Duration) bool {
	deadline := time.Now().Add(d)
	for len(e.queueLocks()) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// cleanup stops queue owners left behind, removes the socket directory
// acpx makes in /tmp for this HOME, and fails on any race report the
// bridge wrote.
func (e *acpxEnv) cleanup() {
	if !e.waitOwnersGone(time.Minute) {
		for _, lock := range e.queueLocks() {
			var owner struct {
				PID int `json:"pid"`
			}
			data, _ := os.ReadFile(lock)
			if json.Unmarshal(data, &owner) == nil && owner.PID > 0 {
				e.t.Logf("stopping acpx queue owner pid %d left behind (%s)", owner.PID, lock)
				if p, err := os.FindProcess(owner.PID); err == nil {
					p.Signal(syscall.SIGTERM)
				}
			}
		}
		e.waitOwnersGone(time.Minute)
	}
	// acpx 0.19.1 puts queue-owner sockets in /tmp/acpx-<sha256(HOME)[:10]>.
	sum := sha256.Sum256([]byte(e.home))
	os.Remove(filepath.Join("/tmp", "acpx-"+hex.EncodeToString(sum[:])[:10]))
	reports, _ := filepath.Glob(filepath.Join(e.raceLogDir, "race*"))
	for _, f := range reports {
		data, _ := os.ReadFile(f)
		e.t.Errorf("the bridge reported a data race (%s):\n%s", f, data)
	}
}

// acpxMsg is one JSON-RPC message from acpx --format json. Requests and
// responses of both directions share one id space in its output.
type acpxMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

func (m acpxMsg) isRequest() bool  { return m.Method != "" && len(m.ID) > 0 }
func (m acpxMsg) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// acpxUpdate is the part of a session/update the tests look at.
type acpxUpdate struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		SessionUpdate string          `json:"sessionUpdate"`
		Content       json.RawMessage `json:"content"`
		ToolCallID    string          `json:"toolCallId"`
		Kind          string          `json:"kind"`
		Status        string          `json:"status"`
	} `json:"update"`
}

// text is the text of a content-chunk update, or "".
func (u acpxUpdate) text() string {
	var c struct {
		Type, Text string
	}
	if json.Unmarshal(u.Update.Content, &c) != nil || c.Type != "text" {
		return ""
	}
	return c.Text
}

// acpxTurn is what one acpx --format json run showed.
type acpxTurn struct {
	r    acpxResult
	msgs []acpxMsg
}

func acpxParse(t *testing.T, r acpxResult) *acpxTurn {
	t.Helper()
	tu := &acpxTurn{r: r}
	for i, l := range strings.Split(r.stdout, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var m acpxMsg
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("stdout line %d is not JSON (%v): %s\n%s", i+1, err, l, r.dump())
		}
		tu.msgs = append(tu.msgs, m)
	}
	return tu
}

// methods lists the requests and notifications, in order.
func (tu *acpxTurn) methods() []string {
	var ms []string
	for _, m := range tu.msgs {
		if m.Method != "" {
			ms = append(ms, m.Method)
		}
	}
	return ms
}

// requests returns the params of every request or notification named method.
func (tu *acpxTurn) requests(method string) []acpxMsg {
	var out []acpxMsg
	for _, m := range tu.msgs {
		if m.Method == method {
			out = append(out, m)
		}
	}
	return out
}

// response finds the response to req: the first response after it with
// its id (ids of the two directions can collide, hence "after").
func (tu *acpxTurn) response(t *testing.T, req acpxMsg) acpxMsg {
	t.Helper()
	seen := false
	for _, m := range tu.msgs {
		switch {
		case !seen:
			seen = m.isRequest() && m.Method == req.Method && bytes.Equal(m.ID, req.ID) && bytes.Equal(m.Params, req.Params)
		case m.isResponse() && bytes.Equal(m.ID, req.ID):
			return m
		}
	}
	t.Fatalf("no response to %s id %s\n%s", req.Method, req.ID, tu.r.dump())
	return acpxMsg{}
}

// updates returns every session/update.
func (tu *acpxTurn) updates(t *testing.T) []acpxUpdate {
	t.Helper()
	var us []acpxUpdate
	for _, m := range tu.requests("session/update") {
		var u acpxUpdate
		if err := json.Unmarshal(m.Params, &u); err != nil {
			t.Fatalf("session/update params %s: %v", m.Params, err)
		}
		us = append(us, u)
	}
	return us
}

// agentText joins the text of every agent_message_chunk.
func (tu *acpxTurn) agentText(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, u := range tu.updates(t) {
		if u.Update.SessionUpdate == "agent_message_chunk" {
			b.WriteString(u.text())
		}
	}
	return b.String()
}

// prompt checks that there was exactly one session/prompt, on sessionID,
// answered with stopReason end_turn, and returns its response.
func (tu *acpxTurn) prompt(t *testing.T, sessionID string) acpxMsg {
	t.Helper()
	prompts := tu.requests("session/prompt")
	if len(prompts) != 1 {
		t.Fatalf("got %d session/prompt requests, want 1\n%s", len(prompts), tu.r.dump())
	}
	var p struct{ SessionID string }
	json.Unmarshal(prompts[0].Params, &p)
	if sessionID != "" && p.SessionID != sessionID {
		t.Errorf("session/prompt on session %q, want %q", p.SessionID, sessionID)
	}
	resp := tu.response(t, prompts[0])
	var res struct {
		StopReason string `json:"stopReason"`
	}
	if len(resp.Error) > 0 || json.Unmarshal(resp.Result, &res) != nil || res.StopReason != "end_turn" {
		t.Fatalf("session/prompt answered result=%s error=%s, want stopReason end_turn\n%s", resp.Result, resp.Error, tu.r.dump())
	}
	return resp
}

// sessionID is the id session/new answered with.
func (tu *acpxTurn) newSessionID(t *testing.T) string {
	t.Helper()
	news := tu.requests("session/new")
	if len(news) != 1 {
		t.Fatalf("got %d session/new requests, want 1\n%s", len(news), tu.r.dump())
	}
	var res struct{ SessionID string }
	resp := tu.response(t, news[0])
	if json.Unmarshal(resp.Result, &res) != nil || res.SessionID == "" {
		t.Fatalf("session/new answered %s %s\n%s", resp.Result, resp.Error, tu.r.dump())
	}
	return res.SessionID
}

// editStatuses returns the statuses the (only) edit tool call went through.
func (tu *acpxTurn) editStatuses(t *testing.T) []string {
	t.Helper()
	id := ""
	var statuses []string
	for _, u := range tu.updates(t) {
		switch {
		case u.Update.SessionUpdate == "tool_call" && u.Update.Kind == "edit":
			if id != "" {
				t.Fatalf("two edit tool calls, %s and %s\n%s", id, u.Update.ToolCallID, tu.r.dump())
			}
			id = u.Update.ToolCallID
			statuses = append(statuses, u.Update.Status)
		case u.Update.SessionUpdate == "tool_call_update" && u.Update.ToolCallID == id && id != "" && u.Update.Status != "":
			statuses = append(statuses, u.Update.Status)
		}
	}
	if id == "" {
		t.Fatalf("no edit tool_call\n%s", tu.r.dump())
	}
	return statuses
}

// permission checks that exactly one session/request_permission was
// answered by selecting an option, and returns that option's kind.
func (tu *acpxTurn) permission(t *testing.T) string {
	t.Helper()
	reqs := tu.requests("session/request_permission")
	if len(reqs) != 1 {
		t.Fatalf("got %d session/request_permission requests, want 1\n%s", len(reqs), tu.r.dump())
	}
	var req struct {
		Options []struct{ OptionID, Kind string } `json:"options"`
	}
	if err := json.Unmarshal(reqs[0].Params, &req); err != nil {
		t.Fatal(err)
	}
	resp := tu.response(t, reqs[0])
	var res struct {
		Outcome struct{ Outcome, OptionID string } `json:"outcome"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil || res.Outcome.Outcome != "selected" {
		t.Fatalf("request_permission answered %s %s, want a selected option\n%s", resp.Result, resp.Error, tu.r.dump())
	}
	for _, o := range req.Options {
		if o.OptionID == res.Outcome.OptionID {
			return o.Kind
		}
	}
	t.Fatalf("acpx selected option %q, which the bridge did not offer\n%s", res.Outcome.OptionID, tu.r.dump())
	return ""
}

// acpxTranscripts reads every transcript in the bridge's state dir: for
// each file, its session updates' sessionUpdate kinds and texts.
func acpxTranscripts(t *testing.T, state string) map[string][]acpxUpdate {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(state, "sessions", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]acpxUpdate)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var us []acpxUpdate
		for _, l := range strings.Split(string(data), "\n") {
			var line struct {
				Update json.RawMessage `json:"update"`
			}
			if json.Unmarshal([]byte(l), &line) != nil || len(line.Update) == 0 {
				continue
			}
			var u acpxUpdate
			if json.Unmarshal(line.Update, &u.Update) == nil {
				us = append(us, u)
			}
		}
		out[filepath.Base(f)] = us
	}
	return out
}

// acpxTexts lists the texts of the updates of one kind.
func acpxTexts(us []acpxUpdate, kind string) []string {
	var out []string
	for _, u := range us {
		if u.Update.SessionUpdate == kind {
			out = append(out, u.text())
		}
	}
	return out
}

func TestAcpx_execMockTurn(t *testing.T) {
	e := acpxSetup(t)
	tu := acpxParse(t, e.runOK(t, "--format", "json", "exec", "hello from acpx"))

	want := []string{"initialize", "session/new", "session/prompt"}
	if got := slices.DeleteFunc(tu.methods(), func(m string) bool { return m == "session/update" }); !slices.Equal(got, want) {
		t.Errorf("acpx sent %v, want %v\n%s", got, want, tu.r.dump())
	}
	id := tu.newSessionID(t)
	tu.prompt(t, id)
	if got := tu.agentText(t); !strings.Contains(got, "You said: hello from acpx") {
		t.Errorf("agent said %q, want it to contain %q\n%s", got, "You said: hello from acpx", tu.r.dump())
	}
	for _, u := range tu.updates(t) {
		if u.SessionID != id {
			t.Errorf("session/update for session %q, want %q", u.SessionID, id)
		}
	}
	if !e.waitOwnersGone(0) {
		t.Errorf("exec left a queue owner running: %v", e.queueLocks())
	}

	ts := acpxTranscripts(t, e.state)
	if us, ok := ts[id+".jsonl"]; len(ts) != 1 || !ok {
		t.Errorf("transcripts %v, want just %s.jsonl", slices.Sorted(maps.Keys(ts)), id)
	} else if got := acpxTexts(us, "user_message_chunk"); !slices.Equal(got, []string{"hello from acpx"}) {
		t.Errorf("transcript user messages %q, want [hello from acpx]", got)
	}
}

func TestAcpx_permissionAllowAndDeny(t *testing.T) {
	e := acpxSetup(t)

	t.Run("approve-all", func(t *testing.T) {
		tu := acpxParse(t, e.runOK(t, "--format", "json", "--approve-all", "exec", "please edit"))
		tu.prompt(t, tu.newSessionID(t))
		if kind := tu.permission(t); kind != "allow_once" && kind != "allow_always" {
			t.Errorf("acpx --approve-all chose a %s option, want an allow one", kind)
		}
		if got := tu.editStatuses(t); got[len(got)-1] != "completed" {
			t.Errorf("edit tool call went %v, want it to end completed\n%s", got, tu.r.dump())
		}
		if got := tu.agentText(t); !strings.Contains(got, "You said: please edit") {
			t.Errorf("agent said %q", got)
		}
	})

	t.Run("deny-all", func(t *testing.T) {
		r := e.run(t, "--format", "json", "--deny-all", "exec", "please edit")
		// acpx 0.19.1 exits 5 ("permission denied") although the turn
		// itself ends normally with end_turn.
		if r.code != acpxDenyExitCode {
			t.Errorf("acpx --deny-all exited with %d, want %d\n%s", r.code, acpxDenyExitCode, r.dump())
		}
		tu := acpxParse(t, r)
		tu.prompt(t, tu.newSessionID(t))
		if kind := tu.permission(t); kind != "reject_once" && kind != "reject_always" {
			t.Errorf("acpx --deny-all chose a %s option, want a reject one", kind)
		}
		got := tu.editStatuses(t)
		if got[len(got)-1] != "failed" {
			t.Errorf("edit tool call went %v, want it to end failed\n%s", got, tu.r.dump())
		}
		if slices.Contains(got, "completed") || slices.Contains(got, "in_progress") {
			t.Errorf("denied edit tool call went %v; it must not run", got)
		}
	})
}

func TestAcpx_persistentSessionSurvivesRestart(t *testing.T) {
	e := acpxSetup(t)

	// sessions new: acpx spawns the bridge, sends session/new, and closes it.
	r := e.runOK(t, "--format", "json", "sessions", "new")
	var created struct {
		Action        string `json:"action"`
		AcpxSessionID string `json:"acpxSessionId"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &created); err != nil || created.AcpxSessionID == "" {
		t.Fatalf("sessions new printed no session id (%v)\n%s", err, r.dump())
	}
	id := created.AcpxSessionID
	if !e.waitOwnersGone(time.Minute) {
		t.Fatalf("sessions new left a queue owner: %v", e.queueLocks())
	}

	// Each prompt starts a queue owner that must reconnect to the
	// session in a new bridge process; --ttl 0.001 makes the owner (and
	// its bridge) exit right after the turn.
	for _, word := range []string{"first", "second"} {
		tu := acpxParse(t, e.runOwned(t, "--format", "json", "--ttl", "0.001", "prompt", word))
		want := []string{"initialize", "session/resume", "session/prompt"}
		if got := slices.DeleteFunc(tu.methods(), func(m string) bool { return m == "session/update" }); !slices.Equal(got, want) {
			t.Errorf("prompt %q: acpx sent %v, want %v (a fresh bridge, reconnected with session/resume)\n%s", word, got, want, tu.r.dump())
		}
		for _, m := range tu.requests("session/resume") {
			var p struct{ SessionID, Cwd string }
			json.Unmarshal(m.Params, &p)
			if p.SessionID != id || p.Cwd != e.cwd {
				t.Errorf("session/resume %s, want session %s in %s", m.Params, id, e.cwd)
			}
			if resp := tu.response(t, m); len(resp.Error) > 0 {
				t.Fatalf("session/resume failed: %s\n%s", resp.Error, tu.r.dump())
			}
		}
		tu.prompt(t, id)
		if got, want := tu.agentText(t), "You said: "+word; !strings.Contains(got, want) {
			t.Errorf("agent said %q, want it to contain %q\n%s", got, want, tu.r.dump())
		}
		if !e.waitOwnersGone(time.Minute) {
			t.Fatalf("acpx queue owner still running a minute after prompt %q with --ttl 0.001: %v", word, e.queueLocks())
		}
	}

	// sessions list asks a fresh bridge with session/list.
	r = e.runOK(t, "--format", "json", "sessions", "list")
	var list struct {
		Source   string `json:"source"`
		Sessions []struct {
			SessionID, Cwd, Title string
		} `json:"sessions"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(r.stdout)), &list); err != nil {
		t.Fatalf("sessions list: %v\n%s", err, r.dump())
	}
	if list.Source != "agent" || len(list.Sessions) != 1 || list.Sessions[0].SessionID != id || list.Sessions[0].Cwd != e.cwd || list.Sessions[0].Title != "first" {
		t.Errorf("sessions list = %+v, want the agent's list with just %s in %s titled \"first\"\n%s", list, id, e.cwd, r.dump())
	}

	ts := acpxTranscripts(t, e.state)
	us, ok := ts[id+".jsonl"]
	if len(ts) != 1 || !ok {
		t.Fatalf("transcripts %v, want just %s.jsonl", slices.Sorted(maps.Keys(ts)), id)
	}
	if got, want := acpxTexts(us, "user_message_chunk"), []string{"first", "second"}; !slices.Equal(got, want) {
		t.Errorf("transcript user messages %q, want %q", got, want)
	}
	if got, want := strings.Join(acpxTexts(us, "agent_message_chunk"), "|"), "You said: first|You said: second"; got != want {
		t.Errorf("transcript agent messages %q, want %q", got, want)
	}
}
