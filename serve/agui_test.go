package serve

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// runInputOf is a RunAgentInput for thread with messages (user texts).
func runInputOf(thread, run string, texts ...string) map[string]any {
	var msgs []any
	for i, s := range texts {
		msgs = append(msgs, map[string]any{"id": "u" + string(rune('1'+i)), "role": "user", "content": s})
	}
	if msgs == nil {
		msgs = []any{}
	}
	return map[string]any{"threadId": thread, "runId": run, "messages": msgs, "state": map[string]any{}, "tools": []any{}, "context": []any{}}
}

// aguiRunOf POSTs a run and returns its events; it fails unless the
// answer is 200.
func aguiRunOf(t *testing.T, base string, in map[string]any) []map[string]any {
	t.Helper()
	resp := post(t, base+"/ag-ui", in)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /ag-ui: %d %s", resp.StatusCode, b)
	}
	return sseEvents(t, resp.Body)
}

// finishedOf is a run's RUN_FINISHED outcome type and result.
func finishedOf(t *testing.T, events []map[string]any) (string, map[string]any) {
	t.Helper()
	f := find(events, "RUN_FINISHED")
	if f == nil {
		t.Fatalf("no RUN_FINISHED: %v", types(events))
	}
	outcome, _ := f["outcome"].(map[string]any)
	result, _ := f["result"].(map[string]any)
	return outcome["type"].(string), result
}

