package edgev2_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

// run pipes lines into a bridge on dir and returns its output, one
// message a line, by id ("" for notifications, in order).
func run(t *testing.T, dir string, lines ...string) (byID map[string]map[string]any, notes []map[string]any) {
	t.Helper()
	var out strings.Builder
	if err := serve(t.Context(), manager(t, dir), strings.NewReader(strings.Join(lines, "\n")+"\n"), &out); err != nil {
		t.Fatal(err)
	}
	byID = map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		if id, ok := m["id"]; ok && m["method"] == nil {
			b, _ := json.Marshal(id)
			byID[string(b)] = m
		} else {
			notes = append(notes, m)
		}
	}
	return byID, notes
}

// runUntil pipes lines into a bridge on dir, and ends its input once the
// response with id has been written.
func runUntil(t *testing.T, dir, id string, lines ...string) {
	t.Helper()
	serveOpen(t, dir, lines, func(line []byte, end func()) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(line, &m) == nil && m.Method == "" && string(m.ID) == id {
			end()
		}
	})
}

// serveOpen pipes lines into a bridge on dir and hands each line it
// writes to see, whose end ends the input: until then it stays open (its
// end would cancel the turns not yet run).
func serveOpen(t *testing.T, dir string, lines []string, see func(line []byte, end func())) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- serve(t.Context(), manager(t, dir), inR, outW)
		outW.Close()
	}()
	go io.WriteString(inW, strings.Join(lines, "\n")+"\n")
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		see(sc.Bytes(), func() { inW.Close() })
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func code(m map[string]any) float64 {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

const (
	initV1 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`
	initV2 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"},"capabilities":{}}}`
)

// TestNegotiation: protocol 1 gets v1 (whose answer has agentCapabilities)
// and v2's methods are unknown there; protocol 2 or more gets v2, where
// v1's are, and a repeated initialize asking for less is -32600.
func TestNegotiation(t *testing.T) {
	v1, _ := run(t, t.TempDir(), initV1,
		`{"jsonrpc":"2.0","id":2,"method":"tool_call/cancel","params":{"sessionId":"s","toolCallId":"t"}}`)
	if r, _ := v1["1"]["result"].(map[string]any); r["agentCapabilities"] == nil || r["protocolVersion"] != 1.0 {
		t.Errorf("protocol 1's initialize: %v", v1["1"])
	}
	if c := code(v1["2"]); c != -32601 {
		t.Errorf("a v2 method on a v1 connection got %v, want -32601", c)
	}
	v2, _ := run(t, t.TempDir(),
		strings.Replace(initV2, `"protocolVersion":2`, `"protocolVersion":7`, 1),
		`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s","cwd":"/","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	if r, _ := v2["1"]["result"].(map[string]any); r["info"] == nil || r["protocolVersion"] != 2.0 {
		t.Errorf("protocol 7's initialize: %v", v2["1"])
	}
	if c := code(v2["2"]); c != -32601 {
		t.Errorf("a v1 method on a v2 connection got %v, want -32601", c)
	}
	if c := code(v2["3"]); c != -32600 {
		t.Errorf("a repeated initialize asking for protocol 1 got %v, want -32600", c)
	}
}

// TestResume_v1SessionOverV2: a session made and prompted over v1 in one
// bridge run is resumed over v2 in the next, its history replayed.
func TestResume_v1SessionOverV2(t *testing.T) {
	dir, cwd := t.TempDir(), t.TempDir()
	first, _ := run(t, dir, initV1,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"`+cwd+`","mcpServers":[]}}`)
	sid := first["2"]["result"].(map[string]any)["sessionId"].(string)
	// The input stays open until the prompt is answered: its end would
	// cancel the turn, maybe before it began.
	runUntil(t, dir, "3", initV1,
		`{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"`+sid+`","cwd":"`+cwd+`","mcpServers":[]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"hello over v1"}]}}`)
	res, notes := run(t, dir, initV2,
		`{"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"`+sid+`","cwd":"`+cwd+`","replayFrom":{"type":"start"}}}`)
	if res["2"]["result"] == nil {
		t.Fatalf("session/resume: %v", res["2"])
	}
	var kinds []string
	text := ""
	for _, n := range notes {
		u := n["params"].(map[string]any)["update"].(map[string]any)
		kinds = append(kinds, u["sessionUpdate"].(string))
		if c, ok := u["content"].(map[string]any); ok && u["sessionUpdate"] == "user_message_chunk" {
			text += c["text"].(string)
		}
	}
	if text != "hello over v1" || kinds[len(kinds)-1] != "state_update" {
		t.Errorf("replay over v2: %v, user text %q", kinds, text)
	}
}

// TestPrompts_inTheOrderTheyCame: prompts piped in at once are taken and
// run in the order of their lines (jrpc2 alone runs each on a goroutine
// of its own, in no set order). The input stays open until the session is
// idle, as its end would cancel the turns not yet run.
func TestPrompts_inTheOrderTheyCame(t *testing.T) {
	dir, cwd := t.TempDir(), t.TempDir()
	first, _ := run(t, dir, initV2, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"`+cwd+`","mcpServers":[]}}`)
	sid := first["2"]["result"].(map[string]any)["sessionId"].(string)
	lines := []string{initV2, `{"jsonrpc":"2.0","id":2,"method":"session/resume","params":{"sessionId":"` + sid + `","cwd":"` + cwd + `"}}`}
	const n = 30
	var want []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":"%s","prompt":[{"type":"text","text":"p%02d"}]}}`, 10+i, sid, i))
		want = append(want, fmt.Sprintf("p%02d", i))
	}
	var users, answers []string
	serveOpen(t, dir, lines, func(line []byte, end func()) {
		var m struct {
			Params struct {
				Update map[string]any `json:"update"`
			} `json:"params"`
		}
		json.Unmarshal(line, &m)
		u := m.Params.Update
		switch u["sessionUpdate"] {
		case "user_message":
			users = append(users, u["content"].([]any)[0].(map[string]any)["text"].(string))
		case "agent_message_chunk":
			if p := promptIn(u["content"].(map[string]any)["text"].(string)); p != "" {
				answers = append(answers, p)
			}
		case "state_update":
			if u["state"] == "idle" && len(answers) == n {
				end()
			}
		}
	})
	if !slices.Equal(users, want) || !slices.Equal(answers, want) {
		t.Errorf("user messages %v\nanswers %v\nwant both in the order sent: %v", users, answers, want)
	}
}

// promptIn is the pNN an answer's text names, or "".
func promptIn(text string) string {
	if i := strings.Index(text, "p"); i >= 0 && i+3 <= len(text) && strings.Trim(text[i+1:i+3], "0123456789") == "" {
		return text[i : i+3]
	}
	return ""
}

// TestStrayResponse: a response to nothing the bridge asked (a late
// answer to a withdrawn permission ask) is dropped: no error goes back
// for it (jrpc2 would answer it as a request without a method), and the
// requests around it are answered.
func TestStrayResponse(t *testing.T) {
	byID, notes := run(t, t.TempDir(), initV2,
		`{"jsonrpc":"2.0","id":7,"result":{"outcome":{"outcome":"cancelled"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/list","params":{}}`)
	if _, ok := byID["7"]; ok {
		t.Errorf("the stray response was answered: %v", byID["7"])
	}
	if byID["1"]["result"] == nil || byID["2"]["result"] == nil {
		t.Errorf("initialize %v, session/list %v: want both answered", byID["1"], byID["2"])
	}
	if len(notes) != 0 {
		t.Errorf("unexpected messages: %v", notes)
	}
}
