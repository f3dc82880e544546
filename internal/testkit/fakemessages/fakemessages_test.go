package fakemessages

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sse is one server-sent event.
type sse struct {
	name string
	data map[string]any
}

// readSSE reads every event of r, failing t unless each is exactly
// "event: NAME\ndata: JSON\n\n" with the JSON's type equal to NAME.
func readSSE(t *testing.T, r io.Reader) []sse {
	t.Helper()
	br := bufio.NewReader(r)
	var out []sse
	for {
		l1, err := br.ReadString('\n')
		if err == io.EOF && l1 == "" {
			return out
		}
		if err != nil {
			t.Fatalf("reading event line: %q, %v", l1, err)
		}
		l2, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading data line after %q: %v", l1, err)
		}
		l3, err := br.ReadString('\n')
		if err != nil || l3 != "\n" {
			t.Fatalf("after %q%q: want a blank line, got %q, %v", l1, l2, l3, err)
		}
		name, ok := strings.CutPrefix(strings.TrimSuffix(l1, "\n"), "event: ")
		if !ok {
			t.Fatalf("want an event: line, got %q", l1)
		}
		data, ok := strings.CutPrefix(strings.TrimSuffix(l2, "\n"), "data: ")
		if !ok {
			t.Fatalf("want a data: line, got %q", l2)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("data %q: %v", data, err)
		}
		if m["type"] != name {
			t.Fatalf("event %q carries type %v", name, m["type"])
		}
		out = append(out, sse{name, m})
	}
}

