package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/google/go-cmp/cmp"
)

// fakeAgent is an ACP agent in a goroutine: handle is called for every
// message the driver sends, and may write lines back with send.
type fakeAgent struct {
	t      *testing.T
	in     *io.PipeReader // what the driver writes
	out    *io.PipeWriter // what the driver reads
	handle func(a *fakeAgent, m map[string]any)
	done   chan struct{}

	// Set by basicAgent in the agent's goroutine; read once done is closed.
	pendingPrompt map[string]any // the session/prompt being played
	permission    any            // the driver's answer to the permission request
	fsError       any            // the driver's error for fs/read_text_file

	mu  sync.Mutex
	got []map[string]any // every message received
}

// runFake runs drive against a fake agent; it returns the agent, what the
// driver printed and drive's error.
func runFake(t *testing.T, script string, opts options, handle func(a *fakeAgent, m map[string]any)) (*fakeAgent, string, error) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	a := &fakeAgent{t: t, in: inR, out: outW, handle: handle, done: make(chan struct{})}
	go a.serve()
	var out syncbuf.Buffer
	if opts.timeout == 0 {
		opts.timeout = 5 * time.Second
	}
	if opts.exitGrace == 0 {
		opts.exitGrace = 5 * time.Second
	}
	if opts.permission == "" {
		opts.permission = "allow"
	}
	err := drive(context.Background(), strings.NewReader(script), inW, outR, &out, opts)
	outR.Close() // in case drive gave up before the agent's output ended
	<-a.done
	return a, out.String(), err
}

func (a *fakeAgent) serve() {
	defer close(a.done)
	defer a.out.Close()
	sc := bufio.NewScanner(a.in)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			a.t.Errorf("agent got a line that is not JSON: %s", sc.Bytes())
			continue
		}
		a.mu.Lock()
		a.got = append(a.got, m)
		a.mu.Unlock()
		a.handle(a, m)
	}
}

// send writes one message to the driver.
func (a *fakeAgent) send(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		a.t.Errorf("marshal: %v", err)
		return
	}
	a.sendRaw(string(b))
}

func (a *fakeAgent) sendRaw(line string) {
	if _, err := io.WriteString(a.out, line+"\n"); err != nil {
		a.t.Errorf("agent writing: %v", err)
	}
}

func (a *fakeAgent) reply(m map[string]any, result any) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": m["id"], "result": result})
}

func (a *fakeAgent) messages() []map[string]any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]map[string]any(nil), a.got...)
}

const header = `# a comment, then a blank line

{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}
{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}
`

