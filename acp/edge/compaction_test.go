package edge

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// compactor's sessions compact twice each turn: one compaction shown to a
// client that takes none as text, one as a think tool call.
var compactor = scripted{"compactor", func() []acp.SessionUpdate {
	compaction := func(id string, status acp.CompactionStatus, summary string, fallback ...acp.SessionUpdate) acp.SessionUpdate {
		c := &acp.SessionCompactionUpdate{CompactionId: acp.CompactionId(id), Status: status}
		if summary != "" {
			c.Summary = []acp.ContentBlock{acp.TextBlock(summary)}
		}
		if fallback != nil {
			c.Meta = map[string]any{agent.FallbackMeta: fallback}
		}
		return acp.SessionUpdate{CompactionUpdate: c}
	}
	return []acp.SessionUpdate{
		acp.UpdateAgentMessageText("before"),
		compaction("c1", acp.CompactionStatusInProgress, ""),
		compaction("c1", acp.CompactionStatusCompleted, "", acp.UpdateAgentMessageText("Compacted.")),
		{CompactionSummaryChunk: &acp.SessionUpdateCompactionSummaryChunk{CompactionId: "c1", Content: acp.TextBlock("the summary")}},
		compaction("c2", acp.CompactionStatusInProgress, "",
			acp.StartToolCall("t1", "Compact the conversation", acp.WithStartKind(acp.ToolKindThink), acp.WithStartStatus(acp.ToolCallStatusInProgress))),
		compaction("c2", acp.CompactionStatusCompleted, "",
			acp.UpdateToolCall("t1", acp.WithUpdateStatus(acp.ToolCallStatusCompleted))),
		acp.UpdateAgentMessageText("done"),
	}
}}

// A compaction reaches a client that takes compaction updates as those
// updates, one that does not as the agent's fallback; both are history,
// and session/load replays each as the client would have been sent it.
func TestCompaction_onlyToClientsThatTakeThem_andReplayed(t *testing.T) {
	for _, c := range []struct {
		caps       string
		live, load []string // in order
		never      []string
	}{
		{`{"session":{"compaction":{}}}`,
			[]string{`"compactionId":"c1","sessionUpdate":"compaction_update","status":"in_progress"`,
				`"compactionId":"c1","sessionUpdate":"compaction_update","status":"completed"}`,
				`"compactionId":"c1","content":{"text":"the summary","type":"text"},"sessionUpdate":"compaction_summary_chunk"`,
				`"compactionId":"c2","sessionUpdate":"compaction_update","status":"completed"`, `"done"`},
			[]string{`"before"`, `"compactionId":"c1","sessionUpdate":"compaction_update","status":"completed","summary":[{"text":"the summary","type":"text"}]`,
				`"compactionId":"c2","sessionUpdate":"compaction_update","status":"completed"}`, `"done"`},
			[]string{"acpbridge/fallback", "Compacted.", "tool_call"}},
		{`{}`,
			[]string{`"before"`, `"Compacted."`, `"sessionUpdate":"tool_call","status":"in_progress"`,
				`"sessionUpdate":"tool_call_update","status":"completed"`, `"done"`},
			[]string{`"before"`, `"Compacted."`, `"sessionUpdate":"tool_call","status":"completed"`, `"done"`},
			[]string{"compaction", "the summary"}},
	} {
		r := startRawOn(t, compactor)
		r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":` + c.caps + `}}`)
		r.next(response(1))
		r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
		sid := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
		r.send(promptLine(3, sid, "go"))
		live := updatesUntil(r, 3)
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}}`, sid))
		load := updatesUntil(r, 4)
		for _, s := range []struct {
			what, got string
			want      []string
		}{{"sent", live, c.live}, {"replayed", load, c.load}} {
			if !inOrder(s.got, s.want) {
				t.Errorf("a client offering %s was %s\n%s\nwant, in order, %q", c.caps, s.what, s.got, s.want)
			}
			for _, n := range c.never {
				if strings.Contains(s.got, n) {
					t.Errorf("a client offering %s was %s %q:\n%s", c.caps, s.what, n, s.got)
				}
			}
		}
	}
}

// updatesUntil is the session updates sent before the response to id, one
// a line.
func updatesUntil(r *raw, id int) string {
	var said []string
	r.next(func(m map[string]any) bool {
		if m["method"] == "session/update" {
			b, _ := json.Marshal(m["params"])
			said = append(said, string(b))
		}
		return response(id)(m)
	})
	return strings.Join(said, "\n")
}

func inOrder(got string, want []string) bool {
	for _, w := range want {
		i := strings.Index(got, w)
		if i < 0 {
			return false
		}
		got = got[i+len(w):]
	}
	return true
}
