package acpagent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/coder/acp-go-sdk"
)

func TestRewrite(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}}`},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"notice","severity":"info","title":"t","_meta":{"m":1}}}}`,
			`{"jsonrpc":"2.0","method":"_acpbridge/raw_update","params":{"sessionId":"s","update":{"sessionUpdate":"notice","severity":"info","title":"t","_meta":{"m":1}}}}`},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"future_update","title":"t"}}}`,
			`{"jsonrpc":"2.0","method":"_acpbridge/raw_update","params":{"sessionId":"s","update":{"sessionUpdate":"future_update","title":"t"}}}`},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi","annotations":{"priority":1}}}}}`,
			`{"jsonrpc":"2.0","method":"_acpbridge/raw_update","params":{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi","annotations":{"priority":1}}}}}`},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","name":"Bash","content":[],"locations":[],"rawInput":{},"_meta":null,"future":{"x":1}}}}`,
			`{"jsonrpc":"2.0","method":"_acpbridge/raw_update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","name":"Bash","content":[],"locations":[],"rawInput":{},"_meta":null,"future":{"x":1}}}}`},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","name":"Bash","content":[],"locations":[],"rawInput":{},"_meta":null}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"ls","name":"Bash","content":[],"locations":[],"rawInput":{},"_meta":null}}}`},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"code","future":1}}}`,
			`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"current_mode_update","currentModeId":"code","future":1}}}`},
		{`{"jsonrpc":"2.0","method":"_auth/status_update","params":{"ok":true}}`,
			`{"jsonrpc":"2.0","method":"_acpbridge/notification","params":{"method":"_auth/status_update","params":{"ok":true}}}`},
		{`{"jsonrpc":"2.0","id":7,"method":"_fake/ping","params":{}}`, `{"jsonrpc":"2.0","id":7,"method":"_fake/ping","params":{}}`},
		{`{"jsonrpc":"2.0","method":"_x/list","params":[1,2]}`,
			`{"jsonrpc":"2.0","method":"_acpbridge/notification","params":{"method":"_x/list","params":[1,2]}}`},
		{`{"method": garbage`, `{"method": garbage`},
	} {
		if got := strings.TrimSuffix(string(rewrite([]byte(c.in+"\n"))), "\n"); got != c.want {
			t.Errorf("rewrite(%s)\n = %s\nwant %s", c.in, got, c.want)
		}
	}
}

// An agent newer than the SDK: an update of a kind the SDK does not know
// reaches the editor as it came (unknown fields and _meta kept, never
// decoded as another kind: its title renames nothing), is recorded and
// replayed as it came, and so is one of a kind the SDK knows with a field
// its types lack; an extension notification reaches the editor as a
// notification, not a request.
func TestProxy_newerUpdatesAndNotificationsPassAsTheyCame(t *testing.T) {
	f := newFake(t)
	state, cwd := t.TempDir(), t.TempDir()
	e := editortest.StartEditor(t, f.backend(), state, bridge.PersistAlways)
	id := e.NewSession(cwd)
	prompt(t, e, id, "notice")
	wire := e.Wire()
	for _, u := range []string{unknownKind, unknownField} {
		if !strings.Contains(wire, u) {
			t.Errorf("%s did not reach the editor as it came:\n%s", u, wire)
		}
	}
	if strings.Contains(wire, `"sessionUpdate":"session_info_update","title":"Heads up"`) {
		t.Errorf("the unknown kind reached the editor as another kind:\n%s", wire)
	}
	if n := notificationOf(t, wire, "_auth/status_update"); n == nil {
		t.Errorf("the extension notification did not reach the editor as a notification:\n%s", wire)
	}
	e.Stop()

	e2 := editortest.StartEditor(t, f.backend(), state, bridge.PersistAlways)
	if _, err := e2.CS.LoadSession(e2.Ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{unknownKind, unknownField} {
		if !strings.Contains(e2.Wire(), u) {
			t.Errorf("the replay lacks %s as it came:\n%s", u, e2.Wire())
		}
	}
	if rec := readTranscript(t, state, id); !strings.Contains(rec, unknownKind) || !strings.Contains(rec, unknownField) {
		t.Errorf("the transcript lacks the updates as they came:\n%s", rec)
	}
	list, err := e2.CS.ListSessions(e2.Ctx(), acp.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Title != nil && *list.Sessions[0].Title == "Heads up" {
		t.Errorf("the notice renamed the session: %+v %v", list.Sessions, err)
	}
}

// notificationOf is the message on the wire with method, if it has no id.
func notificationOf(t *testing.T, wire, method string) map[string]any {
	for _, line := range strings.Split(wire, "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil || m["method"] != method {
			continue
		}
		if _, hasID := m["id"]; hasID {
			t.Errorf("%s reached the editor as a request: %s", method, line)
			return nil
		}
		return m
	}
	return nil
}

// FuzzRewrite: whatever a downstream prints, the raw layer hands the SDK
// a line, valid JSON when it was (the SDK then says what is wrong with it).
func FuzzRewrite(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":{"sessionUpdate":"notice"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"_x","params":null}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":null,"method":"_x"}`))
	f.Add([]byte(`{"method":"session/update","params":{"update":[]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		out := rewrite(line)
		if json.Valid(line) && !json.Valid(out) {
			t.Errorf("rewrite(%s) = %s, not JSON", line, out)
		}
	})
}

// The editor's extension methods about a session reach the downstream
// naming its own session: a request as a request, answered with its
// answer; a notification as a notification.
func TestProxy_editorExtensionMethodsReachTheAgent(t *testing.T) {
	f := newFake(t)
	e := editortest.StartEditor(t, f.backend(), t.TempDir(), bridge.PersistAlways)
	id := e.NewSession(t.TempDir())
	prompt(t, e, id, "hello") // the downstream session is open
	out, err := e.CS.CallExtension(e.Ctx(), "_zed/ping", map[string]any{"sessionId": id, "n": 1})
	if err != nil || !strings.Contains(string(out), `"method":"_zed/ping"`) || strings.Contains(string(out), string(id)) {
		t.Errorf("extension request answered %s, %v; want the agent's answer, naming its own session", out, err)
	}
	if err := e.CS.NotifyExtension(e.Ctx(), "_zed/hello", map[string]any{"sessionId": id}); err != nil {
		t.Fatal(err)
	}
	var log []byte
	for deadline := time.Now().Add(nativetest.WaitGuard); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if log, _ = os.ReadFile(filepath.Join(f.dir, "stdin.log")); strings.Contains(string(log), "_zed/hello") {
			break
		}
	}
	var req, note map[string]any
	for _, line := range strings.Split(string(log), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch m["method"] {
		case "_zed/ping":
			req = m
		case "_zed/hello":
			note = m
		}
	}
	if req == nil || req["id"] == nil {
		t.Errorf("the agent got the request as %v, want a request", req)
	}
	if _, hasID := note["id"]; note == nil || hasID {
		t.Errorf("the agent got the notification as %v, want a notification", note)
	}
}

// readTranscript is session id's transcript file under state.
func readTranscript(t *testing.T, state string, id acp.SessionId) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(state, "sessions", string(id)+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