// Inputs that are not AG-UI's, or that name what is not there, get a
// clear JSON error.
func TestAGUI_badRequests(t *testing.T) {
	ws := startWebServer(t, startWebBridge(t), "")
	url := ws.URL + "/ag-ui"
	resp, err := http.Post(url, "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, "not JSON", resp, 400, "not a JSON request")
	in := runInputOf("t1", "r1", "hi")
	delete(in, "runId")
	wantError(t, "no runId", post(t, url, in), 400, "threadId, runId and messages are required")
	wantError(t, "an unknown thread with no messages", post(t, url, runInputOf("nobody", "r1")), 404, "no session has this thread id")
	in = runInputOf("t2", "r1", "hi")
	in["resume"] = []any{map[string]any{"interruptId": "ask_gone", "status": "resolved", "payload": map[string]any{"optionId": "allow"}}}
	wantError(t, "a resume of no interrupt", post(t, url, in), 409, "no turn of this chat waits")

	// An interrupt resumed with an option it did not offer, then a run
	// that ignores the interrupt: both refused, and the interrupt still
	// waits for its answer.
	ev := aguiRunOf(t, ws.URL, runInputOf("t3", "r1", "edit it"))
	if out, _ := finishedOf(t, ev); out != "interrupt" {
		t.Fatalf("the edit's run: %s", out)
	}
	intr := find(ev, "RUN_FINISHED")["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)
	in = runInputOf("t3", "r2", "edit it")
	in["resume"] = []any{map[string]any{"interruptId": intr["id"], "status": "resolved", "payload": map[string]any{"optionId": "bogus"}}}
	wantError(t, "an option not offered", post(t, url, in), 400, `option "bogus" is not one of`)
	wantError(t, "a run past a pending interrupt", post(t, url, runInputOf("t3", "r3", "edit it")), 409, "waits on an interrupt")
	in["resume"] = []any{map[string]any{"interruptId": intr["id"], "status": "resolved", "payload": map[string]any{"optionId": "allow"}}}
	if out, _ := finishedOf(t, aguiRunOf(t, ws.URL, in)); out != "success" {
		t.Errorf("the resumed run: %s", out)
	}
}

// A client that goes away mid-run cancels the turn; the next run is
// answered.
func TestAGUI_clientGoneMidRun(t *testing.T) {
	ws := startWebServer(t, startWebBridge(t), "")
	ctx, cancel := context.WithCancel(t.Context())
	resp := startStream(t, ctx, ws.URL+"/ag-ui", runInputOf("t1", "r1", "slow "+strings.Repeat("word ", 40)))
	readUntil(t, bufio.NewReader(resp.Body), "TEXT_MESSAGE_CONTENT")
	cancel()
	resp.Body.Close()
	in := runInputOf("t1", "r2", "slow", "hello")
	ev := aguiRunOf(t, ws.URL, in)
	if out, _ := finishedOf(t, ev); out != "success" || textOf(ev, "TEXT_MESSAGE_CONTENT") != "You said: hello" {
		t.Errorf("the run after: %v %q", types(ev), textOf(ev, "TEXT_MESSAGE_CONTENT"))
	}
}

// After a restart a thread is reopened in its session, and the run begins
// with a MESSAGES_SNAPSHOT of its conversation; a run with nothing new to
// prompt only says what the thread is.
func TestAGUI_reopenedAfterRestart(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	wb := startWebBridgeIn(t, dir)
	ws := startWebServer(t, wb, state)
	_, result := finishedOf(t, aguiRunOf(t, ws.URL, runInputOf("t1", "r1", "hello")))
	sid := result["sessionId"]
	ws.stop()
	wb.stop(t)

	wb = startWebBridgeIn(t, dir)
	ws = startWebServer(t, wb, state)
	ev := aguiRunOf(t, ws.URL, runInputOf("t1", "r2", "hello", "again"))
	snap := find(ev, "MESSAGES_SNAPSHOT")
	if snap == nil || !strings.Contains(mustJSON(snap), "You said: hello") || !strings.Contains(mustJSON(snap), `"again"`) {
		t.Errorf("no snapshot of the reopened thread with its new message: %v", mustJSON(snap))
	}
	if _, result := finishedOf(t, ev); result["sessionId"] != sid || textOf(ev, "TEXT_MESSAGE_CONTENT") != "You said: again" {
		t.Errorf("after the restart: session %v (want %v), %q", result["sessionId"], sid, textOf(ev, "TEXT_MESSAGE_CONTENT"))
	}
	ev = aguiRunOf(t, ws.URL, runInputOf("t1", "r3", "hello", "again"))
	if got := types(ev); strings.Join(got, " ") != "RUN_STARTED RUN_FINISHED" {
		t.Errorf("a run with nothing new: %v", got)
	}

	// After another restart, the thread knows what it was last prompted
	// with: the same messages prompt nothing.
	ws.stop()
	wb.stop(t)
	ws = startWebServer(t, startWebBridgeIn(t, dir), state)
	ev = aguiRunOf(t, ws.URL, runInputOf("t1", "r4", "hello", "again"))
	if got := types(ev); strings.Join(got, " ") != "RUN_STARTED MESSAGES_SNAPSHOT RUN_FINISHED" {
		t.Errorf("the same messages after a restart: %v", got)
	}
}

// A resume entry: resolved with an optionId (or approved), or cancelled.
func TestResumeOutcome(t *testing.T) {
	yes, no := true, false
	a := askWith("ok:allow_once", "nope:reject_once")
	for _, tc := range []struct {
		name string
		e    resumeEntry
		want string
		bad  bool
	}{
		{"an option", resumeEntry{Status: "resolved", Payload: payload("nope", nil)}, "selected nope", false},
		{"approved", resumeEntry{Status: "resolved", Payload: payload("", &yes)}, "selected ok", false},
		{"not approved", resumeEntry{Status: "resolved", Payload: payload("", &no)}, "selected nope", false},
		{"cancelled", resumeEntry{Status: "cancelled"}, "cancelled", false},
		{"resolved with nothing", resumeEntry{Status: "resolved"}, "", true},
		{"another status", resumeEntry{Status: "maybe"}, "", true},
		{"an option not offered", resumeEntry{Status: "resolved", Payload: payload("x", nil)}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resumeOutcome(a, tc.e)
			if tc.bad != (err != nil) || (!tc.bad && outcomeText(got) != tc.want) {
				t.Errorf("got %q, %v; want %q (bad request: %v)", outcomeText(got), err, tc.want, tc.bad)
			}
		})
	}
}

func payload(optionID string, approved *bool) (p struct {
	OptionID string `json:"optionId"`
	Approved *bool  `json:"approved"`
}) {
	p.OptionID, p.Approved = optionID, approved
	return p
}
