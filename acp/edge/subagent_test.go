package edge

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/editor"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// The mock's "delegate" runs a subagent that reads, asks to edit and
// answers. A client that takes subagents is told of the child by a
// subagent_update on the parent before any of the child's traffic, which
// comes under the child's own session id (its permission ask too), and
// the replay of session/load says the same; the child is restricted.
func TestSubagent_childSessionForClientsThatOptIn(t *testing.T) {
	dir := t.TempDir()
	r := startRaw(t, dir)
	r.call(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}`)
	sid := r.call(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)["result"].(map[string]any)["sessionId"].(string)
	live := r.exchange(3, promptLine(3, sid, "delegate"))
	child := checkTree(t, "live", sid, live)
	want := []string{
		"parent tool_call delegate in_progress",
		"parent subagent_update running",
		"child user_message_chunk Look at the README and fix mock.txt",
		"child tool_call read pending",
		"child tool_call_update read in_progress",
		"child tool_call_update read completed",
		"child tool_call edit pending",
		"child ask edit",
		"child tool_call_update edit in_progress",
		"child tool_call_update edit completed",
		"child agent_message_chunk Done: mock.txt now says hello.",
		"parent subagent_update idle end_turn",
		"parent tool_call_update delegate completed",
		"parent agent_message_chunk You said: delegate",
	}
	if got := strings.Join(said(live, sid, child), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("live:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}

	replay := r.exchange(4, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}}`, sid))
	if got := checkTree(t, "replayed", sid, replay); got != child {
		t.Errorf("replayed child id %s, live %s: not stable", got, child)
	}
	wantReplay := []string{
		"parent user_message_chunk delegate",
		"parent tool_call delegate completed",
		"parent subagent_update running",
		"child user_message_chunk Look at the README and fix mock.txt",
		"child tool_call read completed",
		"child tool_call edit completed",
		"child agent_message_chunk Done: mock.txt now says hello.",
		"parent subagent_update idle end_turn",
		"parent agent_message_chunk You said: delegate",
	}
	if got := strings.Join(said(replay, sid, child), "\n"); got != strings.Join(wantReplay, "\n") {
		t.Errorf("replayed:\n%s\nwant:\n%s", got, strings.Join(wantReplay, "\n"))
	}

	// What a client may not ask of a child, and an id no child has.
	for i, req := range []struct{ method, params string }{
		{"session/prompt", fmt.Sprintf(`{"sessionId":%q,"prompt":[{"type":"text","text":"hi"}]}`, child)},
		{"session/set_mode", fmt.Sprintf(`{"sessionId":%q,"modeId":"plan"}`, child)},
		{"session/set_config_option", fmt.Sprintf(`{"sessionId":%q,"configId":"mode","value":"plan"}`, child)},
		{"session/close", fmt.Sprintf(`{"sessionId":%q}`, child)},
		{"session/delete", fmt.Sprintf(`{"sessionId":%q}`, child)},
		{"session/fork", fmt.Sprintf(`{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}`, child)},
		{"session/load", fmt.Sprintf(`{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}`, child)},
		{"session/resume", fmt.Sprintf(`{"sessionId":%q,"cwd":"/tmp"}`, child)},
		{"session/prompt", fmt.Sprintf(`{"sessionId":"%s.nobody","prompt":[{"type":"text","text":"hi"}]}`, sid)},
	} {
		if m := r.call(10+i, req.method, req.params); errCode(m) != -32602 {
			t.Errorf("%s %s: %v, want error -32602", req.method, req.params, m)
		}
	}
	// The transcript keeps the child's entries in the parent's, tagged
	// with the child's native id.
	checkTranscript(t, dir, sid, strings.TrimPrefix(child, sid+"."))

	// A fork's children are its own.
	fork := r.call(40, "session/fork", fmt.Sprintf(`{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}`, sid))["result"].(map[string]any)["sessionId"].(string)
	forked := r.exchange(41, fmt.Sprintf(`{"jsonrpc":"2.0","id":41,"method":"session/load","params":{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}}`, fork))
	if got, want := checkTree(t, "forked", fork, forked), fork+strings.TrimPrefix(child, sid); got != want {
		t.Errorf("the fork's child is %s, want %s", got, want)
	}

	// The parent goes on, and session/list lists it alone.
	if got := r.said(30, sid, "hello"); !strings.Contains(got, "You said: hello") {
		t.Errorf("the parent's next turn said %q", got)
	}
	list := jsonOf(t, r.call(31, "session/list", `{}`)["result"])
	if strings.Count(list, `"sessionId"`) != 2 || strings.Contains(list, child) {
		t.Errorf("session/list: %s, want the parent and its fork alone", list)
	}
}