// userMsg is a messages entry with role user and the given blocks.
func userMsg(blocks ...any) map[string]any {
	return map[string]any{"role": "user", "content": blocks}
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func body(stream bool, msgs ...any) map[string]any {
	b := map[string]any{"model": "claude-test-1", "max_tokens": 64000, "messages": msgs}
	if stream {
		b["stream"] = true
	}
	return b
}

func post(t *testing.T, url string, v any) *http.Response {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decodeJSON(t *testing.T, r io.Reader) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.NewDecoder(r).Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func fixed(rep Reply) Script { return func(Request) Reply { return rep } }

func TestStreamFraming(t *testing.T) {
	s := New(fixed(Reply{Blocks: []Block{
		{Type: "thinking", Text: "Hmm, let me see."},
		{Type: "text", Text: "Héllo, wörld: /tmp/some/path.txt is here"},
		{Type: "tool_use", Name: "Bash", Input: map[string]any{"command": "echo hi", "description": "say hi"}},
	}}))
	defer s.Close()
	resp := post(t, s.URL+"/v1/messages?beta=true", body(true, userMsg(text("hi"))))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if resp.Header.Get("request-id") == "" {
		t.Error("no request-id header")
	}
	evs := readSSE(t, resp.Body)

	var names []string
	for _, e := range evs {
		names = append(names, e.name)
	}
	if names[0] != "message_start" || names[len(names)-2] != "message_delta" || names[len(names)-1] != "message_stop" {
		t.Fatalf("events %v", names)
	}
	msg := evs[0].data["message"].(map[string]any)
	if msg["model"] != "claude-test-1" || msg["role"] != "assistant" || !strings.HasPrefix(msg["id"].(string), "msg_fake_") {
		t.Errorf("message_start %v", msg)
	}
	if c, ok := msg["content"].([]any); !ok || len(c) != 0 || msg["stop_reason"] != nil {
		t.Errorf("message_start content %v stop_reason %v", msg["content"], msg["stop_reason"])
	}

	// Rebuild the blocks from the events, checking their order.
	type built struct {
		typ, text, sig, json string
		start                map[string]any
		deltas               []string
		stopped              bool
	}
	var blocks []*built
	for _, e := range evs[1 : len(evs)-2] {
		i := int(e.data["index"].(float64))
		switch e.name {
		case "content_block_start":
			if i != len(blocks) {
				t.Fatalf("block %d starts as #%d", i, len(blocks))
			}
			cb := e.data["content_block"].(map[string]any)
			blocks = append(blocks, &built{typ: cb["type"].(string), start: cb})
		case "content_block_delta":
			b := blocks[i]
			if b.stopped {
				t.Fatalf("delta after stop: %v", e.data)
			}
			d := e.data["delta"].(map[string]any)
			dt := d["type"].(string)
			b.deltas = append(b.deltas, dt)
			switch dt {
			case "text_delta":
				b.text += d["text"].(string)
			case "thinking_delta":
				b.text += d["thinking"].(string)
			case "signature_delta":
				b.sig = d["signature"].(string)
			case "input_json_delta":
				b.json += d["partial_json"].(string)
			}
		case "content_block_stop":
			blocks[i].stopped = true
		default:
			t.Fatalf("unexpected event %s", e.name)
		}
	}
	if len(blocks) != 3 {
		t.Fatalf("%d blocks", len(blocks))
	}
	th, tx, tu := blocks[0], blocks[1], blocks[2]
	if th.typ != "thinking" || th.text != "Hmm, let me see." || th.sig == "" || th.deltas[len(th.deltas)-1] != "signature_delta" {
		t.Errorf("thinking block %+v", th)
	}
	if th.start["thinking"] != "" || th.start["signature"] != "" {
		t.Errorf("thinking start %v", th.start)
	}
	if tx.typ != "text" || tx.text != "Héllo, wörld: /tmp/some/path.txt is here" || len(tx.deltas) != 3 {
		t.Errorf("text block %+v", tx)
	}
	if tu.typ != "tool_use" || tu.start["name"] != "Bash" || tu.start["id"] != "toolu_fake_1" {
		t.Errorf("tool_use start %v", tu.start)
	}
	if in, ok := tu.start["input"].(map[string]any); !ok || len(in) != 0 {
		t.Errorf("tool_use start input %v", tu.start["input"])
	}
	if n := len(tu.deltas); n < 2 || n > 3 {
		t.Errorf("%d input_json_delta pieces", n)
	}
	var input map[string]any
	if err := json.Unmarshal([]byte(tu.json), &input); err != nil || input["command"] != "echo hi" {
		t.Errorf("tool input %q: %v", tu.json, err)
	}
	for _, b := range blocks {
		if !b.stopped {
			t.Errorf("block %s not stopped", b.typ)
		}
	}
	md := evs[len(evs)-2].data
	if md["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("message_delta %v", md)
	}
	if u, ok := md["usage"].(map[string]any); !ok || u["output_tokens"].(float64) < 1 {
		t.Errorf("message_delta usage %v", md["usage"])
	}
}

func TestStreamFlushesEachEvent(t *testing.T) {
	s := New(fixed(Reply{Blocks: []Block{{Type: "text", Text: "abcdef"}}, Delay: time.Hour}))
	defer s.Close()
	cut := time.AfterFunc(time.Minute, s.Close) // ends the read below if it waits for the hour
	defer cut.Stop()
	resp := post(t, s.URL+"/v1/messages", body(true, userMsg(text("hi"))))
	br := bufio.NewReader(resp.Body)
	// message_start and content_block_start come before the hour's delay:
	// they arrive only if each event is flushed.
	for range 6 {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatalf("the first events never came (not flushed): %v", err)
		}
	}
}

func TestNonStreaming(t *testing.T) {
	s := New(fixed(Reply{Blocks: []Block{
		{Type: "thinking", Text: "hmm"},
		{Type: "text", Text: "Let me look."},
		{Type: "tool_use", ID: "toolu_given", Name: "Read", Input: map[string]any{"file_path": "/x"}},
	}}))
	defer s.Close()
	resp := post(t, s.URL+"/v1/messages?beta=true", body(false, userMsg(text("hi"))))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	m := decodeJSON(t, resp.Body)
	if m["type"] != "message" || m["role"] != "assistant" || m["stop_reason"] != "tool_use" || m["model"] != "claude-test-1" {
		t.Errorf("message %v", m)
	}
	if _, ok := m["stop_sequence"]; !ok {
		t.Error("no stop_sequence")
	}
	c := m["content"].([]any)
	want := []map[string]any{
		{"type": "thinking", "thinking": "hmm", "signature": signature(0)},
		{"type": "text", "text": "Let me look."},
		{"type": "tool_use", "id": "toolu_given", "name": "Read", "input": map[string]any{"file_path": "/x"}},
	}
	if len(c) != len(want) {
		t.Fatalf("content %v", c)
	}
	for i := range want {
		if !reflect.DeepEqual(c[i], want[i]) {
			t.Errorf("content[%d] = %v, want %v", i, c[i], want[i])
		}
	}
	if u := m["usage"].(map[string]any); u["input_tokens"].(float64) < 1 || u["output_tokens"].(float64) < 1 {
		t.Errorf("usage %v", u)
	}
	if r := s.Requests(); len(r) != 1 || r[0].Stream {
		t.Errorf("requests %+v", r)
	}
}

func TestErrors(t *testing.T) {
	s := New(Directives())
	defer s.Close()
	for _, tc := range []struct {
		prompt string
		status int
		typ    string
	}{
		{"please fail500 now", 500, "api_error"},
		{"fail401", 401, "authentication_error"},
		{"fail529", 529, "overloaded_error"},
	} {
		for _, stream := range []bool{true, false} {
			resp := post(t, s.URL+"/v1/messages?beta=true", body(stream, userMsg(text(tc.prompt))))
			if resp.StatusCode != tc.status {
				t.Errorf("%s: status %d, want %d", tc.prompt, resp.StatusCode, tc.status)
			}
			m := decodeJSON(t, resp.Body)
			e, _ := m["error"].(map[string]any)
			if m["type"] != "error" || e["type"] != tc.typ || e["message"] == "" {
				t.Errorf("%s: body %v", tc.prompt, m)
			}
		}
	}
	// A Reply with only a Status gets an error type from it.
	s2 := New(fixed(Reply{Status: 429}))
	defer s2.Close()
	m := decodeJSON(t, post(t, s2.URL+"/v1/messages", body(true, userMsg(text("x")))).Body)
	if m["error"].(map[string]any)["type"] != "rate_limit_error" {
		t.Errorf("429 body %v", m)
	}
}

func TestRoutes(t *testing.T) {
	s := New(nil)
	defer s.Close()
	for _, path := range []string{"", "/", "/TestX"} {
		resp, err := http.Head(s.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("HEAD %q: %d", path, resp.StatusCode)
		}
	}
	resp := post(t, s.URL+"/TestX/v1/messages/count_tokens?beta=true", map[string]any{"messages": []any{}})
	if m := decodeJSON(t, resp.Body); resp.StatusCode != 200 || m["input_tokens"] != 1000.0 {
		t.Errorf("count_tokens: %d %v", resp.StatusCode, m)
	}
	resp = post(t, s.URL+"/v1/models", map[string]any{})
	if m := decodeJSON(t, resp.Body); resp.StatusCode != 404 || m["type"] != "error" {
		t.Errorf("/v1/models: %d %v", resp.StatusCode, m)
	}
	resp, err := http.Get(s.URL + "/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /v1/messages: %d", resp.StatusCode)
	}
	resp, err = http.Post(s.URL+"/v1/messages", "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Errorf("bad body: %d", resp.StatusCode)
	}

	post(t, s.URL+"/TestX/sub/v1/messages?beta=true", body(true, userMsg(text("one")))).Body.Close()
	post(t, s.URL+"/v1/messages", body(false, userMsg(text("two")))).Body.Close()
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests recorded, want 2 (count_tokens is not one)", len(reqs))
	}
	if r := reqs[0]; r.Path != "/v1/messages" || r.Prefix != "/TestX/sub" || !r.Stream || r.LastText != "one" || r.Model != "claude-test-1" {
		t.Errorf("request 0: %+v", r)
	}
	if r := reqs[1]; r.Prefix != "" || r.Stream || r.LastText != "two" || r.Raw["max_tokens"] != 64000.0 {
		t.Errorf("request 1: %+v", r)
	}
}