// basicAgent answers initialize and session/new, and plays a prompt that
// asks permission and reads a file before it ends its turn.
func basicAgent(a *fakeAgent, m map[string]any) {
	params, _ := m["params"].(map[string]any)
	switch m["method"] {
	case "initialize":
		a.reply(m, map[string]any{"protocolVersion": 1})
	case "session/new":
		a.reply(m, map[string]any{"sessionId": `s"42`})
	case "session/prompt":
		if params["sessionId"] != `s"42` {
			a.t.Errorf("prompt sessionId = %v, want s\"42", params["sessionId"])
		}
		a.pendingPrompt = m
		a.send(map[string]any{"jsonrpc": "2.0", "id": 100, "method": "session/request_permission", "params": map[string]any{
			"sessionId": `s"42`,
			"toolCall":  map[string]any{"toolCallId": "call_1", "title": "Edit x"},
			"options": []map[string]any{
				{"optionId": "no", "name": "Reject", "kind": "reject_once"},
				{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
				{"optionId": "always", "name": "Always", "kind": "allow_always"},
			},
		}})
	case nil: // a response to the agent's own request
		switch m["id"] {
		case 100.0:
			a.permission = m["result"]
			a.send(map[string]any{"jsonrpc": "2.0", "id": "fs-1", "method": "fs/read_text_file", "params": map[string]any{"path": "/x"}})
		case "fs-1":
			a.fsError = m["error"]
			a.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": `s"42`}})
			a.reply(a.pendingPrompt, map[string]any{"stopReason": "end_turn"})
		}
	}
}

func TestDriveSession(t *testing.T) {
	script := header + `{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"$SESSION_ID","prompt":[]}}` + "\n"
	var log syncbuf.Buffer
	a, out, err := runFake(t, script, options{log: &log}, basicAgent)
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	want := map[string]any{"outcome": map[string]any{"outcome": "selected", "optionId": "yes"}}
	if fmt.Sprint(a.permission) != fmt.Sprint(want) {
		t.Errorf("permission answer = %v, want %v", a.permission, want)
	}
	if e, _ := a.fsError.(map[string]any); e["code"] != float64(codeMethodNotFound) {
		t.Errorf("fs/read_text_file answer error = %v, want code %d", a.fsError, codeMethodNotFound)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 6 { // 3 responses, 2 requests from the agent, 1 update
		t.Errorf("driver printed %d lines, want 6:\n%s", len(lines), out)
	}
	if !strings.Contains(lines[len(lines)-1], `"stopReason":"end_turn"`) {
		t.Errorf("last line = %s, want the prompt's response", lines[len(lines)-1])
	}
	if !strings.Contains(log.String(), `selected "yes" (allow_once)`) {
		t.Errorf("log = %q, want a note on the permission answer", log.String())
	}
}

func TestDrivePermissionPolicies(t *testing.T) {
	params := json.RawMessage(`{"toolCall":{"toolCallId":"c"},"options":[
		{"optionId":"always","kind":"allow_always"},{"optionId":"never","kind":"reject_always"},
		{"optionId":"no","kind":"reject_once"}]}`)
	for _, tc := range []struct{ policy, outcome, option string }{
		{"allow", "selected", "always"},
		{"reject", "selected", "no"},
		{"cancel", "cancelled", ""},
	} {
		got, _, err := choosePermission(tc.policy, params)
		if err != nil {
			t.Fatalf("%s: %v", tc.policy, err)
		}
		if got.Outcome.Outcome != tc.outcome || got.Outcome.OptionID != tc.option {
			t.Errorf("%s: got %+v, want %s %q", tc.policy, got.Outcome, tc.outcome, tc.option)
		}
	}
	got, note, _ := choosePermission("allow", json.RawMessage(`{"options":[{"optionId":"no","kind":"reject_once"}]}`))
	if got.Outcome.Outcome != "cancelled" || !strings.Contains(note, "no allow option") {
		t.Errorf("allow with no allow option: got %+v, %q", got.Outcome, note)
	}
}

func TestDriveAsyncCancel(t *testing.T) {
	script := header + `&{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"$SESSION_ID","prompt":[]}}
#sleep 10ms
{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"$SESSION_ID"}}
`
	var prompt map[string]any
	a, out, err := runFake(t, script, options{}, func(a *fakeAgent, m map[string]any) {
		switch m["method"] {
		case "session/prompt":
			prompt = m // answered only once cancelled
		case "session/cancel":
			a.reply(prompt, map[string]any{"stopReason": "cancelled"})
		default:
			basicAgent(a, m)
		}
	})
	if err != nil {
		t.Fatalf("drive: %v", err)
	}
	if got := a.messages(); len(got) != 4 || got[3]["method"] != "session/cancel" {
		t.Errorf("agent got %v, want 4 messages ending with session/cancel", got)
	}
	if !strings.Contains(out, `"stopReason":"cancelled"`) {
		t.Errorf("output lacks the cancelled response:\n%s", out)
	}
}

func TestDriveFailures(t *testing.T) {
	silent := func(a *fakeAgent, m map[string]any) {
		if m["method"] == "initialize" {
			basicAgent(a, m)
		}
	}
	for _, tc := range []struct {
		name, script string
		handle       func(a *fakeAgent, m map[string]any)
		want         string
	}{
		{
			name:   "session id before session/new",
			script: `{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"$SESSION_ID"}}`,
			handle: basicAgent,
			want:   "script line 1: $SESSION_ID is used before any session/new",
		},
		{
			name:   "timeout",
			script: header,
			handle: silent,
			want:   "script line 4: no response to request 2 (session/new) within 50ms",
		},
		{
			name:   "async timeout",
			script: strings.Replace(header, `{"jsonrpc":"2.0","id":2`, `&{"jsonrpc":"2.0","id":2`, 1),
			handle: silent,
			want:   "end of script: no response to request 2 (session/new) within 50ms",
		},
		{
			name:   "agent dies",
			script: header,
			handle: func(a *fakeAgent, m map[string]any) { a.out.Close() },
			want:   "script line 3: agent's output ended (has it exited?) before the response to request 1 (initialize)",
		},
		{
			name:   "not JSON",
			script: header,
			handle: func(a *fakeAgent, m map[string]any) {
				if m["method"] == "initialize" {
					a.sendRaw("Starting agent...")
				}
				basicAgent(a, m)
			},
			want: "agent wrote 1 line(s) that are not JSON",
		},
		{
			name:   "bad script line",
			script: "{oops\n",
			handle: basicAgent,
			want:   "script line 1: not a JSON-RPC message",
		},
		{
			name:   "bad sleep",
			script: "#sleep soon\n",
			handle: basicAgent,
			want:   `script line 1: bad "#sleep" directive`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var log syncbuf.Buffer
			_, _, err := runFake(t, tc.script, options{timeout: 50 * time.Millisecond, log: &log}, tc.handle)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("drive: %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestIDKey(t *testing.T) {
	for _, tc := range []struct{ a, b string }{{"7", "7.0"}, {`"x"`, ` "x"`}} {
		if idKey(json.RawMessage(tc.a)) != idKey(json.RawMessage(tc.b)) {
			t.Errorf("ids %s and %s differ", tc.a, tc.b)
		}
	}
	if idKey(json.RawMessage("7")) == idKey(json.RawMessage(`"7"`)) {
		t.Error(`ids 7 and "7" are the same`)
	}
}

// TestConversation plays the demo's script against the bridge on the
// mock agent, in process, and shows it as a person reads it.
func TestConversation(t *testing.T) {
	script, err := os.ReadFile("../mock-session.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{mock.New()}, Default: "mock", Persist: bridge.PersistNever,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go func() {
		edge.NewServer(m, "test", slog.New(slog.NewTextHandler(io.Discard, nil))).Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	var out bytes.Buffer
	if err := drive(context.Background(), bytes.NewReader(script), inW, outR, &out, options{show: "conversation", permission: "allow", timeout: 10 * time.Second, exitGrace: 5 * time.Second}); err != nil {
		t.Fatal(err)
	}
	got := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}`).ReplaceAllString(out.String(), "ID")
	want := `· initialize: acpbridge test, ACP protocol 1
· session/new: session ID (mode=default, model=mock-small, agent=mock)

> Hello! Please think, make a plan, read the README and edit mock.txt.
  (thinking) The user wants a demonstration. I will answer in small chunks.
  plan: [~] Read the README  [ ] Edit mock.txt  [ ] Answer the user
  [read] Read /tmp/README.md: pending
  [read] Read /tmp/README.md: completed
  [edit] Edit /tmp/mock.txt: pending
  ? permission for "Edit /tmp/mock.txt": selected "allow" (allow_once)
  [edit] Edit /tmp/mock.txt: completed
  plan: [x] Read the README  [x] Edit mock.txt  [~] Answer the user
agent: You said: Hello! Please think, make a plan, read the README and edit mock.txt.
  plan: [x] Read the README  [x] Edit mock.txt  [x] Answer the user
· stop: end_turn (25 tokens in, 25 out)
· set model = mock-large
· session/set_config_option: ok

> Say hello again
agent: (mock-large) You said: Say hello again
· stop: end_turn (6 tokens in, 6 out)
· session/list: 1 session(s)
    ID  "Hello! Please think, make a plan, read the README and edit mock.txt."  /tmp
`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("conversation (-want +got):\n%s", diff)
	}
}
