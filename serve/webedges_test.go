package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// attachedTo counts the registry's connections that have session id
// attached.
func attachedTo(reg *core.Registry, id string) int {
	n := 0
	for _, c := range reg.Conns() {
		if c.Attached(id) {
			n++
		}
	}
	return n
}

// On one Registry, a session is attached to one connection at a time: a
// chat's session reopened as an AG-UI thread moves to the AG-UI edge's
// connection, and the chat's next message takes it back.
func TestChat_takenOverByAnotherEdge(t *testing.T) {
	ws := startWebServer(t, startWebBridge(t), "")
	sid := sessionOf(t, chatTurn(t, ws.URL, "c1", userMsg("u1", "hello")))
	if n := attachedTo(ws.reg, sid); n != 1 {
		t.Fatalf("the chat's session is attached to %d connections, want 1", n)
	}
	ev := aguiRunOf(t, ws.URL, runInputOf(sid, "r1", "from ag-ui"))
	if find(ev, "MESSAGES_SNAPSHOT") == nil || textOf(ev, "TEXT_MESSAGE_CONTENT") != "You said: from ag-ui" {
		t.Fatalf("the AG-UI run on the chat's session: %v", types(ev))
	}
	if n := attachedTo(ws.reg, sid); n != 1 {
		t.Errorf("after the AG-UI edge took it over: attached to %d connections, want 1", n)
	}
	ev = chatTurn(t, ws.URL, "c1", userMsg("u1", "hello"), userMsg("u2", "back in the chat"))
	if got := textOf(ev, "text-delta"); got != "You said: back in the chat" {
		t.Errorf("the chat after the takeover: %q", got)
	}
	msgs := getMessages(t, ws, sid)
	if len(msgs) != 6 {
		t.Errorf("the session has %d messages, want 6 (three turns):\n%s", len(msgs), mustJSON(msgs))
	}
}

// A chat or thread id past 1,024 bytes is refused (400) and not kept.
func TestChat_idCapped(t *testing.T) {
	state := t.TempDir()
	ws := startWebServer(t, startWebBridge(t), state)
	long := strings.Repeat("c", maxChatID+1)
	wantError(t, "a long chat id", post(t, ws.URL+"/api/chat", map[string]any{"id": long,
		"messages": []any{userMsg("u1", "hi")}}), 400, "at most 1024")
	wantError(t, "a long thread id", post(t, ws.URL+"/ag-ui", runInputOf(long, "r1", "hi")), 400, "at most 1024")
	for _, d := range []string{"webchats", "agui-threads"} {
		if ents, _ := os.ReadDir(filepath.Join(state, d)); len(ents) != 0 {
			t.Errorf("%s holds %d files after refused ids", d, len(ents))
		}
	}
	chatTurn(t, ws.URL, strings.Repeat("c", maxChatID), userMsg("u1", "hello")) // the longest taken
}
