package fakechat

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
	"runtime"
	"strings"
	"testing"
	"time"
)

// readFrame reads one "data: …\n\n" frame, strictly, and returns what
// follows "data: ".
func readFrame(br *bufio.Reader) (string, error) {
	line, err := br.ReadString('\n')
	if err != nil {
		return "", err
	}
	blank, err := br.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("after %q: %w", line, err)
	}
	data, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), "data: ")
	if !ok || blank != "\n" {
		return "", fmt.Errorf("bad frame %q %q", line, blank)
	}
	return data, nil
}

// streamChunk is a chat.completion.chunk as a test looks at it.
type streamChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role             string  `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

// readStream reads a whole stream: its chunks, and whether it ended with
// "data: [DONE]".
func readStream(t *testing.T, r io.Reader) (chunks []streamChunk, done bool) {
	t.Helper()
	br := bufio.NewReader(r)
	for {
		data, err := readFrame(br)
		if err == io.EOF {
			return chunks, done
		}
		if err != nil {
			t.Fatal(err)
		}
		if done {
			t.Fatalf("frame %q after [DONE]", data)
		}
		if data == "[DONE]" {
			done = true
			continue
		}
		var c streamChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
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

func msg(role string, content any) map[string]any {
	return map[string]any{"role": role, "content": content}
}

func tool(name string) map[string]any {
	return map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": map[string]any{}}}
}

// userBody is a streaming request shaped like OpenCode's for the prompt
// text.
func userBody(text string) map[string]any {
	return map[string]any{
		"model": Model, "stream": true, "stream_options": map[string]any{"include_usage": true}, "max_tokens": 4096,
		"messages":    []any{msg("system", "You are opencode.\n<env>\n  Working directory: /w\n</env>"), msg("user", text)},
		"tools":       []any{tool("bash"), tool("read")},
		"tool_choice": "auto",
	}
}

func fixed(rep Reply) Script { return func(Request) Reply { return rep } }

func TestStreamFraming(t *testing.T) {
	s := New(fixed(Reply{
		Reasoning: "Let me see.",
		Text:      "Hello there, this is /some/path/file.txt in a message.",
		Calls: []Call{
			{Name: "bash", Arguments: `{"command":"echo hi","description":"Say hi"}`},
			{ID: "call_mine", Name: "read", Arguments: `{"filePath":"/w/a b.txt"}`},
		},
	}))
	defer s.Close()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") || strings.HasSuffix(s.URL, "/") {
		t.Errorf("URL = %s", s.URL)
	}
	resp := post(t, s.URL+"/v1/chat/completions", userBody("hi"))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	chunks, done := readStream(t, resp.Body)
	if !done {
		t.Error("no data: [DONE]")
	}
	if len(chunks) < 6 {
		t.Fatalf("%d chunks", len(chunks))
	}
	for i, c := range chunks {
		if c.ID != chunks[0].ID || !strings.HasPrefix(c.ID, "chatcmpl-fake-") || c.Object != "chat.completion.chunk" ||
			c.Model != Model || c.Created == 0 {
			t.Errorf("chunk %d: %+v", i, c)
		}
	}
	first := chunks[0].Choices[0].Delta
	if first.Role != "assistant" || first.Content == nil || *first.Content != "" {
		t.Errorf("first delta %+v", first)
	}
	// The order: role, reasoning, content, calls, finish, usage.
	var kinds []string
	var reasoning, content strings.Builder
	args := map[int]*strings.Builder{}
	var ids, names []string
	for _, c := range chunks[1:] {
		if len(c.Choices) == 0 {
			kinds = append(kinds, "usage")
			if c.Usage == nil || c.Usage.PromptTokens == 0 || c.Usage.TotalTokens != c.Usage.PromptTokens+c.Usage.CompletionTokens {
				t.Errorf("usage chunk %+v", c.Usage)
			}
			continue
		}
		ch := c.Choices[0]
		d := ch.Delta
		var k string
		switch {
		case ch.FinishReason != nil:
			k = "finish:" + *ch.FinishReason
		case d.ReasoningContent != nil:
			k = "reasoning"
			reasoning.WriteString(*d.ReasoningContent)
		case d.Content != nil:
			k = "content"
			content.WriteString(*d.Content)
		case len(d.ToolCalls) == 1:
			tc := d.ToolCalls[0]
			k = fmt.Sprintf("call%d", tc.Index)
			if tc.ID != "" {
				if tc.Type != "function" || tc.Function.Arguments != "" {
					t.Errorf("call header %+v", tc)
				}
				ids, names = append(ids, tc.ID), append(names, tc.Function.Name)
				args[tc.Index] = new(strings.Builder)
			} else {
				args[tc.Index].WriteString(tc.Function.Arguments)
			}
		default:
			t.Errorf("unexpected chunk %+v", c)
		}
		if len(kinds) == 0 || kinds[len(kinds)-1] != k {
			kinds = append(kinds, k)
		}
	}
	if want := []string{"reasoning", "content", "call0", "call1", "finish:tool_calls", "usage"}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("chunk kinds %q, want %q", kinds, want)
	}
	if reasoning.String() != "Let me see." || content.String() != "Hello there, this is /some/path/file.txt in a message." {
		t.Errorf("reasoning %q, content %q", reasoning.String(), content.String())
	}
	if !strings.HasPrefix(ids[0], "call_") || ids[1] != "call_mine" || !reflect.DeepEqual(names, []string{"bash", "read"}) {
		t.Errorf("call ids %q, names %q", ids, names)
	}
	if args[0].String() != `{"command":"echo hi","description":"Say hi"}` || args[1].String() != `{"filePath":"/w/a b.txt"}` {
		t.Errorf("arguments %q %q", args[0].String(), args[1].String())
	}
}

// Text is cut just before spaces, so a path is whole in one delta.
func TestDeltasKeepWordsWhole(t *testing.T) {
	s := New(fixed(Reply{Text: "Reading /some/long/path/file.txt now please"}))
	defer s.Close()
	chunks, _ := readStream(t, post(t, s.URL+"/v1/chat/completions", userBody("x")).Body)
	var got []string
	for _, c := range chunks[1:] {
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil {
			got = append(got, *c.Choices[0].Delta.Content)
		}
	}
	if len(got) < 2 || strings.Join(got, "") != "Reading /some/long/path/file.txt now please" {
		t.Fatalf("deltas %q", got)
	}
	for _, d := range got {
		if strings.Contains(d, "/") && !strings.Contains(d, "/some/long/path/file.txt") {
			t.Errorf("delta %q cuts the path", d)
		}
	}
}

func TestDeltasOption(t *testing.T) {
	s := New(fixed(Reply{Text: "abcdefghij", Deltas: 5}))
	defer s.Close()
	chunks, _ := readStream(t, post(t, s.URL+"/v1/chat/completions", userBody("x")).Body)
	var got []string
	for _, c := range chunks[1:] {
		if len(c.Choices) > 0 && c.Choices[0].Delta.Content != nil {
			got = append(got, *c.Choices[0].Delta.Content)
		}
	}
	if want := []string{"ab", "cd", "ef", "gh", "ij"}; !reflect.DeepEqual(got, want) {
		t.Errorf("deltas %q, want %q", got, want)
	}
}

func TestFinishStopAndUsage(t *testing.T) {
	s := New(fixed(Reply{Text: "done"}))
	defer s.Close()
	chunks, done := readStream(t, post(t, s.URL+"/v1/chat/completions", userBody("x")).Body)
	n := len(chunks)
	if !done || n < 3 {
		t.Fatalf("%d chunks, done %v", n, done)
	}
	if f := chunks[n-2].Choices; len(f) != 1 || f[0].FinishReason == nil || *f[0].FinishReason != "stop" {
		t.Errorf("finish chunk %+v", chunks[n-2])
	}
	if u := chunks[n-1]; len(u.Choices) != 0 || u.Usage == nil {
		t.Errorf("usage chunk %+v", u)
	}
}

// Each chunk is flushed as it is written: the role chunk arrives while
// the first delta waits out its hour's delay.
func TestFlush(t *testing.T) {
	s := New(fixed(Reply{Text: "one two three", Deltas: 3, Delay: time.Hour}))
	defer s.Close()
	read := make(chan error, 1)
	resp := post(t, s.URL+"/v1/chat/completions", userBody("x"))
	go func() {
		_, err := readFrame(bufio.NewReader(resp.Body))
		read <- err
	}()
	select {
	case err := <-read:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		t.Fatal("no role chunk before the first delta's delay (not flushed?)")
	}
}

// The delay comes before each delta: the first delta comes after it.
func TestDelay(t *testing.T) {
	s := New(fixed(Reply{Text: "one two three", Deltas: 3, Delay: 300 * time.Millisecond}))
	defer s.Close()
	t0 := time.Now()
	br := bufio.NewReader(post(t, s.URL+"/v1/chat/completions", userBody("x")).Body)
	if _, err := readFrame(br); err != nil {
		t.Fatal(err)
	}
	data, err := readFrame(br)
	if err != nil || !strings.Contains(data, `"content":"one t"`) {
		t.Fatalf("second frame %q %v", data, err)
	}
	if d := time.Since(t0); d < 250*time.Millisecond {
		t.Errorf("first delta after %v, want ≥ the 300ms delay", d)
	}
}

func TestNonStreaming(t *testing.T) {
	s := New(fixed(Reply{Reasoning: "hmm", Text: "sure", Calls: []Call{{ID: "call_1", Name: "bash", Arguments: `{"command":"ls"}`}}}))
	defer s.Close()
	body := userBody("x")
	body["stream"] = false
	resp := post(t, s.URL+"/v1/chat/completions", body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var got struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role             string `json:"role"`
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
				ToolCalls        []struct {
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got.Object != "chat.completion" || len(got.Choices) != 1 || got.Usage.TotalTokens == 0 {
		t.Fatalf("completion %+v", got)
	}
	m := got.Choices[0].Message
	if m.Role != "assistant" || m.Content != "sure" || m.ReasoningContent != "hmm" || got.Choices[0].FinishReason != "tool_calls" ||
		len(m.ToolCalls) != 1 || m.ToolCalls[0].ID != "call_1" || m.ToolCalls[0].Type != "function" ||
		m.ToolCalls[0].Function.Name != "bash" || m.ToolCalls[0].Function.Arguments != `{"command":"ls"}` {
		t.Errorf("message %+v", got.Choices[0])
	}
	if reqs := s.Requests(); len(reqs) != 1 || reqs[0].Stream {
		t.Errorf("requests %+v", reqs)
	}
}

func TestErrors(t *testing.T) {
	s := New(func(r Request) Reply {
		switch r.LastUserText {
		case "500":
			return Reply{Status: 500}
		case "429":
			return Reply{Status: 429, ErrorMessage: "Slow down"}
		}
		return Reply{Status: 400, ErrorType: "invalid_request_error", ErrorMessage: "bad"}
	})
	defer s.Close()
	check := func(resp *http.Response, status int, typ, message string) {
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
		if e["type"] != typ || e["message"] == "" || e["message"] == nil || (message != "" && e["message"] != message) {
			t.Errorf("error body %v, want type %s message %q", e, typ, message)
		}
		if _, ok := e["param"]; !ok {
			t.Errorf("error body %v has no param", e)
		}
	}
	url := s.URL + "/v1/chat/completions"
	check(post(t, url, userBody("500")), 500, "server_error", "")
	check(post(t, url, userBody("429")), 429, "rate_limit_error", "Slow down")
	check(post(t, url, userBody("400")), 400, "invalid_request_error", "bad")
	check(post(t, s.URL+"/v1/models", userBody("x")), 404, "invalid_request_error", "")
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	check(resp, 405, "invalid_request_error", "")
	resp2, err := http.Post(url, "application/json", strings.NewReader("not json"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	check(resp2, 400, "invalid_request_error", "")
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests recorded, want 3 (only decoded chat completions)", n)
	}
}

// A per-test prefix before /v1 and the x-session-id header are recorded.
func TestRoutes(t *testing.T) {
	s := New(nil)
	defer s.Close()
	b, _ := json.Marshal(userBody("one"))
	req, _ := http.NewRequest(http.MethodPost, s.URL+"/TestX/sub/v1/chat/completions", bytes.NewReader(b))
	req.Header.Set("x-session-id", "ses_abc")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	readStream(t, resp.Body)
	resp.Body.Close()
	readStream(t, post(t, s.URL+"/v1/chat/completions", userBody("two")).Body)
	reqs := s.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if r := reqs[0]; r.Path != completionsPath || r.Prefix != "/TestX/sub" || r.SessionID != "ses_abc" || r.LastUserText != "one" {
		t.Errorf("first request %+v", r)
	}
	if r := reqs[1]; r.Path != completionsPath || r.Prefix != "" || r.SessionID != "" || r.LastUserText != "two" {
		t.Errorf("second request %+v", r)
	}
}

// openCodeBody is a request body shaped like OpenCode 1.18.33's after a
// bash call: the system prompt with its environment, the prompt with an
// image, the model's text and call, and the call's output.
func openCodeBody() map[string]any {
	return map[string]any{
		"model": Model, "stream": true,
		"messages": []any{
			msg("system", "You are opencode, an interactive CLI tool.\n<env>\n  Working directory: /tmp/work dir\n  Is directory a git repo: yes\n</env>"),
			msg("user", "earlier"),
			msg("assistant", "Hi."),
			msg("user", []any{
				map[string]any{"type": "text", "text": "run: echo hi"},
				map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}},
				map[string]any{"type": "text", "text": "please"},
			}),
			map[string]any{"role": "assistant", "content": "I'll run `echo hi` now.", "reasoning_content": "hmm",
				"tool_calls": []any{
					map[string]any{"id": "call_5", "type": "function", "function": map[string]any{"name": "bash", "arguments": `{"command":"echo hi"}`}},
					map[string]any{"id": "call_6", "type": "function", "function": map[string]any{"name": "read", "arguments": `{"filePath":"/a"}`}},
				}},
			map[string]any{"role": "tool", "tool_call_id": "call_5", "content": "hi\n"},
			map[string]any{"role": "tool", "tool_call_id": "call_6", "content": "<path>/a</path>"},
		},
		"tools": []any{tool("bash"), tool("read"), tool("write")},
	}
}

func TestDecode(t *testing.T) {
	r := decode(openCodeBody())
	if r.Model != Model || !r.Stream || r.Title || r.Cwd != "/tmp/work dir" || r.LastUserText != "run: echo hi\nplease" || r.Images != 1 {
		t.Errorf("request %+v", r)
	}
	if !reflect.DeepEqual(r.Tools, []string{"bash", "read", "write"}) || !r.HasTool("write") || r.HasTool("edit") {
		t.Errorf("tools %q", r.Tools)
	}
	want := []Result{{CallID: "call_5", Name: "bash", Content: "hi\n"}, {CallID: "call_6", Name: "read", Content: "<path>/a</path>"}}
	if !reflect.DeepEqual(r.Results, want) {
		t.Errorf("results %+v", r.Results)
	}
	if len(r.Messages) != 7 {
		t.Fatalf("%d messages", len(r.Messages))
	}
	if m := r.Messages[4]; m.Role != "assistant" || m.Text != "I'll run `echo hi` now." || m.Reasoning != "hmm" || len(m.ToolCalls) != 2 ||
		m.ToolCalls[0] != (Call{ID: "call_5", Name: "bash", Arguments: `{"command":"echo hi"}`}) {
		t.Errorf("assistant message %+v", m)
	}
	if m := r.Messages[3]; m.Role != "user" || m.Images != 1 {
		t.Errorf("user message %+v", m)
	}
	if !strings.HasPrefix(r.System, "You are opencode") {
		t.Errorf("system %q", r.System)
	}

	// A new prompt after a tool round: no results.
	body := openCodeBody()
	body["messages"] = append(body["messages"].([]any), msg("assistant", "Done."), msg("user", "next"))
	if r := decode(body); len(r.Results) != 0 || r.LastUserText != "next" || r.Images != 0 {
		t.Errorf("after a new prompt: %+v", r)
	}
	// The title request: no tools.
	title := map[string]any{"model": Model, "stream": true, "reasoning_effort": "low", "messages": []any{
		msg("system", "You are a title generator. You output ONLY a thread title."),
		msg("user", "Generate a title for this conversation:\n"),
		msg("user", "hello there"),
	}}
	if r := decode(title); !r.Title || r.LastUserText != "hello there" || r.Cwd != "" || len(r.Tools) != 0 {
		t.Errorf("title request %+v", r)
	}
}

func TestDirectives(t *testing.T) {
	oc := []string{"bash", "edit", "glob", "grep", "question", "read", "skill", "task", "todowrite", "webfetch", "write"}
	user := func(text string) Request { return Request{LastUserText: text, Tools: oc, Cwd: "/w"} }
	call := func(name, args string) Call { return Call{Name: name, Arguments: args} }
	for _, tc := range []struct {
		name string
		req  Request
		want Reply
	}{
		{"plain", user("hello there"), Reply{Text: "Hello from fake model. You said: hello there"}},
		{"long", user(strings.Repeat("é", 300)), Reply{Text: AnswerTextPrefix + strings.Repeat("é", 200)}},
		{"images", Request{LastUserText: "look", Images: 2, Tools: oc}, Reply{Text: "Hello from fake model. You said: look I see 2 image(s)."}},
		{"title", Request{LastUserText: "please run: echo hello world now", Title: true}, Reply{Text: "please run: echo hello world"}},
		{"empty title", Request{Title: true}, Reply{Text: "Untitled"}},
		{"title wins over fail400", Request{LastUserText: "fail400", Title: true}, Reply{Text: "fail400"}},
		{"delegate", user("delegate: run: echo hi"), Reply{Calls: []Call{call("task", `{"description":"Delegated task","prompt":"run: echo hi","subagent_type":"general"}`)}}},
		{"the subagent's prompt", user("run: echo hi"), Reply{Text: "I'll run `echo hi` now.",
			Calls: []Call{call("bash", `{"command":"echo hi","description":"Run the requested command"}`)}}},
		{"run", user("please run: echo hi\nmore"), Reply{Text: "I'll run `echo hi` now.",
			Calls: []Call{call("bash", `{"command":"echo hi","description":"Run the requested command"}`)}}},
		{"run wins over think", user("think, then run: echo x"), Reply{Text: "I'll run `echo x` now.",
			Calls: []Call{call("bash", `{"command":"echo x","description":"Run the requested command"}`)}}},
		{"write", user("write: out.txt written by fake model"), Reply{Calls: []Call{call("write", `{"content":"written by fake model\n","filePath":"/w/out.txt"}`)}}},
		{"write absolute, no cwd", Request{LastUserText: "write: /a/b.txt x"}, Reply{Calls: []Call{call("write", `{"content":"x\n","filePath":"/a/b.txt"}`)}}},
		{"write relative, no cwd", Request{LastUserText: "write: b.txt"}, Reply{Calls: []Call{call("write", `{"content":"\n","filePath":"b.txt"}`)}}},
		{"edit", user("edit: sub/a.txt old words => new words"), Reply{Calls: []Call{call("edit", `{"filePath":"/w/sub/a.txt","newString":"new words","oldString":"old words"}`)}}},
		{"read", user("read: notes.txt"), Reply{Calls: []Call{call("read", `{"filePath":"/w/notes.txt"}`)}}},
		{"todo", user("make a todo list"), Reply{Calls: []Call{call("todowrite", TodoArguments)}}},
		{"todowrite is not todo", user("todowrite"), Reply{Text: AnswerTextPrefix + "todowrite"}},
		{"ask", user("ask me"), Reply{Calls: []Call{call("question", QuestionArguments)}}},
		{"think", user("think about it"), Reply{Reasoning: "Thinking about it.", Text: AnswerTextPrefix + "think about it"}},
		{"Think is not think", user("Think about it"), Reply{Text: AnswerTextPrefix + "Think about it"}},
		{"thinking is not think", user("thinking"), Reply{Text: AnswerTextPrefix + "thinking"}},
		{"slow", user("slow"), Reply{Text: AnswerTextPrefix + "slow", Deltas: 40, Delay: 100 * time.Millisecond}},
		{"fail400", user("fail400"), Reply{Status: 400, ErrorMessage: "fake bad request"}},
		{"fail500", user("fail500"), Reply{Status: 500, ErrorMessage: "fake upstream failure"}},
		{"after a tool", Request{Tools: oc, LastUserText: "run: echo hi", Results: []Result{{CallID: "c", Name: "bash", Content: "hi\n"}}},
			Reply{Text: "Tool finished. Output was: hi"}},
		{"after a rejected tool", Request{Tools: oc, Results: []Result{{Name: "bash", Content: "The user rejected permission to use this specific tool call."}}},
			Reply{Text: "Tool finished. Output was: The user rejected permission to use this specific tool call."}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Directives()(tc.req); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	// The fixed arguments are valid JSON of the shapes OpenCode's tools take.
	var todos struct {
		Todos []struct{ ID, Content, Status, Priority string }
	}
	if err := json.Unmarshal([]byte(TodoArguments), &todos); err != nil || len(todos.Todos) != 2 || todos.Todos[0].Status != "in_progress" {
		t.Errorf("TodoArguments: %+v %v", todos, err)
	}
	var q struct {
		Questions []struct {
			Question, Header string
			Options          []struct{ Label, Description string }
		}
	}
	if err := json.Unmarshal([]byte(QuestionArguments), &q); err != nil || len(q.Questions) != 1 || q.Questions[0].Question != QuestionText ||
		q.Questions[0].Header != QuestionHeader || len(q.Questions[0].Options) != 2 || q.Questions[0].Options[0].Label != "red" {
		t.Errorf("QuestionArguments: %+v %v", q, err)
	}
}

// A client that goes away stops the stream at the next delay.
func TestClientGoneStopsStream(t *testing.T) {
	s := New(fixed(Reply{Text: "x", Deltas: 1, Delay: time.Hour}))
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	b, _ := json.Marshal(userBody("x"))
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/v1/chat/completions", bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := readFrame(bufio.NewReader(resp.Body)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := s.WaitIdle(time.Minute); err != nil {
		t.Fatal(err)
	}
}

// Close cuts off running streams and returns once their handlers are done.
func TestCloseCutsStreams(t *testing.T) {
	s := New(fixed(Reply{Text: "x", Delay: time.Hour}))
	resp := post(t, s.URL+"/v1/chat/completions", userBody("x"))
	if _, err := readFrame(bufio.NewReader(resp.Body)); err != nil {
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

func TestHome(t *testing.T) {
	home := Home(t, "http://127.0.0.1:1234/TestHome")
	for _, d := range []string{".config", ".local/share", ".cache", ".local/state", "tmp"} {
		if fi, err := os.Stat(filepath.Join(home, d)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v", d, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(home, ".npmrc")); err != nil || string(b) != "registry=http://127.0.0.1:9/\n" {
		t.Errorf(".npmrc %q %v", b, err)
	}
	b, err := os.ReadFile(ConfigPath(home))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Model            string   `json:"model"`
		SmallModel       string   `json:"small_model"`
		Autoupdate       *bool    `json:"autoupdate"`
		Share            string   `json:"share"`
		EnabledProviders []string `json:"enabled_providers"`
		Permission       any      `json:"permission"`
		Provider         map[string]struct {
			NPM     string `json:"npm"`
			Options struct {
				BaseURL string `json:"baseURL"`
				APIKey  string `json:"apiKey"`
			} `json:"options"`
			Models map[string]struct {
				ToolCall   bool `json:"tool_call"`
				Reasoning  bool `json:"reasoning"`
				Attachment bool `json:"attachment"`
				Modalities struct {
					Input []string `json:"input"`
				} `json:"modalities"`
			} `json:"models"`
		} `json:"provider"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	p, ok := cfg.Provider[Provider]
	m, ok2 := p.Models[Model]
	if cfg.Model != ModelRef || cfg.SmallModel != ModelRef || cfg.Autoupdate == nil || *cfg.Autoupdate || cfg.Share != "disabled" ||
		!reflect.DeepEqual(cfg.EnabledProviders, []string{"fake"}) || cfg.Permission != nil || len(cfg.Provider) != 1 || !ok || !ok2 ||
		p.NPM != "@ai-sdk/openai-compatible" || p.Options.BaseURL != "http://127.0.0.1:1234/TestHome/v1" || p.Options.APIKey == "" ||
		!m.ToolCall || !m.Reasoning || !m.Attachment || !reflect.DeepEqual(m.Modalities.Input, []string{"text", "image"}) {
		t.Errorf("opencode.json:\n%s", b)
	}

	env := Env("/h", "/h/opencode.json")
	want := []string{
		"HOME=/h", "XDG_CONFIG_HOME=/h/.config", "XDG_DATA_HOME=/h/.local/share", "XDG_CACHE_HOME=/h/.cache",
		"XDG_STATE_HOME=/h/.local/state", "TMPDIR=/h/tmp", "OPENCODE_CONFIG=/h/opencode.json",
		"OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1", "npm_config_registry=http://127.0.0.1:9/", "NPM_CONFIG_REGISTRY=http://127.0.0.1:9/",
		"PATH=" + os.Getenv("PATH"),
	}
	if !reflect.DeepEqual(env, want) {
		t.Errorf("Env = %q", env)
	}
	if env := Env("/h", ""); strings.Contains(strings.Join(env, "\n"), "OPENCODE_CONFIG=") {
		t.Errorf("Env without a config: %q", env)
	}
}

func TestInstalledBin(t *testing.T) {
	p := InstalledBin("/repo")
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		if p != "/repo/.tools/opencode/node_modules/opencode-linux-x64/bin/opencode" {
			t.Errorf("InstalledBin = %s", p)
		}
	case "windows/amd64":
		if p != "" {
			t.Errorf("InstalledBin = %s, want none", p)
		}
	}
}
