package serve

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
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
	ws := startWebServer(t, webtest.StartBridge(t), "")
	sid := webtest.SessionOf(t, webtest.ChatTurn(t, ws.URL, "c1", webtest.UserMsg("u1", "hello")))
	if n := attachedTo(ws.Reg, sid); n != 1 {
		t.Fatalf("the chat's session is attached to %d connections, want 1", n)
	}
	ev := webtest.AGUIRun(t, ws.URL, webtest.RunInput(sid, "r1", "from ag-ui"))
	if webtest.Find(ev, "MESSAGES_SNAPSHOT") == nil || webtest.TextOf(ev, "TEXT_MESSAGE_CONTENT") != "You said: from ag-ui" {
		t.Fatalf("the AG-UI run on the chat's session: %v", webtest.Types(ev))
	}
	if n := attachedTo(ws.Reg, sid); n != 1 {
		t.Errorf("after the AG-UI edge took it over: attached to %d connections, want 1", n)
	}
	ev = webtest.ChatTurn(t, ws.URL, "c1", webtest.UserMsg("u1", "hello"), webtest.UserMsg("u2", "back in the chat"))
	if got := webtest.TextOf(ev, "text-delta"); got != "You said: back in the chat" {
		t.Errorf("the chat after the takeover: %q", got)
	}
	msgs := webtest.GetMessages(t, ws.URL, sid)
	if len(msgs) != 6 {
		t.Errorf("the session has %d messages, want 6 (three turns):\n%s", len(msgs), webtest.MustJSON(msgs))
	}
}

// A chat or thread id past 1,024 bytes is refused (400) and not kept.
func TestChat_idCapped(t *testing.T) {
	state := t.TempDir()
	ws := startWebServer(t, webtest.StartBridge(t), state)
	long := strings.Repeat("c", web.MaxChatID+1)
	webtest.WantError(t, "a long chat id", webtest.Post(t, ws.URL+"/api/chat", map[string]any{"id": long,
		"messages": []any{webtest.UserMsg("u1", "hi")}}), 400, "at most 1024")
	webtest.WantError(t, "a long thread id", webtest.Post(t, ws.URL+"/ag-ui", webtest.RunInput(long, "r1", "hi")), 400, "at most 1024")
	for _, d := range []string{"webchats", "agui-threads"} {
		if ents, _ := os.ReadDir(filepath.Join(state, d)); len(ents) != 0 {
			t.Errorf("%s holds %d files after refused ids", d, len(ents))
		}
	}
	webtest.ChatTurn(t, ws.URL, strings.Repeat("c", web.MaxChatID), webtest.UserMsg("u1", "hello")) // the longest taken
}
