package agui

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// Inputs that are not AG-UI's, or that name what is not there, get a
// clear JSON error.
func TestAGUI_badRequests(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	url := ws.URL + "/ag-ui"
	resp, err := http.Post(url, "application/json", strings.NewReader("{"))
	if err != nil {
		t.Fatal(err)
	}
	webtest.WantError(t, "not JSON", resp, 400, "not a JSON request")
	in := webtest.RunInput("t1", "r1", "hi")
	delete(in, "runId")
	webtest.WantError(t, "no runId", webtest.Post(t, url, in), 400, "threadId, runId and messages are required")
	webtest.WantError(t, "an unknown thread with no messages", webtest.Post(t, url, webtest.RunInput("nobody", "r1")), 404, "no session has this thread id")
	in = webtest.RunInput("t2", "r1", "hi")
	in["resume"] = []any{map[string]any{"interruptId": "ask_gone", "status": "resolved", "payload": map[string]any{"optionId": "allow"}}}
	webtest.WantError(t, "a resume of no interrupt", webtest.Post(t, url, in), 409, "no turn of this chat waits")

	// An interrupt resumed with an option it did not offer, then a run
	// that ignores the interrupt: both refused, and the interrupt still
	// waits for its answer.
	ev := webtest.AGUIRun(t, ws.URL, webtest.RunInput("t3", "r1", "edit it"))
	if out, _ := webtest.FinishedOf(t, ev); out != "interrupt" {
		t.Fatalf("the edit's run: %s", out)
	}
	intr := webtest.Find(ev, "RUN_FINISHED")["outcome"].(map[string]any)["interrupts"].([]any)[0].(map[string]any)
	in = webtest.RunInput("t3", "r2", "edit it")
	in["resume"] = []any{map[string]any{"interruptId": intr["id"], "status": "resolved", "payload": map[string]any{"optionId": "bogus"}}}
	webtest.WantError(t, "an option not offered", webtest.Post(t, url, in), 400, `option "bogus" is not one of`)
	webtest.WantError(t, "a run past a pending interrupt", webtest.Post(t, url, webtest.RunInput("t3", "r3", "edit it")), 409, "waits on an interrupt")
	in["resume"] = []any{map[string]any{"interruptId": intr["id"], "status": "resolved", "payload": map[string]any{"optionId": "allow"}}}
	if out, _ := webtest.FinishedOf(t, webtest.AGUIRun(t, ws.URL, in)); out != "success" {
		t.Errorf("the resumed run: %s", out)
	}
}

// A client that goes away mid-run cancels the turn; the next run is
// answered.
func TestAGUI_clientGoneMidRun(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	ctx, cancel := context.WithCancel(t.Context())
	resp := webtest.StartStream(t, ctx, ws.URL+"/ag-ui", webtest.RunInput("t1", "r1", "slow "+strings.Repeat("word ", 40)))
	webtest.ReadUntil(t, bufio.NewReader(resp.Body), "TEXT_MESSAGE_CONTENT")
	cancel()
	resp.Body.Close()
	in := webtest.RunInput("t1", "r2", "slow", "hello")
	ev := webtest.AGUIRun(t, ws.URL, in)
	if out, _ := webtest.FinishedOf(t, ev); out != "success" || webtest.TextOf(ev, "TEXT_MESSAGE_CONTENT") != "You said: hello" {
		t.Errorf("the run after: %v %q", webtest.Types(ev), webtest.TextOf(ev, "TEXT_MESSAGE_CONTENT"))
	}
}

// After a restart a thread is reopened in its session, and the run begins
// with a MESSAGES_SNAPSHOT of its conversation; a run with nothing new to
// prompt only says what the thread is.
func TestAGUI_reopenedAfterRestart(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	wb := webtest.StartBridgeIn(t, dir)
	ws := startServer(t, wb, state)
	_, result := webtest.FinishedOf(t, webtest.AGUIRun(t, ws.URL, webtest.RunInput("t1", "r1", "hello")))
	sid := result["sessionId"]
	ws.Stop()
	wb.Stop(t)

	wb = webtest.StartBridgeIn(t, dir)
	ws = startServer(t, wb, state)
	ev := webtest.AGUIRun(t, ws.URL, webtest.RunInput("t1", "r2", "hello", "again"))
	snap := webtest.Find(ev, "MESSAGES_SNAPSHOT")
	if snap == nil || !strings.Contains(webtest.MustJSON(snap), "You said: hello") || !strings.Contains(webtest.MustJSON(snap), `"again"`) {
		t.Errorf("no snapshot of the reopened thread with its new message: %v", webtest.MustJSON(snap))
	}
	if _, result := webtest.FinishedOf(t, ev); result["sessionId"] != sid || webtest.TextOf(ev, "TEXT_MESSAGE_CONTENT") != "You said: again" {
		t.Errorf("after the restart: session %v (want %v), %q", result["sessionId"], sid, webtest.TextOf(ev, "TEXT_MESSAGE_CONTENT"))
	}
	ev = webtest.AGUIRun(t, ws.URL, webtest.RunInput("t1", "r3", "hello", "again"))
	if got := webtest.Types(ev); strings.Join(got, " ") != "RUN_STARTED RUN_FINISHED" {
		t.Errorf("a run with nothing new: %v", got)
	}

	// After another restart, the thread knows what it was last prompted
	// with: the same messages prompt nothing.
	ws.Stop()
	wb.Stop(t)
	ws = startServer(t, webtest.StartBridgeIn(t, dir), state)
	ev = webtest.AGUIRun(t, ws.URL, webtest.RunInput("t1", "r4", "hello", "again"))
	if got := webtest.Types(ev); strings.Join(got, " ") != "RUN_STARTED MESSAGES_SNAPSHOT RUN_FINISHED" {
		t.Errorf("the same messages after a restart: %v", got)
	}
}

// A resume entry: resolved with an optionId (or approved), or cancelled.
func TestResumeOutcome(t *testing.T) {
	yes, no := true, false
	a := webtest.AskWith("ok:allow_once", "nope:reject_once")
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
			if tc.bad != (err != nil) || (!tc.bad && webtest.OutcomeText(got) != tc.want) {
				t.Errorf("got %q, %v; want %q (bad request: %v)", webtest.OutcomeText(got), err, tc.want, tc.bad)
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