func TestDecode(t *testing.T) {
	reminder := text("<system-reminder>\nToday's date is 2026-11-21.\n</system-reminder>")
	img := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBOR"}}
	req := decode(body(true,
		userMsg(text("old prompt")),
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "tool_use", "id": "toolu_a", "name": "Read", "input": map[string]any{}},
			map[string]any{"type": "tool_use", "id": "toolu_b", "name": "Bash", "input": map[string]any{}},
		}},
		userMsg(
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_a", "content": "file text"},
			map[string]any{"type": "tool_result", "tool_use_id": "toolu_b", "is_error": true,
				"content": []any{text("line 1"), img, text("line 2")}},
			reminder, text("new words"), img, text("more"),
		),
		// The mid-conversation system beta: not the last user message.
		map[string]any{"role": "system", "content": "Available agent types: …"},
	))
	if req.Model != "claude-test-1" || !req.Stream {
		t.Errorf("model %q stream %v", req.Model, req.Stream)
	}
	if req.LastText != "new words\nmore" {
		t.Errorf("LastText %q", req.LastText)
	}
	if req.Images != 1 {
		t.Errorf("Images %d", req.Images)
	}
	want := []ToolResult{{"toolu_a", "file text", false}, {"toolu_b", "line 1\nline 2", true}}
	if !reflect.DeepEqual(req.Results, want) {
		t.Errorf("Results %+v", req.Results)
	}
	if req.ToolName("toolu_b") != "Bash" || req.ToolName("toolu_zz") != "" {
		t.Errorf("ToolName: %q %q", req.ToolName("toolu_b"), req.ToolName("toolu_zz"))
	}

	if r := decode(body(true, map[string]any{"role": "user", "content": "plain string"})); r.LastText != "plain string" {
		t.Errorf("string content: %q", r.LastText)
	}
	if r := decode(map[string]any{}); r.LastText != "" || r.Results != nil {
		t.Errorf("empty body: %+v", r)
	}
}

