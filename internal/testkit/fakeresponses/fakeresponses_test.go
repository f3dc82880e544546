package fakeresponses

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Name string
	Data map[string]any
	Raw  string
}

// readEvent reads one "event: X\ndata: {…}\n\n" frame, strictly.
func readEvent(br *bufio.Reader) (sseEvent, error) {
	line := func() (string, error) {
		s, err := br.ReadString('\n')
		if err != nil {
			return s, err
		}
		return strings.TrimSuffix(s, "\n"), nil
	}
	ev, err := line()
	if err != nil {
		return sseEvent{}, err
	}
	data, err := line()
	if err != nil {
		return sseEvent{}, fmt.Errorf("after %q: %w", ev, err)
	}
	blank, err := line()
	if err != nil {
		return sseEvent{}, fmt.Errorf("after %q: %w", data, err)
	}
	name, ok := strings.CutPrefix(ev, "event: ")
	d, ok2 := strings.CutPrefix(data, "data: ")
	if !ok || !ok2 || blank != "" {
		return sseEvent{}, fmt.Errorf("bad frame %q %q %q", ev, data, blank)
	}
	e := sseEvent{Name: name, Raw: d}
	if err := json.Unmarshal([]byte(d), &e.Data); err != nil {
		return e, fmt.Errorf("data of %s: %v", name, err)
	}
	if e.Data["type"] != name {
		return e, fmt.Errorf("event %s has data type %v", name, e.Data["type"])
	}
	return e, nil
}

