package serve

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// userMsg is a UIMessage from the user saying text.
func userMsg(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
}

// A chat's first POST starts a session and streams the turn; the chunks
// are framed as the AI SDK expects.
func TestChat_firstTurn(t *testing.T) {
	ws := startWebServer(t, startWebBridge(t), "")
	resp := post(t, ws.URL+"/api/chat", map[string]any{"id": "chat1", "trigger": "submit-message",
		"messages": []any{userMsg("u1", "hello, think and read")}})
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Vercel-Ai-Ui-Message-Stream") != "v1" {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, headers %v: %s", resp.StatusCode, resp.Header, b)
	}
	ev := sseEvents(t, resp.Body)
	t.Logf("%v", types(ev))
	if got := textOf(ev, "text-delta"); !strings.Contains(got, "You said: hello, think and read") {
		t.Errorf("text %q", got)
	}
	b, _ := json.Marshal(ev)
	t.Logf("%s", b)
}

func TestChat_approval(t *testing.T) {
	ws := startWebServer(t, startWebBridge(t), "")
	resp := post(t, ws.URL+"/api/chat", map[string]any{"id": "chat2", "messages": []any{userMsg("u1", "please edit")}})
	ev := sseEvents(t, resp.Body)
	resp.Body.Close()
	t.Logf("%v", types(ev))
	req := find(ev, "tool-approval-request")
	if req == nil {
		t.Fatal("no approval request")
	}
	asst := map[string]any{"id": "a1", "role": "assistant", "parts": []any{map[string]any{"type": "dynamic-tool", "toolName": "edit",
		"toolCallId": req["toolCallId"], "state": "approval-responded", "input": map[string]any{},
		"approval": map[string]any{"id": req["approvalId"], "approved": true}}}}
	resp = post(t, ws.URL+"/api/chat", map[string]any{"id": "chat2", "messages": []any{userMsg("u1", "please edit"), asst}})
	ev = sseEvents(t, resp.Body)
	resp.Body.Close()
	t.Logf("%v", types(ev))
	if resp.StatusCode != http.StatusOK || find(ev, "tool-output-available") == nil {
		t.Errorf("status %d: %v", resp.StatusCode, ev)
	}
}
