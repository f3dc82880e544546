package aisdk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
)

// approvalMsg is an assistant UIMessage answering approval id of tool call
// callID.
func approvalMsg(callID, id any, approved bool) map[string]any {
	return map[string]any{"id": "a1", "role": "assistant", "parts": []any{map[string]any{"type": "dynamic-tool",
		"toolName": "edit", "toolCallId": callID, "state": "approval-responded", "input": map[string]any{},
		"approval": map[string]any{"id": id, "approved": approved}}}}
}

// Requests that are not what the AI SDK sends, or that name what is not
// there, get a clear JSON error and change nothing.
func TestChat_badRequests(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	url := ws.URL + "/api/chat"
	raw := func(body string) *http.Response {
		resp, err := http.Post(url, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	webtest.WantError(t, "not JSON", raw("hello"), 400, "not a JSON request")
	webtest.WantError(t, "messages not a list", raw(`{"id":"c1","messages":"hello"}`), 400, "not a JSON request")
	webtest.WantError(t, "no chat id", raw(`{"messages":[]}`), 400, "no chat id")
	webtest.WantError(t, "an unknown chat with no messages", webtest.Post(t, url, map[string]any{"id": "nobody", "messages": []any{}}), 404, "no session has this chat id")
	webtest.WantError(t, "an unknown chat with no user message", webtest.Post(t, url, map[string]any{"id": "nobody",
		"messages": []any{map[string]any{"id": "a", "role": "assistant", "parts": []any{}}}}), 404, "no user message")
	webtest.WantError(t, "regenerate", webtest.Post(t, url, map[string]any{"id": "c2", "trigger": "regenerate-message",
		"messages": []any{webtest.UserMsg("u1", "hi")}}), 400, "can't take back a turn")
	webtest.WantError(t, "an approval for no ask", webtest.Post(t, url, map[string]any{"id": "c3",
		"messages": []any{webtest.UserMsg("u1", "edit"), approvalMsg("t1", "ask_gone", true)}}), 409, "no turn of this chat waits")
	webtest.WantError(t, "a user message with nothing in it", webtest.Post(t, url, map[string]any{"id": "c4",
		"messages": []any{map[string]any{"id": "u1", "role": "user", "parts": []any{}}}}), 400, "no text or file part")

	resp, err := http.Get(ws.URL + "/api/chat/nobody/stream")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("GET stream of no chat: %d, want 204", resp.StatusCode)
	}
	resp, err = http.Get(ws.URL + "/v1/sessions/0197a3c2-0000-7000-8000-000000000000/messages")
	if err != nil {
		t.Fatal(err)
	}
	webtest.WantError(t, "messages of no session", resp, 404, "no such session")

	// The bridge is none the worse: a chat works.
	ev := webtest.ChatTurn(t, ws.URL, "c5", webtest.UserMsg("u1", "hello"))
	if got := webtest.TextOf(ev, "text-delta"); got != "You said: hello" {
		t.Errorf("after the bad requests: %q", got)
	}
}

// An approval that comes after its ask timed out is refused (409), and
// nothing is lost: the turn was recorded (the edit failed, the ask
// cancelled), and the chat goes on.
func TestChat_approvalForAnAskThatIsGone(t *testing.T) {
	ws := startServerWith(t, webtest.StartBridge(t), web.Options{AskTimeout: 200 * time.Millisecond})
	ev := webtest.ChatTurn(t, ws.URL, "c1", webtest.UserMsg("u1", "please edit"))
	req := webtest.Find(ev, "tool-approval-request")
	if req == nil {
		t.Fatalf("no approval request: %v", webtest.Types(ev))
	}
	sid := webtest.SessionOf(t, ev)
	waitNoTurn(t, ws, "c1")
	webtest.WantError(t, "the late approval", webtest.Post(t, ws.URL+"/api/chat", map[string]any{"id": "c1",
		"messages": []any{webtest.UserMsg("u1", "please edit"), approvalMsg(req["toolCallId"], req["approvalId"], true)}}), 409, "no turn of this chat waits")

	ev = webtest.ChatTurn(t, ws.URL, "c1", webtest.UserMsg("u1", "please edit"), webtest.UserMsg("u2", "hello"))
	if got := webtest.TextOf(ev, "text-delta"); got != "You said: hello" {
		t.Errorf("the next turn: %q", got)
	}
	msgs := webtest.GetMessages(t, ws.URL, sid)
	if len(msgs) != 4 || !strings.Contains(webtest.MustJSON(msgs[1]), "the permission ask was cancelled") {
		t.Errorf("the timed-out turn as replayed:\n%s", webtest.MustJSON(msgs))
	}
}

// waitNoTurn waits until chat id has no turn running (its stream is 204).
func waitNoTurn(t *testing.T, ws *server, id string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for ws.chat.chats.SegmentOf(id) != nil {
		if time.Now().After(deadline) {
			t.Fatal("the turn did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A client that goes away mid-stream cancels its turn: the turn is
// recorded as far as it went, and the next message is answered.
func TestChat_clientGoneMidStream(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	ctx, cancel := context.WithCancel(t.Context())
	long := "slow " + strings.Repeat("word ", 40)
	resp := webtest.StartStream(t, ctx, ws.URL+"/api/chat", map[string]any{"id": "c1", "messages": []any{webtest.UserMsg("u1", long)}})
	r := bufio.NewReader(resp.Body)
	webtest.ReadUntil(t, r, `"sessionId"`)
	webtest.ReadUntil(t, r, `"text-delta"`)
	cancel()
	resp.Body.Close()
	sid := ws.chat.chats.SessionOf("c1")

	ev := webtest.ChatTurn(t, ws.URL, "c1", webtest.UserMsg("u1", long), webtest.UserMsg("u2", "hello"))
	if got := webtest.TextOf(ev, "text-delta"); got != "You said: hello" {
		t.Errorf("the turn after: %q", got)
	}
	msgs := webtest.GetMessages(t, ws.URL, sid)
	if len(msgs) != 4 {
		t.Fatalf("replayed %d messages, want 4:\n%s", len(msgs), webtest.MustJSON(msgs))
	}
	said := webtest.MustJSON(msgs[1])
	if !strings.Contains(said, `"You `) || strings.Contains(said, strings.TrimSpace(long)) {
		t.Errorf("the cancelled turn's answer should be there, cut short:\n%s", said)
	}
}

// GET /api/chat/{id}/stream follows a running turn from its start; once
// no turn runs it answers 204.
func TestChat_resumeStream(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	done := make(chan string, 1) // the POST's body
	go func() {
		b, _ := json.Marshal(map[string]any{"id": "c1", "messages": []any{webtest.UserMsg("u1", "slow down")}})
		resp, err := http.Post(ws.URL+"/api/chat", "application/json", bytes.NewReader(b))
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		done <- string(body)
	}()
	var resumed []map[string]any
	for deadline := time.Now().Add(time.Minute); resumed == nil; {
		resp, err := http.Get(ws.URL + "/api/chat/c1/stream")
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == http.StatusOK {
			resumed = webtest.SSEEvents(t, resp.Body)
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatal("no stream to resume")
		}
		time.Sleep(5 * time.Millisecond)
	}
	posted := webtest.SSEEvents(t, strings.NewReader(<-done))
	if webtest.MustJSON(resumed) != webtest.MustJSON(posted) {
		t.Errorf("the resumed stream differs from the POST's:\n%v\n%v", webtest.Types(resumed), webtest.Types(posted))
	}
	waitNoTurn(t, ws, "c1")
	resp, err := http.Get(ws.URL + "/api/chat/c1/stream")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Errorf("after the turn: %d, want 204", resp.StatusCode)
	}
}

// A chat id the bridge doesn't know whose messages carry history starts a
// session told that history.
func TestChat_historyToldToANewSession(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	asst := map[string]any{"id": "a1", "role": "assistant", "parts": []any{map[string]any{"type": "text", "text": "It is 4."}}}
	ev := webtest.ChatTurn(t, ws.URL, "elsewhere", webtest.UserMsg("u1", "What is 2+2?"), asst, webtest.UserMsg("u2", "And 3+3?"))
	got := webtest.TextOf(ev, "text-delta")
	for _, want := range []string{"<conversation_so_far>", "User: What is 2+2?", "Agent: It is 4.", "And 3+3?"} {
		if !strings.Contains(got, want) {
			t.Errorf("the first prompt (the mock echoes it) lacks %q:\n%s", want, got)
		}
	}
}

// The map from chat ids to sessions survives a restart: after it the
// chat goes on in the same session, not told its history again.
func TestChat_survivesRestart(t *testing.T) {
	dir, state := t.TempDir(), t.TempDir()
	wb := webtest.StartBridgeIn(t, dir)
	ws := startServer(t, wb, state)
	sid := webtest.SessionOf(t, webtest.ChatTurn(t, ws.URL, "c1", webtest.UserMsg("u1", "hello")))
	ws.Stop()
	wb.Stop(t)

	fi, err := os.Stat(filepath.Join(state, "webchats", web.ChatFileName("c1")))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the chat's file: %v, %v", fi, err)
	}
	ws = startServer(t, webtest.StartBridgeIn(t, dir), state)
	ev := webtest.ChatTurn(t, ws.URL, "c1", webtest.UserMsg("u1", "hello"), webtest.UserMsg("u2", "again"))
	if got := webtest.SessionOf(t, ev); got != sid {
		t.Errorf("after the restart the chat is in session %s, want %s", got, sid)
	}
	if got := webtest.TextOf(ev, "text-delta"); got != "You said: again" {
		t.Errorf("after the restart: %q", got)
	}
}

// A new chat's body chooses its session's mode (and model): in
// acceptEdits the mock edits without asking. A mode the agent has not is
// a 400, and leaves no chat behind.
func TestChat_newChatOptions(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	ev := chatTurnWith(t, ws.URL, map[string]any{"id": "c1", "mode": "acceptEdits", "model": "mock-large",
		"messages": []any{webtest.UserMsg("u1", "please edit")}})
	if webtest.Find(ev, "tool-approval-request") != nil || webtest.Find(ev, "tool-output-available") == nil {
		t.Errorf("acceptEdits still asked, or the edit has no output: %v", webtest.Types(ev))
	}
	if got := webtest.TextOf(ev, "text-delta"); got != "(mock-large) You said: please edit" {
		t.Errorf("the model: %q", got)
	}
	webtest.WantError(t, "an unknown mode", webtest.Post(t, ws.URL+"/api/chat", map[string]any{"id": "c2", "mode": "yolo",
		"messages": []any{webtest.UserMsg("u1", "hi")}}), 400, "yolo")
	if ws.chat.chats.SegmentOf("c2") != nil || ws.chat.chats.Count() != 1 {
		t.Errorf("the refused chat was kept: %d chats", ws.chat.chats.Count())
	}
}

// A chats map kept whole (as before) that is not JSON is moved aside, and
// the edge starts; a chat's file that is not one is moved aside too.
func TestChat_corruptMap(t *testing.T) {
	state := t.TempDir()
	path := filepath.Join(state, "webchats.json")
	if err := os.WriteFile(path, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(state, "webchats", web.ChatFileName("c0"))
	os.MkdirAll(filepath.Dir(bad), 0o700)
	if err := os.WriteFile(bad, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	ws := startServer(t, webtest.StartBridge(t), state)
	webtest.ChatTurn(t, ws.URL, "c1", webtest.UserMsg("u1", "hello"))
	for _, p := range []string{path, bad} {
		if _, err := os.Stat(p + ".corrupt"); err != nil {
			t.Errorf("the corrupt %s was not kept aside: %v", filepath.Base(p), err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(state, "webchats", web.ChatFileName("c1")))
	if !strings.Contains(string(b), `"c1"`) {
		t.Errorf("the new chat's file: %s", b)
	}
}

// chatTurnWith POSTs body and returns the events; it fails unless 200.
func chatTurnWith(t *testing.T, base string, body map[string]any) []map[string]any {
	t.Helper()
	resp := webtest.Post(t, base+"/api/chat", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/chat: %d %s", resp.StatusCode, b)
	}
	return webtest.SSEEvents(t, resp.Body)
}