// reqFor builds a Request as the server would decode it.
func reqFor(msgs ...any) Request { return decode(body(true, msgs...)) }

func TestDirectives(t *testing.T) {
	script := Directives()
	long := strings.Repeat("é", 250)
	tool := func(name string, input map[string]any) Block {
		return Block{Type: "tool_use", Name: name, Input: input}
	}
	for _, tc := range []struct {
		prompt string
		want   Reply
	}{
		{"Say hello", textReply(AnswerTextPrefix + "Say hello")},
		{"  " + long + "  ", textReply(AnswerTextPrefix + strings.Repeat("é", 200))},
		{"please run: ls -la | wc -l  \nand more", Reply{Blocks: []Block{
			{Type: "text", Text: RanBashText},
			tool("Bash", map[string]any{"command": "ls -la | wc -l", "description": BashDescription}),
		}}},
		{"write: /tmp/notes.txt hello  big world", Reply{Blocks: []Block{
			tool("Write", map[string]any{"file_path": "/tmp/notes.txt", "content": "hello  big world"}),
		}}},
		{"write: empty.txt", Reply{Blocks: []Block{
			tool("Write", map[string]any{"file_path": "empty.txt", "content": ""}),
		}}},
		{"edit: a.txt one => two", Reply{Blocks: []Block{
			tool("Edit", map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "two"}),
		}}},
		{"edit: a.txt one", textReply(AnswerTextPrefix + "edit: a.txt one")},
		{"todo please", Reply{Blocks: []Block{
			tool("TaskCreate", map[string]any{"subject": TaskSubject, "description": TaskDescription, "activeForm": TaskActiveForm}),
		}}},
		{"think about it", Reply{Blocks: []Block{
			{Type: "thinking", Text: ThinkingText}, {Type: "text", Text: AnswerTextPrefix + "think about it"},
		}}},
		{"thinking is not a directive", textReply(AnswerTextPrefix + "thinking is not a directive")},
		{"THINK", textReply(AnswerTextPrefix + "THINK")},
		{"slow", Reply{Blocks: []Block{{Type: "text", Text: AnswerTextPrefix + "slow"}}, Chunks: 20, Delay: 100 * time.Millisecond}},
		{"fail500", Reply{Status: 500, ErrorType: "api_error", ErrorMessage: "Internal server error"}},
		{"fail401", Reply{Status: 401, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"}},
		{"fail529.", Reply{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}},
		// The first directive in the list wins.
		{"think then run: pwd", Reply{Blocks: []Block{
			{Type: "text", Text: RanBashText},
			tool("Bash", map[string]any{"command": "pwd", "description": BashDescription}),
		}}},
	} {
		got := script(reqFor(userMsg(text(tc.prompt))))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %+v\nwant %+v", tc.prompt, got, tc.want)
		}
	}
}