func readEvents(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	br := bufio.NewReader(r)
	var out []sseEvent
	for {
		e, err := readEvent(br)
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}

func post(t *testing.T, url string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func userBody(text string) map[string]any {
	return map[string]any{
		"model": "fake-model", "stream": true,
		"input": []any{
			map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": text}}},
		},
		"tools": []any{
			map[string]any{"type": "function", "name": "exec_command"},
			map[string]any{"type": "custom", "name": "apply_patch"},
		},
	}
}

func TestStreamFraming(t *testing.T) {
	s := New(func(Request) Reply {
		return Reply{Items: []Item{
			{Type: "reasoning", Text: "First part.\n\nSecond part."},
			{Type: "message", Text: "Hello there, this is /some/path/file.txt in a message."},
			{Type: "function_call", Name: "exec_command", Arguments: `{"cmd":"echo hi"}`},
			{Type: "custom_tool_call", Name: "apply_patch", Input: "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n", CallID: "call_mine"},
		}}
	})
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || !strings.HasSuffix(s.URL, "/v1") {
		t.Errorf("URL = %s", s.URL)
	}
	resp := post(t, s.URL+"/responses", userBody("hi"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	evs := readEvents(t, resp.Body)
	var names []string
	for i, e := range evs {
		names = append(names, e.Name)
		if e.Data["sequence_number"] != float64(i) {
			t.Errorf("event %d %s: sequence_number %v", i, e.Name, e.Data["sequence_number"])
		}
	}
	collapse := func(names []string) []string { // runs of one delta name → one
		var out []string
		for _, n := range names {
			if len(out) > 0 && out[len(out)-1] == n && strings.HasSuffix(n, ".delta") {
				continue
			}
			out = append(out, n)
		}
		return out
	}
	want := []string{
		"response.created",
		"response.output_item.added",
		"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
		"response.reasoning_summary_part.added", "response.reasoning_summary_text.delta",
		"response.reasoning_summary_text.done", "response.reasoning_summary_part.done",
		"response.output_item.done",
		"response.output_item.added", "response.content_part.added", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done",
		"response.output_item.added", "response.function_call_arguments.delta",
		"response.function_call_arguments.done", "response.output_item.done",
		"response.output_item.added", "response.custom_tool_call_input.delta",
		"response.custom_tool_call_input.done", "response.output_item.done",
		"response.completed",
	}
	if got := collapse(names); !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}

	// Deltas add up to the whole, and words are never cut.
	deltas := map[string][]string{}
	for _, e := range evs {
		if strings.HasSuffix(e.Name, ".delta") {
			d := e.Data["delta"].(string)
			key := e.Name + "/" + e.Data["item_id"].(string) + fmt.Sprint(e.Data["summary_index"])
			deltas[key] = append(deltas[key], d)
		}
	}
	var done []map[string]any
	for _, e := range evs {
		if e.Name == "response.output_item.done" {
			done = append(done, e.Data["item"].(map[string]any))
		}
	}
	if len(done) != 4 {
		t.Fatalf("%d items done", len(done))
	}
	msgID := done[1]["id"].(string)
	text := deltas["response.output_text.delta/"+msgID+"<nil>"]
	if len(text) < 2 || strings.Join(text, "") != "Hello there, this is /some/path/file.txt in a message." {
		t.Errorf("text deltas %q", text)
	}
	for _, d := range text {
		if strings.Contains(d, "/some") && !strings.Contains(d, "/some/path/file.txt") {
			t.Errorf("path cut: %q", text)
		}
	}
	if got := strings.Join(deltas["response.reasoning_summary_text.delta/"+done[0]["id"].(string)+"1"], ""); got != "Second part." {
		t.Errorf("second summary part %q", got)
	}
	if got := strings.Join(deltas["response.function_call_arguments.delta/"+done[2]["id"].(string)+"<nil>"], ""); got != `{"cmd":"echo hi"}` {
		t.Errorf("arguments %q", got)
	}

	// The finished items, as codex reads them.
	if got := done[0]; got["type"] != "reasoning" || !reflect.DeepEqual(got["summary"], []any{
		map[string]any{"type": "summary_text", "text": "First part."},
		map[string]any{"type": "summary_text", "text": "Second part."}}) {
		t.Errorf("reasoning item %v", got)
	}
	if got := done[1]; got["type"] != "message" || got["role"] != "assistant" || !strings.HasPrefix(msgID, "msg_") ||
		!reflect.DeepEqual(got["content"], []any{map[string]any{"type": "output_text", "text": "Hello there, this is /some/path/file.txt in a message.", "annotations": []any{}}}) {
		t.Errorf("message item %v", got)
	}
	if got := done[2]; got["type"] != "function_call" || got["name"] != "exec_command" || got["arguments"] != `{"cmd":"echo hi"}` ||
		!strings.HasPrefix(got["call_id"].(string), "call_") || !strings.HasPrefix(got["id"].(string), "fc_") {
		t.Errorf("function_call item %v", got)
	}
	if got := done[3]; got["type"] != "custom_tool_call" || got["name"] != "apply_patch" || got["call_id"] != "call_mine" ||
		got["input"] != "*** Begin Patch\n*** Add File: a\n+x\n*** End Patch\n" {
		t.Errorf("custom_tool_call item %v", got)
	}

	// response.completed carries the usage codex reads.
	last := evs[len(evs)-1].Data["response"].(map[string]any)
	usage, _ := last["usage"].(map[string]any)
	if last["status"] != "completed" || usage == nil || usage["input_tokens"].(float64) < 1 || usage["output_tokens"].(float64) < 1 ||
		usage["total_tokens"] != usage["input_tokens"].(float64)+usage["output_tokens"].(float64) ||
		usage["input_tokens_details"].(map[string]any)["cached_tokens"] != float64(0) ||
		usage["output_tokens_details"].(map[string]any)["reasoning_tokens"] == nil || len(last["output"].([]any)) != 4 {
		t.Errorf("response.completed %s", evs[len(evs)-1].Raw)
	}
	if first := evs[0].Data["response"].(map[string]any); first["id"] != last["id"] || first["status"] != "in_progress" {
		t.Errorf("response.created %s", evs[0].Raw)
	}
}

func TestDeltasOption(t *testing.T) {
	s := New(func(Request) Reply { return Reply{Items: []Item{{Type: "message", Text: "abcdefghij"}}, Deltas: 5} })
	defer s.Close()
	var got []string
	for _, e := range readEvents(t, post(t, s.URL+"/responses", userBody("x")).Body) {
		if e.Name == "response.output_text.delta" {
			got = append(got, e.Data["delta"].(string))
		}
	}
	if want := []string{"ab", "cd", "ef", "gh", "ij"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deltas %q, want %q", got, want)
	}
}

// Each event is flushed as it is written: the first arrives long before
// the slow stream ends.
func TestFlushesEachEvent(t *testing.T) {
	s := New(func(Request) Reply {
		return Reply{Items: []Item{{Type: "message", Text: "one two three"}}, Deltas: 3, Delay: time.Hour}
	})
	defer s.Close()
	cut := time.AfterFunc(time.Minute, s.Close) // ends the read below if it waits for the hour
	defer cut.Stop()
	resp := post(t, s.URL+"/responses", userBody("x"))
	br := bufio.NewReader(resp.Body)
	for _, want := range []string{"response.created", "response.output_item.added", "response.content_part.added"} {
		if e, err := readEvent(br); err != nil || e.Name != want {
			t.Fatalf("got %v %v, want %s (not flushed?)", e.Name, err, want)
		}
	}
}

// TestDelayComesBeforeTheFirstDelta: the events before the delay are
// flushed at once (TestFlushesEachEvent); the first delta waits for it.
func TestDelayComesBeforeTheFirstDelta(t *testing.T) {
	s := New(func(Request) Reply {
		return Reply{Items: []Item{{Type: "message", Text: "one two three"}}, Deltas: 3, Delay: 300 * time.Millisecond}
	})
	defer s.Close()
	t0 := time.Now()
	resp := post(t, s.URL+"/responses", userBody("x"))
	br := bufio.NewReader(resp.Body)
	for range 3 {
		if _, err := readEvent(br); err != nil {
			t.Fatal(err)
		}
	}
	e, err := readEvent(br)
	if err != nil || e.Name != "response.output_text.delta" || e.Data["delta"] != "one t" {
		t.Fatalf("got %v %v", e.Data, err)
	}
	if d := time.Since(t0); d < 250*time.Millisecond {
		t.Errorf("first delta after %v, want ≥ the 300ms delay", d)
	}
}

func TestErrors(t *testing.T) {
	s := New(func(r Request) Reply {
		switch r.LastUserText {
		case "500":
			return Reply{Status: 500}
		case "429":
			return Reply{Status: 429, ErrorCode: "rate_limit_exceeded", ErrorMessage: "Slow down"}
		}
		return Reply{Status: 401, ErrorType: "invalid_request_error", ErrorCode: "invalid_api_key"}
	})
	defer s.Close()
	check := func(resp *http.Response, status int, typ string, code any) {
		t.Helper()
		if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("status %d %q, want %d", resp.StatusCode, resp.Header.Get("Content-Type"), status)
		}
		var body struct {
			Error map[string]any `json:"error"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		e := body.Error
		if e["type"] != typ || e["code"] != code || e["message"] == "" || e["message"] == nil {
			t.Errorf("error body %v, want type %s code %v", e, typ, code)
		}
		if _, ok := e["param"]; !ok {
			t.Errorf("error body %v has no param", e)
		}
	}
	check(post(t, s.URL+"/responses", userBody("500")), 500, "server_error", nil)
	check(post(t, s.URL+"/responses", userBody("429")), 429, "rate_limit_error", "rate_limit_exceeded")
	check(post(t, s.URL+"/responses", userBody("401")), 401, "invalid_request_error", "invalid_api_key")
	check(post(t, s.URL+"/models", userBody("x")), 404, "invalid_request_error", "unknown_url")
	resp, err := http.Get(s.URL + "/responses")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	check(resp, 405, "invalid_request_error", nil)
	resp2, err := http.Post(s.URL+"/responses", "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	check(resp2, 400, "invalid_request_error", nil)
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests recorded, want 3 (only decoded /responses requests)", n)
	}
}

// waitIdle waits until no handler of s runs, or fails.
func waitIdle(t *testing.T, s *Server, within time.Duration) {
	t.Helper()
	if err := s.host.WaitIdle(within); err != nil {
		t.Fatal(err)
	}
}

// A client that goes away stops the stream at the next delay.
func TestClientGoneStopsStream(t *testing.T) {
	s := New(func(Request) Reply {
		return Reply{Items: []Item{{Type: "message", Text: "x"}}, Deltas: 1, Delay: time.Hour}
	})
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	b, _ := json.Marshal(userBody("x"))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/responses", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := readEvent(bufio.NewReader(resp.Body)); err != nil {
		t.Fatal(err)
	}
	if s.host.InFlight() != 1 {
		t.Fatalf("inflight %d, want 1", s.host.InFlight())
	}
	cancel()
	waitIdle(t, s, time.Minute)
}

// Close cuts off running streams and returns once their handlers are done.
func TestCloseCutsStreams(t *testing.T) {
	s := New(func(Request) Reply { return Reply{Items: []Item{{Type: "message", Text: "x"}}, Delay: time.Hour} })
	resp := post(t, s.URL+"/responses", userBody("x"))
	if _, err := readEvent(bufio.NewReader(resp.Body)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select { // an hour's delay: a Close that waited for the stream would hang
	case <-closed:
	case <-time.After(time.Minute):
		t.Fatal("Close waits for the stream in flight")
	}
	if n := s.host.InFlight(); n != 0 {
		t.Errorf("%d handlers running after Close", n)
	}
	s.Close() // twice is fine
}

// codexBody is a request body shaped like codex 0.169.0's after a shell
// call: developer messages, codex's context user message, the prompt,
// the model's text and call, and the call's output.
func codexBody() map[string]any {
	msg := func(role, typ, text string) map[string]any {
		return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": typ, "text": text}}}
	}
	return map[string]any{
		"model": "fake-model", "stream": true,
		"input": []any{
			msg("developer", "input_text", "You are Codex"),
			msg("user", "input_text", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
			msg("user", "input_text", "run: echo hi"),
			msg("assistant", "output_text", "I'll run `echo hi` now."),
			map[string]any{"type": "function_call", "name": "exec_command", "arguments": `{"cmd":"echo hi"}`, "call_id": "call_6"},
			map[string]any{"type": "function_call_output", "call_id": "call_6",
				"output": "Chunk ID: 835602\nWall time: 0.0000 seconds\nProcess exited with code 0\nOriginal token count: 1\nOutput:\nhi\n"},
		},
		"tools": []any{
			map[string]any{"type": "function", "name": "exec_command"},
			map[string]any{"type": "function", "name": "update_plan"},
			map[string]any{"type": "custom", "name": "apply_patch"},
			map[string]any{"type": "namespace", "name": "multi_agent_v1", "tools": []any{map[string]any{"type": "function", "name": "spawn"}}},
			map[string]any{"type": "web_search"},
		},
	}
}

func TestDecode(t *testing.T) {
	req := decode(codexBody())
	if req.Model != "fake-model" || req.LastUserText != "run: echo hi" {
		t.Errorf("model %q, last user text %q", req.Model, req.LastUserText)
	}
	if want := []string{"exec_command", "update_plan", "apply_patch", "multi_agent_v1.spawn", "web_search"}; !reflect.DeepEqual(req.Tools, want) {
		t.Errorf("tools %q", req.Tools)
	}
	if len(req.Outputs) != 1 || req.Outputs[0].CallID != "call_6" || req.Outputs[0].Name != "exec_command" ||
		req.Outputs[0].Type != "function_call_output" || !strings.HasSuffix(req.Outputs[0].Output, "Output:\nhi\n") {
		t.Errorf("outputs %+v", req.Outputs)
	}
	if req.ToolType("apply_patch") != "custom" || req.ToolType("nope") != "" || !req.HasTool("update_plan") {
		t.Errorf("ToolType/HasTool")
	}
	// A new prompt after the tool round: no outputs any more.
	body := codexBody()
	body["input"] = append(body["input"].([]any), map[string]any{"type": "message", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": "Tool finished."}}},
		map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "again"}}})
	if req := decode(body); len(req.Outputs) != 0 || req.LastUserText != "again" {
		t.Errorf("after a new prompt: outputs %+v, text %q", req.Outputs, req.LastUserText)
	}
	// A spawned agent's task, and its final answer to the agent that
	// spawned it, as codex 0.169.0 sends them (multi_agent_v2).
	task := func(kind, text string) map[string]any {
		return map[string]any{"type": "agent_message", "author": "/root", "recipient": "/root/helper", "content": []any{
			map[string]any{"type": "input_text", "text": "Message Type: " + kind + "\nTask name: /root/helper\nSender: /root\nPayload:\n"},
			map[string]any{"type": "encrypted_content", "encrypted_content": text}}}
	}
	body = codexBody()
	body["input"] = []any{task("NEW_TASK", "run: echo hi")}
	if req := decode(body); req.LastUserText != "run: echo hi" || req.AgentAnswer != "" {
		t.Errorf("a spawned agent's task: text %q, answer %q", req.LastUserText, req.AgentAnswer)
	}
	body["input"] = []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "delegate: x"}}},
		map[string]any{"type": "agent_message", "author": "/root/helper", "recipient": "/root", "content": []any{
			map[string]any{"type": "input_text", "text": "Message Type: FINAL_ANSWER\nTask name: /root\nSender: /root/helper\nPayload:\nall done"}}}}
	if req := decode(body); req.LastUserText != "delegate: x" || req.AgentAnswer != "all done" {
		t.Errorf("a final answer: text %q, answer %q", req.LastUserText, req.AgentAnswer)
	}
	// Array outputs.
	if got := outputText([]any{map[string]any{"type": "input_text", "text": "a"}, map[string]any{"type": "input_text", "text": "b"}}); got != "a\nb" {
		t.Errorf("outputText = %q", got)
	}
}

func TestRequestsRecorded(t *testing.T) {
	s := New(nil)
	defer s.Close()
	b, _ := json.Marshal(codexBody())
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/responses", bytes.NewReader(b))
	req.Header.Set("Originator", "acpbridge-test")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, resp.Body)
	resp.Body.Close()
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/responses" || reqs[0].Header.Get("Originator") != "acpbridge-test" || reqs[0].Raw["model"] != "fake-model" {
		t.Fatalf("requests %+v", reqs)
	}
	// The default script answered the shell output.
	for _, e := range evs {
		if e.Name == "response.output_text.done" && e.Data["text"] != FinalTextPrefix+"hi" {
			t.Errorf("answer %v", e.Data["text"])
		}
	}
}

func TestDirectives(t *testing.T) {
	exec := []string{"exec_command", "write_stdin", "update_plan", "apply_patch"}
	user := func(text string) Request { return Request{LastUserText: text, Tools: exec} }
	msg := func(s string) Item { return Item{Type: "message", Text: s} }
	fn := func(name, args string) Item { return Item{Type: "function_call", Name: name, Arguments: args} }
	wait := Item{Type: "function_call", Namespace: "collaboration", Name: "wait_agent", Arguments: `{"timeout_ms":10000}`}
	agents := func(status string) string { // list_agents' output, as codex 0.169.0 gives it
		return `{"agents":[{"agent_name":"/root","agent_status":"running"},{"agent_name":"/root/helper","agent_status":"` + status + `"}]}`
	}
	custom := func(input string) Item { return Item{Type: "custom_tool_call", Name: "apply_patch", Input: input} }
	for _, tc := range []struct {
		name string
		req  Request
		want Reply
	}{
		{"plain", user("hello there"), Reply{Items: []Item{msg("Hello from fake model. You said: hello there")}}},
		{"run exec_command", user("please run: echo hi\nmore"), Reply{Items: []Item{msg("I'll run `echo hi` now."), fn("exec_command", `{"cmd":"echo hi"}`)}}},
		{"run shell_command", Request{LastUserText: "run: ls -l", Tools: []string{"shell_command"}},
			Reply{Items: []Item{msg("I'll run `ls -l` now."), fn("shell_command", `{"command":"ls -l"}`)}}},
		{"run shell", Request{LastUserText: "run: ls", Tools: []string{"shell"}},
			Reply{Items: []Item{msg("I'll run `ls` now."), fn("shell", `{"command":["bash","-lc","ls"]}`)}}},
		{"run with no shell tool", Request{LastUserText: "run: ls"}, Reply{Items: []Item{msg("I'll run `ls` now."), fn("exec_command", `{"cmd":"ls"}`)}}},
		{"run wins over think", user("think, then run: echo x"), Reply{Items: []Item{msg("I'll run `echo x` now."), fn("exec_command", `{"cmd":"echo x"}`)}}},
		{"write", user("write: hello.txt hello from apply_patch"), Reply{Items: []Item{msg("Creating hello.txt."),
			custom("*** Begin Patch\n*** Add File: hello.txt\n+hello from apply_patch\n*** End Patch\n")}}},
		{"edit", user("edit: hello.txt hello from apply_patch => hello EDITED by apply_patch"), Reply{Items: []Item{msg("Editing hello.txt."),
			custom("*** Begin Patch\n*** Update File: hello.txt\n@@\n-hello from apply_patch\n+hello EDITED by apply_patch\n*** End Patch\n")}}},
		{"write as a function", Request{LastUserText: "write: a hello from apply_patch", Raw: map[string]any{"tools": []any{map[string]any{"type": "function", "name": "apply_patch"}}}},
			Reply{Items: []Item{msg("Creating a."), fn("apply_patch", `{"input":"*** Begin Patch\n*** Add File: a\n+hello from apply_patch\n*** End Patch\n"}`)}}},
		{"think", user("think about it"), Reply{Items: []Item{{Type: "reasoning", Text: "Planning the answer."}, msg("Hello from fake model. You said: think about it")}}},
		{"Think is not think", user("Think about it"), Reply{Items: []Item{msg("Hello from fake model. You said: Think about it")}}},
		{"thinking is not think", user("thinking"), Reply{Items: []Item{msg("Hello from fake model. You said: thinking")}}},
		{"todo", user("todo please"), Reply{Items: []Item{fn("update_plan", PlanArguments)}}},
		{"slow", user("slow"), Reply{Items: []Item{msg("Hello from fake model. You said: slow")}, Deltas: 40, Delay: 100 * time.Millisecond}},
		{"fail500", user("fail500"), Reply{Status: 500, ErrorType: "server_error", ErrorMessage: "The server had an error while processing your request."}},
		{"delegate", Request{LastUserText: "delegate: run: echo hi", Tools: append(exec, "collaboration.spawn_agent")},
			Reply{Items: []Item{{Type: "function_call", Namespace: "collaboration", Name: "spawn_agent", Arguments: `{"fork_turns":"none","message":"run: echo hi","task_name":"helper"}`}}}},
		{"delegate without the tool", user("delegate: run: echo hi"), Reply{Items: []Item{msg("I'll run `echo hi` now."), fn("exec_command", `{"cmd":"echo hi"}`)}}},
		{"after spawn_agent", Request{Outputs: []Output{{Type: "function_call_output", Name: "spawn_agent", Output: `{"task_name":"/root/helper"}`}}}, Reply{Items: []Item{wait}}},
		{"after a wait with no answer", Request{Outputs: []Output{{Name: "spawn_agent"}, {Name: "wait_agent", Output: `{"timed_out":true}`}}},
			Reply{Items: []Item{{Type: "function_call", Namespace: "collaboration", Name: "list_agents", Arguments: `{}`}}}},
		{"after list_agents, the agent running", Request{Outputs: []Output{{Name: "wait_agent"}, {Name: "list_agents", Output: agents("running")}}}, Reply{Items: []Item{wait}}},
		{"after list_agents, the agent interrupted", Request{Outputs: []Output{{Name: "wait_agent"}, {Name: "list_agents", Output: agents("interrupted")}}},
			Reply{Items: []Item{msg("The agent did not answer: " + agents("interrupted"))}}},
		{"after a wait answered", Request{Outputs: []Output{{Name: "spawn_agent"}, {Name: "wait_agent"}}, AgentAnswer: "done"},
			Reply{Items: []Item{msg("Tool finished. Output was: done")}}},
		{"after exec_command", Request{Outputs: []Output{{Type: "function_call_output", CallID: "c", Name: "exec_command",
			Output: "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\nhi\n"}}},
			Reply{Items: []Item{msg("Tool finished. Output was: hi")}}},
		{"after a rejected command", Request{Outputs: []Output{{Type: "function_call_output", Name: "exec_command",
			Output: `exec_command failed: CreateProcess { message: "Rejected(\"rejected by user\")" }`}}},
			Reply{Items: []Item{msg(`Tool finished. Output was: exec_command failed: CreateProcess { message: "Rejected(\"rejected by user\")" }`)}}},
		{"after update_plan", Request{Outputs: []Output{{Type: "function_call_output", Name: "update_plan", Output: "Plan updated"}}},
			Reply{Items: []Item{msg("Plan updated.")}}},
		{"after apply_patch", Request{Outputs: []Output{{Type: "custom_tool_call_output", Name: "apply_patch",
			Output: "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess. Updated the following files:\nA x.txt\n"}}},
			Reply{Items: []Item{msg("Patch applied.")}}},
		{"after a rejected apply_patch", Request{Outputs: []Output{{Type: "custom_tool_call_output", Name: "apply_patch", Output: "patch rejected by user"}}},
			Reply{Items: []Item{msg("Patch not applied: patch rejected by user")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Directives()(tc.req); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// The plan arguments are valid JSON with the statuses the model uses.
	var plan struct {
		Explanation string `json:"explanation"`
		Plan        []struct{ Step, Status string }
	}
	if err := json.Unmarshal([]byte(PlanArguments), &plan); err != nil || plan.Explanation != "fake plan" || len(plan.Plan) != 2 || plan.Plan[0].Status != "in_progress" {
		t.Errorf("PlanArguments: %+v %v", plan, err)
	}
}

func TestConfig(t *testing.T) {
	dir := t.TempDir()
	codexHome := filepath.Join(dir, "codex")
	if err := WriteHome(codexHome, "http://127.0.0.1:1234/v1", HomeOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := os.ReadFile(filepath.Join(codexHome, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	catalog, err := os.ReadFile(filepath.Join(codexHome, "fake_models.json"))
	if err != nil || !bytes.Equal(catalog, FakeModels) {
		t.Fatalf("catalog: %v", err)
	}
	var models struct {
		Models []struct {
			Slug string `json:"slug"`
		} `json:"models"`
	}
	if err := json.Unmarshal(FakeModels, &models); err != nil || len(models.Models) != 1 || models.Models[0].Slug != Model {
		t.Errorf("FakeModels: %+v %v", models, err)
	}
	for _, want := range []string{
		"model = \"fake-model\"\n", "model_provider = \"fake\"\n",
		"model_catalog_json = \"" + filepath.Join(codexHome, "fake_models.json") + "\"\n",
		"[model_providers.fake]\n", "base_url = \"http://127.0.0.1:1234/v1\"\n", "wire_api = \"responses\"\n",
		"env_key = \"FAKE_API_KEY\"\n", "request_max_retries = 0\n", "stream_max_retries = 0\n",
		"[analytics]\nenabled = false\n", "plugins = false\n", "remote_plugin = false\n", "apps = false\n",
	} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config.toml lacks %q:\n%s", want, cfg)
		}
	}
	for _, no := range []string{"approval_policy", "sandbox_mode"} {
		if strings.Contains(string(cfg), no) {
			t.Errorf("config.toml sets %s by default:\n%s", no, cfg)
		}
	}
	cfg2 := Config("http://x/v1", `/a "b"\c`, HomeOptions{ApprovalPolicy: "untrusted", SandboxMode: "read-only", Extra: "[tools.update_plan]\nenabled = true"})
	for _, want := range []string{
		"approval_policy = \"untrusted\"\nsandbox_mode = \"read-only\"\nmodel_catalog_json = \"/a \\\"b\\\"\\\\c\"\n",
		"apps = false\n\n[tools.update_plan]\nenabled = true\n",
	} {
		if !strings.Contains(cfg2, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg2)
		}
	}
	env := Env("/h", "/h/.codex")
	want := []string{"HOME=/h", "TMPDIR=/h/tmp", "CODEX_HOME=/h/.codex", "FAKE_API_KEY=dummy", "RUST_LOG=error", "PATH=" + os.Getenv("PATH")}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("Env = %q", env)
	}
}