// A client that did not opt in sees the subagent as before: its tool calls
// and its permission ask on the parent, no subagent_update, no other
// session's id, live and replayed.
func TestSubagent_flattenedForClientsThatDoNot(t *testing.T) {
	r := startRaw(t, t.TempDir())
	r.call(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`)
	sid := r.call(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)["result"].(map[string]any)["sessionId"].(string)
	live := r.exchange(3, promptLine(3, sid, "delegate"))
	want := []string{
		"parent tool_call delegate in_progress",
		"parent tool_call read pending",
		"parent tool_call_update read in_progress",
		"parent tool_call_update read completed",
		"parent tool_call edit pending",
		"parent ask edit",
		"parent tool_call_update edit in_progress",
		"parent tool_call_update edit completed",
		"parent tool_call_update delegate completed",
		"parent agent_message_chunk You said: delegate",
	}
	if got := strings.Join(said(live, sid, ""), "\n"); got != strings.Join(want, "\n") {
		t.Errorf("live:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	replay := r.exchange(4, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}}`, sid))
	wantReplay := []string{
		"parent user_message_chunk delegate",
		"parent tool_call delegate completed",
		"parent tool_call read completed",
		"parent tool_call edit completed",
		"parent agent_message_chunk You said: delegate",
	}
	if got := strings.Join(said(replay, sid, ""), "\n"); got != strings.Join(wantReplay, "\n") {
		t.Errorf("replayed:\n%s\nwant:\n%s", got, strings.Join(wantReplay, "\n"))
	}
}