func TestDirectivesAfterTools(t *testing.T) {
	script := Directives()
	call := func(id, name string) map[string]any {
		return map[string]any{"role": "assistant", "content": []any{
			text("I'll do it."),
			map[string]any{"type": "tool_use", "id": id, "name": name, "input": map[string]any{}},
		}}
	}
	result := func(id, content string) map[string]any {
		return map[string]any{"type": "tool_result", "tool_use_id": id, "content": content}
	}
	reminder := text("<system-reminder>a reminder</system-reminder>")
	long := strings.Repeat("x", 300)

	got := script(reqFor(userMsg(text("run: x")), call("t1", "Bash"), userMsg(result("t1", "\n"+long+"\n"), reminder)))
	if want := textReply(FinalTextPrefix + strings.Repeat("x", 200)); !reflect.DeepEqual(got, want) {
		t.Errorf("after Bash: %+v", got)
	}

	// A tool result plus new words: the words decide.
	got = script(reqFor(userMsg(text("run: x")), call("t1", "Bash"), userMsg(result("t1", "out"), text("think"))))
	if len(got.Blocks) != 2 || got.Blocks[0].Type != "thinking" {
		t.Errorf("after Bash with words: %+v", got)
	}

	// todo: TaskCreate's result names the task; TaskUpdate uses its id.
	msgs := []any{userMsg(text("todo")), call("t1", "TaskCreate"), userMsg(result("t1", "Task #7 created successfully: Write the tests"))}
	got = script(reqFor(msgs...))
	want := Reply{Blocks: []Block{{Type: "tool_use", Name: "TaskUpdate", Input: map[string]any{"taskId": "7", "status": "in_progress"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after TaskCreate: %+v", got)
	}
	msgs = append(msgs, call("t2", "TaskUpdate"), userMsg(result("t2", "Updated task #7 status")))
	if got := script(reqFor(msgs...)); !reflect.DeepEqual(got, textReply(FinalTextPrefix+"Updated task #7 status")) {
		t.Errorf("after TaskUpdate: %+v", got)
	}
	// A failed TaskCreate is just reported.
	got = script(reqFor(userMsg(text("todo")), call("t1", "TaskCreate"),
		userMsg(map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "boom", "is_error": true})))
	if !reflect.DeepEqual(got, textReply(FinalTextPrefix+"boom")) {
		t.Errorf("after a failed TaskCreate: %+v", got)
	}
}

func TestStopReasonAndIDs(t *testing.T) {
	s := New(fixed(Reply{Blocks: []Block{{Type: "tool_use", Name: "A"}, {Type: "tool_use", Name: "B"}}}))
	defer s.Close()
	m := decodeJSON(t, post(t, s.URL+"/v1/messages", body(false, userMsg(text("x")))).Body)
	m2 := decodeJSON(t, post(t, s.URL+"/v1/messages", body(false, userMsg(text("x")))).Body)
	var ids []any
	for _, m := range []map[string]any{m, m2} {
		for _, b := range m["content"].([]any) {
			ids = append(ids, b.(map[string]any)["id"])
		}
	}
	if want := []any{"toolu_fake_1", "toolu_fake_2", "toolu_fake_3", "toolu_fake_4"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids %v", ids)
	}
	if m["stop_reason"] != "tool_use" || m["id"] == m2["id"] {
		t.Errorf("stop_reason %v, ids %v %v", m["stop_reason"], m["id"], m2["id"])
	}
	s3 := New(fixed(Reply{Blocks: []Block{{Type: "text", Text: "x"}}, StopReason: "max_tokens"}))
	defer s3.Close()
	if m := decodeJSON(t, post(t, s3.URL+"/v1/messages", body(false, userMsg(text("x")))).Body); m["stop_reason"] != "max_tokens" {
		t.Errorf("stop_reason %v", m["stop_reason"])
	}
}

// waitIdle waits until no handler of s runs, or fails.
func waitIdle(t *testing.T, s *Server, within time.Duration) {
	t.Helper()
	if err := s.host.WaitIdle(within); err != nil {
		t.Fatal(err)
	}
}

func TestDelay(t *testing.T) {
	s := New(fixed(Reply{Blocks: []Block{{Type: "text", Text: "abcdefghij"}}, Chunks: 5, Delay: 20 * time.Millisecond}))
	defer s.Close()
	start := time.Now()
	evs := readSSE(t, post(t, s.URL+"/v1/messages", body(true, userMsg(text("x")))).Body)
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("5 deltas 20ms apart took %v", d)
	}
	n := 0
	for _, e := range evs {
		if e.name == "content_block_delta" {
			n++
		}
	}
	if n != 5 {
		t.Errorf("%d deltas, want 5", n)
	}
}

func TestCancelledStream(t *testing.T) {
	s := New(Directives())
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	b, _ := json.Marshal(body(true, userMsg(text("slow please"))))
	req, _ := http.NewRequestWithContext(ctx, "POST", s.URL+"/v1/messages?beta=true", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for { // read up to the first delta
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(l, "text_delta") {
			break
		}
	}
	start := time.Now()
	cancel()
	// The stream still had ~1.9s to go; its handler must stop at once.
	waitIdle(t, s, 500*time.Millisecond)
	t.Logf("handler stopped %v after the client went away", time.Since(start))
}

func TestCloseCutsStreams(t *testing.T) {
	s := New(fixed(Reply{Blocks: []Block{{Type: "text", Text: "abcdefghij"}}, Chunks: 10, Delay: time.Hour}))
	resp := post(t, s.URL+"/v1/messages", body(true, userMsg(text("x"))))
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select { // an hour's delay: a Close that waited for the stream would hang
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close waits for the stream in flight")
	}
	if s.host.InFlight() != 0 {
		t.Error("a handler still runs after Close")
	}
	_, _ = io.Copy(io.Discard, br) // ends: the connection is closed
	s.Close()                      // twice is fine
}

func TestEnv(t *testing.T) {
	t.Setenv("PATH", "/usr/bin:/bin")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "must-not-leak")
	h := t.TempDir()
	env := Env("http://127.0.0.1:1/T", h)
	got := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("%s twice", k)
		}
		got[k] = v
	}
	want := map[string]string{
		"HOME": h, "CLAUDE_CONFIG_DIR": h + "/.claude", "CLAUDE_CODE_TMPDIR": h + "/tmp", "TMPDIR": h + "/tmp", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1/T",
		"ANTHROPIC_API_KEY": "dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
		"DISABLE_ERROR_REPORTING": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_MAX_RETRIES": "0",
		"CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK": "1", "IS_SANDBOX": "1", "PATH": "/usr/bin:/bin",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Env = %v\nwant %v", got, want)
	}
}

