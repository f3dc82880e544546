package edge

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
)

// noticer's sessions say a notice, then a word, each turn.
var noticer = scripted{"noticer", func() []acp.SessionUpdate {
	why := "HTTP 529"
	return []acp.SessionUpdate{
		{Notice: &acp.SessionUpdateNotice{Severity: acp.NoticeSeverityWarning, Title: "Retrying (1/2)", Description: &why}},
		acp.UpdateAgentMessageText("done"),
	}
}}

// A notice reaches a client that takes notices as a notice, one that
// does not as thought text; neither is in the transcript a load replays.
func TestNotice_onlyToClientsThatTakeThem(t *testing.T) {
	for _, c := range []struct{ caps, want string }{
		{`{"session":{"notices":{}}}`, `"update":{"description":"HTTP 529","sessionUpdate":"notice","severity":"warning","title":"Retrying (1/2)"}`},
		{`{}`, `"update":{"content":{"text":"Retrying (1/2): HTTP 529\n\n","type":"text"},"sessionUpdate":"agent_thought_chunk"}`},
	} {
		r := startRawOn(t, noticer)
		r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":` + c.caps + `}}`)
		r.next(response(1))
		r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
		sid := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
		r.send(promptLine(3, sid, "go"))
		var said []string
		r.next(func(m map[string]any) bool {
			if m["method"] == "session/update" {
				b, _ := json.Marshal(m["params"])
				said = append(said, string(b))
			}
			return response(3)(m)
		})
		if got := strings.Join(said, "\n"); !strings.Contains(got, c.want) || strings.Count(got, "Retrying") != 1 {
			t.Errorf("client offering %s was sent\n%s\nwant one %s", c.caps, got, c.want)
		}
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}}`, sid))
		var replay []string
		r.next(func(m map[string]any) bool {
			if m["method"] == "session/update" {
				b, _ := json.Marshal(m["params"])
				replay = append(replay, string(b))
			}
			return response(4)(m)
		})
		if got := strings.Join(replay, "\n"); strings.Contains(got, "Retrying") || !strings.Contains(got, "done") {
			t.Errorf("the replay for a client offering %s:\n%s\nwant the turn without the notice", c.caps, got)
		}
	}
}