// session/cancel of the child stops the subagent alone (the mock can):
// it ends idle, cancelled, and the parent's turn ends as usual. A cancel
// of the parent stops both.
func TestSubagent_cancel(t *testing.T) {
	r := startRaw(t, t.TempDir())
	r.call(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{"subagents":{}}}`)
	sid := r.call(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)["result"].(map[string]any)["sessionId"].(string)

	var child string
	msgs := r.exchangeWith(3, promptLine(3, sid, "delegate slow"), func(m map[string]any) {
		if child == "" && m["method"] == "session/update" && sessionOf(m) != sid {
			child = sessionOf(m)
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, child))
		}
	})
	got := strings.Join(said(msgs, sid, child), "\n")
	for _, w := range []string{"parent subagent_update idle cancelled", "parent tool_call_update delegate failed", "parent agent_message_chunk You said: delegate slow"} {
		if !strings.Contains(got, w) {
			t.Errorf("after the child's cancel:\n%s\nwant %q", got, w)
		}
	}
	if res := msgs[len(msgs)-1]["result"].(map[string]any); res["stopReason"] != "end_turn" {
		t.Errorf("the parent's turn ended %v, want end_turn", res["stopReason"])
	}

	child = ""
	msgs = r.exchangeWith(4, promptLine(4, sid, "delegate slow"), func(m map[string]any) {
		if child == "" && m["method"] == "session/update" && sessionOf(m) != sid {
			child = sessionOf(m)
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sid))
		}
	})
	if res := msgs[len(msgs)-1]["result"].(map[string]any); res["stopReason"] != "cancelled" {
		t.Errorf("the parent's turn ended %v, want cancelled", res["stopReason"])
	}
	if got := strings.Join(said(msgs, sid, child), "\n"); !strings.Contains(got, "parent subagent_update idle cancelled") {
		t.Errorf("after the parent's cancel:\n%s\nwant the child idle, cancelled", got)
	}
}

// checkTranscript checks that session sid's transcript holds the child's
// entries, tagged with its native id, and its announcements untagged.
func checkTranscript(t *testing.T, dir, sid, native string) {
	t.Helper()
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.Read(sid)
	if err != nil {
		t.Fatal(err)
	}
	tagged, announced := 0, 0
	for _, e := range tr.Entries {
		switch {
		case e.Session == native:
			tagged++
		case e.Session != "":
			t.Errorf("an entry of session %q: %s", e.Session, e.Update)
		case strings.Contains(string(e.Update), `"subagent_update"`):
			announced++
			if !strings.Contains(string(e.Update), `"sessionId":"`+native+`"`) {
				t.Errorf("an announcement not naming the child by its native id: %s", e.Update)
			}
		}
	}
	if tagged < 4 || announced != 2 {
		t.Errorf("the transcript holds %d entries of the child and %d announcements; want its prompt, two tool calls, its answer, and 2", tagged, announced)
	}
}

// exchange sends line and returns what the bridge wrote until the answer
// to request id, that answer last, allowing every permission ask.
func (r *raw) exchange(id int, line string) []map[string]any {
	return r.exchangeWith(id, line, func(map[string]any) {})
}

// exchangeWith is exchange, calling saw with each message first.
func (r *raw) exchangeWith(id int, line string, saw func(map[string]any)) []map[string]any {
	r.t.Helper()
	r.send(line)
	var msgs []map[string]any
	r.next(func(m map[string]any) bool {
		saw(m)
		msgs = append(msgs, m)
		if m["method"] == "session/request_permission" {
			r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, jsonOf(r.t, m["id"])))
		}
		return response(id)(m)
	})
	return msgs
}

func sessionOf(m map[string]any) string {
	p, _ := m["params"].(map[string]any)
	s, _ := p["sessionId"].(string)
	return s
}

// checkTree checks that the child's session id is derived from the
// parent's, and that its announcement came before its first message; it
// returns the child's id.
func checkTree(t *testing.T, what, sid string, msgs []map[string]any) string {
	t.Helper()
	announced := ""
	for _, m := range msgs {
		p, _ := m["params"].(map[string]any)
		u, _ := p["update"].(map[string]any)
		if u["sessionUpdate"] == "subagent_update" && announced == "" {
			announced, _ = u["sessionId"].(string)
		}
		if s := sessionOf(m); s != "" && s != sid && s != announced {
			t.Fatalf("%s: %s came for session %s before any subagent_update announced it", what, jsonOf(t, m), s)
		}
	}
	if !strings.HasPrefix(announced, sid+".") {
		t.Errorf("%s: child id %q, want %s.<native id>", what, announced, sid)
	}
	return announced
}

// said renders messages one a line: whose session (parent, child, or the
// id), the update's kind and what it is about.
func said(msgs []map[string]any, sid, child string) []string {
	var out []string
	for _, m := range msgs {
		p, _ := m["params"].(map[string]any)
		who := map[string]string{sid: "parent", child: "child"}[sessionOf(m)]
		if who == "" {
			who = sessionOf(m)
		}
		switch m["method"] {
		case "session/request_permission":
			tc, _ := p["toolCall"].(map[string]any)
			out = append(out, who+" ask "+fmt.Sprint(tc["name"]))
		case "session/update":
			u := p["update"].(map[string]any)
			kind := fmt.Sprint(u["sessionUpdate"])
			line := who + " " + kind
			switch kind {
			case "tool_call", "tool_call_update":
				line += " " + fmt.Sprint(u["name"]) + " " + fmt.Sprint(u["status"])
			case "subagent_update":
				st, _ := u["state"].(map[string]any)
				line += " " + fmt.Sprint(st["state"])
				if r, ok := st["stopReason"]; ok {
					line += " " + fmt.Sprint(r)
				}
			case "agent_message_chunk", "user_message_chunk":
				c, _ := u["content"].(map[string]any)
				line += " " + fmt.Sprint(c["text"])
			default:
				continue // usage, session info, commands: not what this is about
			}
			if n := len(out); n > 0 && strings.HasSuffix(kind, "_chunk") && strings.HasPrefix(out[n-1], who+" "+kind+" ") {
				out[n-1] += fmt.Sprint(u["content"].(map[string]any)["text"]) // chunks of one message
				continue
			}
			out = append(out, line)
		}
	}
	return out
}

// A client that takes subagents and takes over a running turn whose agent
// works in a subagent is told of the child before any of its traffic (the
// announcement comes with what the turn recorded so far), then gets the
// child's updates (and its ask, if it comes after) under the child's id.
func TestSubagent_takeOverMidTurn(t *testing.T) {
	sh := startShared(t)
	a := sh.connect()
	cwd := t.TempDir()
	id := a.NewSession(cwd)
	done := make(chan acp.PromptResponse, 1)
	go func() {
		resp, _ := a.Prompt(id, "delegate slow")
		done <- resp
	}()
	a.WaitFor(func(u acp.SessionUpdate) bool {
		return u.ToolCall != nil && u.ToolCall.Name != nil && *u.ToolCall.Name == "read"
	})
	b := editor.Connect(t, func(ctx context.Context, in io.Reader, out io.Writer) error { return sh.s.ServeConn(ctx, in, out, "") })
	b.Initialize(acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}})
	b.Load(id, cwd)
	if resp := <-done; resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("the turn ended %q", resp.StopReason)
	}
	var child acp.SessionId
	sawChild := false
	for _, n := range b.Client.Notifications() {
		if su := n.Update.SubagentUpdate; su != nil && child == "" {
			child = su.SessionId
		}
		if n.SessionId != id {
			if n.SessionId != child {
				t.Fatalf("an update of %s before its announcement", n.SessionId)
			}
			sawChild = true
		}
	}
	if !sawChild {
		t.Errorf("b saw nothing of the child %s", child)
	}
	// The child's edit asked whichever connection held the session then:
	// b as the child's, or a (which takes no subagents) as the session's.
	asks := append(a.Client.Asks(), b.Client.Asks()...)
	if len(asks) != 1 {
		t.Fatalf("asks %+v, want the child's edit, once", asks)
	}
	if len(b.Client.Asks()) == 1 && asks[0].SessionId != child || len(a.Client.Asks()) == 1 && asks[0].SessionId != id {
		t.Errorf("the ask came under %s (child %s, session %s)", asks[0].SessionId, child, id)
	}
}