func ExampleNew() {
	s := New(func(r Request) Reply {
		return Reply{Blocks: []Block{{Type: "text", Text: "You said " + r.LastText}}}
	})
	defer s.Close()
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "user", "content": "hi"},
	}})
	resp, err := http.Post(s.URL+"/v1/messages", "application/json", bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var m struct {
		Content []struct{ Text string }
	}
	_ = json.NewDecoder(resp.Body).Decode(&m)
	fmt.Println(m.Content[0].Text)
	// Output: You said hi
}

// jsonLines decodes NDJSON, failing t on a line that is not an object.
func jsonLines(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var out []map[string]any
	for l := range bytes.Lines(b) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("stdout line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return out
}

// echoedResult is a tool_result block the CLI echoed in a user line, with
// that line's tool_use_result.
type echoedResult struct {
	content any
	isError bool
	result  any // the line's tool_use_result
}

// toolResults maps tool_use_id to its echoed result.
func toolResults(lines []map[string]any) map[string]echoedResult {
	out := map[string]echoedResult{}
	for _, l := range lines {
		if l["type"] != "user" {
			continue
		}
		msg, _ := l["message"].(map[string]any)
		blocks, _ := msg["content"].([]any)
		for _, b := range blocks {
			b, _ := b.(map[string]any)
			if b["type"] == "tool_result" {
				isErr, _ := b["is_error"].(bool)
				out[b["tool_use_id"].(string)] = echoedResult{b["content"], isErr, l["tool_use_result"]}
			}
		}
	}
	return out
}

// TestRealCLIPrint runs the real CLI once in -p mode against the fake: the
// fake's Bash call runs, its output comes back as a tool_result, and the
// turn ends with a success result carrying the fake's final text.
func TestRealCLIPrint(t *testing.T) {
	bin := ClaudeBin(t)
	t.Parallel()
	s := New(nil)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "run: echo hi", "--output-format", "stream-json", "--verbose",
		"--permission-mode", "bypassPermissions", "--setting-sources", "")
	cmd.Env = Env(s.URL+"/TestRealCLIPrint", t.TempDir())
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("claude -p took %v", time.Since(start))
	if err != nil {
		t.Fatalf("claude -p: %v\nstderr: %s\nstdout: %s", err, stderr.Bytes(), out)
	}
	lines := jsonLines(t, out)

	var result map[string]any
	var bashID string
	for _, l := range lines {
		if l["type"] == "result" {
			if result != nil {
				t.Error("two result lines")
			}
			result = l
		}
		if l["type"] == "assistant" {
			for _, b := range l["message"].(map[string]any)["content"].([]any) {
				if b := b.(map[string]any); b["type"] == "tool_use" && b["name"] == "Bash" {
					bashID = b["id"].(string)
				}
			}
		}
	}
	if result == nil || result["subtype"] != "success" || result["is_error"] != false {
		t.Fatalf("result line %v\nstdout: %s", result, out)
	}
	if result["result"] != FinalTextPrefix+"hi" {
		t.Errorf("result.result = %q", result["result"])
	}
	if bashID == "" {
		t.Fatalf("no Bash tool_use in\n%s", out)
	}
	r, ok := toolResults(lines)[bashID]
	if !ok || r.content != "hi" || r.isError {
		t.Errorf("Bash tool_result %+v", r)
	}
	if tur, _ := r.result.(map[string]any); tur["stdout"] != "hi" {
		t.Errorf("Bash tool_use_result %v", r.result)
	}

	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d API requests, want 2", len(reqs))
	}
	if r := reqs[0]; r.Prefix != "/TestRealCLIPrint" || !r.Stream || r.LastText != "run: echo hi" || len(r.Results) != 0 {
		t.Errorf("first request: prefix %q stream %v LastText %q results %v", r.Prefix, r.Stream, r.LastText, r.Results)
	}
	if r := reqs[1]; r.LastText != "" || len(r.Results) != 1 || r.Results[0].Content != "hi" {
		t.Errorf("second request: LastText %q results %+v", r.LastText, r.Results)
	}
}

// cliSession is the real CLI in its long-lived stream-json mode.
type cliSession struct {
	t     *testing.T
	stdin io.WriteCloser
	lines chan map[string]any
}

func (c *cliSession) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		c.t.Fatalf("writing to the CLI: %v", err)
	}
}

// next is the next stdout line; it fails t after 20s or at EOF.
func (c *cliSession) next() map[string]any {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatal("the CLI's stdout ended")
		}
		return l
	case <-time.After(time.Minute):
		c.t.Fatal("no line from the CLI within a minute")
	}
	return nil
}

// turn sends prompt and answers the CLI's control requests (allowing
// every tool with its input echoed back) until the turn's result, which
// it returns with the turn's lines.
func (c *cliSession) turn(prompt string) (result map[string]any, lines []map[string]any, permissions []string) {
	c.t.Helper()
	c.send(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}})
	for {
		l := c.next()
		lines = append(lines, l)
		switch l["type"] {
		case "control_request":
			req := l["request"].(map[string]any)
			if req["subtype"] != "can_use_tool" {
				c.t.Fatalf("unexpected control request %v", l)
			}
			permissions = append(permissions, req["tool_name"].(string))
			c.send(map[string]any{"type": "control_response", "response": map[string]any{
				"subtype": "success", "request_id": l["request_id"],
				"response": map[string]any{"behavior": "allow", "updatedInput": req["input"]}}})
		case "result":
			return l, lines, permissions
		}
	}
}

// TestRealCLIStreamJSON drives the CLI the way the SDKs (and the Claude
// backend) do: initialize, then user messages on stdin, can_use_tool
// answered on stdin. It pins down what CLI 2.1.197 does with the
// directives: a write needs permission while "echo" does not; an
// interrupt mid-stream aborts the API request (and the turn after it
// works); and the task tools' ids and results.
func TestRealCLIStreamJSON(t *testing.T) {
	bin := ClaudeBin(t)
	t.Parallel()
	s := New(nil)
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--include-partial-messages", "--permission-prompt-tool", "stdio", "--permission-mode", "default", "--setting-sources", "")
	// As the Claude backend does: from 2.1.3xx the task tools are offered
	// only to older models without it.
	cmd.Env = append(Env(s.URL, t.TempDir()), "CLAUDE_CODE_ENABLE_TODO_TOOLS=1")
	cwd := t.TempDir()
	cmd.Dir = cwd
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &cliSession{t: t, stdin: stdin, lines: make(chan map[string]any, 1000)}
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = map[string]any{"type": "not-json", "line": sc.Text()}
			}
			c.lines <- m
		}
	}()
	defer func() {
		stdin.Close()
		<-readDone
		if err := cmd.Wait(); err != nil {
			t.Errorf("the CLI: %v\nstderr: %s", err, stderr.Bytes())
		}
	}()

	c.send(map[string]any{"type": "control_request", "request_id": "req_1",
		"request": map[string]any{"subtype": "initialize", "hooks": nil}})
	for {
		l := c.next()
		if l["type"] == "control_response" {
			r := l["response"].(map[string]any)
			if r["request_id"] != "req_1" || r["subtype"] != "success" {
				t.Fatalf("initialize response %v", l)
			}
			break
		}
	}
	t.Logf("initialize answered %v after spawn", time.Since(start))

	// A read-only command runs without asking.
	t0 := time.Now()
	res, _, perms := c.turn("run: echo hi")
	t.Logf("turn 1 took %v", time.Since(t0))
	if res["subtype"] != "success" || res["result"] != FinalTextPrefix+"hi" || len(perms) != 0 {
		t.Errorf("echo: result %v, permissions asked %v", res, perms)
	}

	// One that writes asks can_use_tool; allowed, it runs.
	res, _, perms = c.turn("run: touch made.txt && echo made")
	if res["subtype"] != "success" || res["result"] != FinalTextPrefix+"made" || !reflect.DeepEqual(perms, []string{"Bash"}) {
		t.Errorf("touch: result %v, permissions asked %v", res, perms)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err != nil {
		t.Errorf("the allowed Bash call did not run: %v", err)
	}

	// An interrupt in the middle of a slow stream: the CLI drops the
	// request, and the fake's handler stops at once.
	c.send(map[string]any{"type": "user", "session_id": "", "parent_tool_use_id": nil,
		"message": map[string]any{"role": "user", "content": "slow"}})
	for {
		l := c.next()
		if ev, _ := l["event"].(map[string]any); l["type"] == "stream_event" && ev["type"] == "content_block_delta" {
			break
		}
	}
	c.send(map[string]any{"type": "control_request", "request_id": "req_2", "request": map[string]any{"subtype": "interrupt"}})
	t0 = time.Now()
	for {
		l := c.next()
		if l["type"] == "result" {
			if l["subtype"] != "error_during_execution" || l["terminal_reason"] != "aborted_streaming" {
				t.Errorf("interrupted turn's result %v", l)
			}
			break
		}
	}
	waitIdle(t, s, time.Second)
	t.Logf("interrupt: result and idle fake %v after the interrupt", time.Since(t0))

	// todo: TaskCreate then TaskUpdate with the id the CLI gave, no
	// permission asked.
	res, lines, perms := c.turn("todo")
	if res["subtype"] != "success" || len(perms) != 0 {
		t.Errorf("todo: result %v, permissions asked %v", res, perms)
	}
	calls := map[string]map[string]any{} // tool name → tool_use block
	for _, l := range lines {
		if l["type"] != "assistant" {
			continue
		}
		for _, b := range l["message"].(map[string]any)["content"].([]any) {
			if b := b.(map[string]any); b["type"] == "tool_use" {
				calls[b["name"].(string)] = b
			}
		}
	}
	results := toolResults(lines)
	create, update := calls["TaskCreate"], calls["TaskUpdate"]
	if create == nil || update == nil {
		t.Fatalf("todo made calls %v", calls)
	}
	cr := results[create["id"].(string)]
	if cr.content != "Task #1 created successfully: "+TaskSubject {
		t.Errorf("TaskCreate tool_result content %q", cr.content)
	}
	// {"task": {"id", "subject"}}; 2.1.332 adds the description.
	if r, _ := cr.result.(map[string]any); r == nil {
		t.Errorf("TaskCreate tool_use_result %v", cr.result)
	} else if task, _ := r["task"].(map[string]any); task["id"] != "1" || task["subject"] != TaskSubject {
		t.Errorf("TaskCreate tool_use_result %v", cr.result)
	}
	if want := map[string]any{"taskId": "1", "status": "in_progress"}; !reflect.DeepEqual(update["input"], want) {
		t.Errorf("TaskUpdate input %v", update["input"])
	}
	ur := results[update["id"].(string)]
	if ur.content != "Updated task #1 status" {
		t.Errorf("TaskUpdate tool_result content %q", ur.content)
	}
	if tur, _ := ur.result.(map[string]any); tur["success"] != true || tur["taskId"] != "1" ||
		!reflect.DeepEqual(tur["updatedFields"], []any{"status"}) {
		t.Errorf("TaskUpdate tool_use_result %v", ur.result)
	}
	if res["result"] != FinalTextPrefix+"Updated task #1 status" {
		t.Errorf("todo result %q", res["result"])
	}
}

// exitplan: a CLI that offers ExitPlanMode gets it at once; one that
// defers it (2.1.332) gets the plan written to the plan file plan mode
// names first, and ExitPlanMode after that Write.
func TestDirectivesExitPlan(t *testing.T) {
	script := Directives()
	const plan = "/h/.claude/plans/exitplan-calm-turtle.md"
	reminder := text("<system-reminder>Plan mode is active.\n\n## Plan File Info:\nNo plan file exists yet. You should create your plan at " +
		plan + " using the Write tool.\n</system-reminder>")
	deferred := reqFor(userMsg(reminder, text("exitplan")))
	want := Reply{Blocks: []Block{{Type: "tool_use", Name: "Write", Input: map[string]any{"file_path": plan, "content": PlanText}}}}
	if got := script(deferred); !reflect.DeepEqual(got, want) {
		t.Errorf("ExitPlanMode deferred:\n got %+v\nwant %+v", got, want)
	}

	offered := reqFor(userMsg(reminder, text("exitplan")))
	offered.Raw["tools"] = []any{map[string]any{"name": "ExitPlanMode", "input_schema": map[string]any{}}}
	if got := script(offered); !reflect.DeepEqual(got, exitPlan()) {
		t.Errorf("ExitPlanMode offered: %+v", got)
	}

	write := map[string]any{"role": "assistant", "content": []any{
		map[string]any{"type": "tool_use", "id": "t1", "name": "Write", "input": map[string]any{"file_path": plan, "content": PlanText}}}}
	done := map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "File created successfully at: " + plan}
	if got := script(reqFor(userMsg(reminder, text("exitplan")), write, userMsg(done))); !reflect.DeepEqual(got, exitPlan()) {
		t.Errorf("after the plan file's Write: %+v", got)
	}
}
