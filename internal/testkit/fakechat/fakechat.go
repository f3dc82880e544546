// Package fakechat is a scripted fake of the OpenAI Chat Completions API,
// enough to run the real, unmodified OpenCode CLI (`opencode serve`,
// 1.18.33) offline: Home writes an isolated HOME whose opencode.json
// points the provider "fake" (the bundled @ai-sdk/openai-compatible,
// model fake/fake-model) at Server.URL, Env is the environment to run
// OpenCode with, and a Script decides what the "model" answers to each
// request.
//
//	srv := fakechat.New(fakechat.Directives())
//	home := fakechat.Home(t, srv.URL)
//	cmd := exec.Command(fakechat.OpencodeBin(t), "serve", "--port", "0", "--hostname", "127.0.0.1")
//	cmd.Env = append(fakechat.Env(home, fakechat.ConfigPath(home)), "OPENCODE_SERVER_PASSWORD="+password)
//
// The server answers:
//
//	POST <prefix>/v1/chat/completions  a scripted Reply: server-sent
//	                                   events when the body says
//	                                   "stream": true, else one JSON
//	                                   chat.completion
//	anything else                      404 with an OpenAI error body
//
// <prefix> is whatever path the base URL carried before /v1, so one
// server can tell apart OpenCode processes configured with different
// prefixes (Home(t, srv.URL+"/TestFoo")); Request.Prefix has it. Within one
// OpenCode process, Request.SessionID (OpenCode's x-session-id header)
// tells its sessions apart.
//
// # What OpenCode sends
//
// Observed with OpenCode 1.18.33:
//
//   - Only POST {baseURL}/chat/completions; never GET /models. baseURL is
//     the provider's options.baseURL, Server.URL+"/v1" here.
//   - Headers: "Authorization: Bearer <apiKey>" ("Bearer dummy"), a
//     User-Agent "opencode/1.18.33 ai-sdk/provider-utils/4.0.23
//     runtime/bun/1.3.14", and x-session-id and x-session-affinity, both
//     the OpenCode session id ("ses_…").
//   - Body: model, messages, tools, tool_choice "auto", stream: true,
//     stream_options {include_usage: true}, max_tokens (the model's
//     output limit). The tools of the default agent (build) are bash,
//     edit, glob, grep, question, read, skill, task, todowrite, webfetch
//     and write. The first message is the system prompt; its <env> block
//     has the session's directory on a line "Working directory:
//     /abs/path" (Request.Cwd).
//   - History is plain chat messages: assistant {content,
//     reasoning_content, tool_calls} and tool {tool_call_id, content}.
//     Tools take absolute paths (read's filePath, …); OpenCode resolves
//     a relative one against the session's directory too.
//   - An image is a user content part {"type": "image_url", "image_url":
//     {"url": "data:image/png;base64,…"}}, as long as the model's
//     modalities.input lists "image" (otherwise OpenCode replaces it by
//     an error text).
//   - The first prompt of an untitled session also causes a title request,
//     sent just before the answer's: no tools, reasoning_effort "low", a
//     system prompt starting "You are a title generator", a user message
//     "Generate a title for this conversation:\n" and then the prompt as
//     a user message of its own. The plain-text answer becomes the
//     session's title (Request.Title).
//   - A 4xx answer is not retried: the turn fails at once with
//     session.error APIError {statusCode, isRetryable: false,
//     responseBody}, and session.idle comes twice. A 5xx answer is
//     retried 5 times with exponential backoff, ≈72 s in all, so tests of
//     failures use 400.
//
// # What the fake streams
//
// The stream is what OpenCode needs and the real API sends: only "data:"
// lines (no "event:" names, unlike the Anthropic and Responses fakes),
// one chat.completion.chunk each, flushed: first a delta {role:
// "assistant", content: ""}; then the Reply's Reasoning as
// delta.reasoning_content pieces (OpenCode makes them a reasoning part);
// its Text as delta.content pieces; each of its Calls as a
// delta.tool_calls entry {index, id, type: "function", function: {name,
// arguments: ""}} followed by argument pieces; then a delta {} with
// finish_reason "tool_calls" or "stop"; a usage chunk with no choices;
// and "data: [DONE]". By default text is cut into up to four pieces just
// before spaces, and arguments into up to three between JSON tokens, so
// that a path is never cut.
//
// # Running OpenCode against it
//
// Observed with OpenCode 1.18.33 on a 2-CPU Linux machine:
//
//   - `opencode serve --port 0 --hostname 127.0.0.1` takes port 4096 when
//     it is free (a random one otherwise), so the URL is parsed from the
//     stdout line "opencode server listening on http://…". The line came
//     2.3–2.8 s after the spawn, and GET /global/health answered
//     {"healthy":true,"version":"1.18.33"} within 0.1 s of it.
//   - With OPENCODE_SERVER_PASSWORD set, every call needs HTTP basic
//     authentication as user "opencode" (OPENCODE_SERVER_USERNAME
//     changes it; Env does not pass it through) with that password;
//     anything else, including no Authorization header, gets 401 with
//     WWW-Authenticate: Basic realm="Secure Area".
//   - The first prompt in a directory took 3.1–3.9 s to session.idle (it
//     bootstraps the directory's instance); a later one with a bash call,
//     its permission asked and allowed, 0.8–1.4 s; a plain one 0.2–0.6 s.
//   - SIGTERM to the process group ended it in under 0.2 s.
//   - Any run of the binary, even --version, creates opencode directories
//     under the XDG base directories and TMPDIR, which is why Env sets
//     them all.
package fakechat

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/chunk"
	"github.com/acpbridge/acpbridge/internal/testkit/fakehttp"
)

// Call is one tool call of a scripted reply.
type Call struct {
	// ID is the tool call's id; generated ("call_N") if empty. OpenCode
	// keeps it as the tool part's callID.
	ID string
	// Name is the tool, e.g. "bash", "write", "todowrite".
	Name string
	// Arguments is the call's arguments, a JSON text ("{}" if empty).
	Arguments string
}

// Reply is what the fake answers one chat completions request with.
type Reply struct {
	// Reasoning, if set, is streamed first as reasoning_content.
	Reasoning string
	// Text is the answer's content.
	Text string
	// Calls are the tool calls, streamed after Text; with any, the
	// finish_reason is "tool_calls".
	Calls []Call

	// Status, if non-zero, is answered instead: that HTTP status with an
	// OpenAI error body.
	Status int
	// ErrorType and ErrorMessage make up the error body when Status is
	// set; "" → chosen from Status.
	ErrorType, ErrorMessage string

	// Delay is the pause before each streamed delta (to make streams
	// slow, for cancel tests). It ends early when the client goes away.
	Delay time.Duration
	// Deltas, if set, is how many deltas the reasoning, text and each
	// call's arguments are split into, at most one per character, cut
	// anywhere. Without it they are cut into up to four pieces just
	// before spaces (arguments into up to three, between JSON tokens).
	Deltas int
}

// Request is the decoded request the script decides on.
type Request struct {
	Path   string         // request path after the prefix, e.g. "/v1/chat/completions"
	Prefix string         // the per-test prefix of the base URL ("" for none), e.g. "/TestFoo"
	Header http.Header    // the request headers
	Raw    map[string]any // the whole decoded body
	Model  string         // the body's "model"
	Stream bool           // the body's "stream"
	// SessionID is the x-session-id header: the OpenCode session ("ses_…")
	// the request is for, "" without one.
	SessionID string
	// Messages are the body's messages, decoded.
	Messages []Message
	// Tools are the names of the functions offered in the body's
	// "tools", in order.
	Tools []string
	// Title reports a request that offers no tools: OpenCode's title
	// generation (see the package doc).
	Title bool
	// System is the text of the system messages, joined with "\n".
	System string
	// Cwd is the working directory the system prompt names on its line
	// "Working directory: <dir>", "" if none.
	Cwd string
	// LastUserText is the text of the last user message, its text parts
	// joined with "\n" ("" if none).
	LastUserText string
	// Images is the number of image_url parts in the last user message.
	Images int
	// Results are the tool messages after the last assistant message:
	// the outputs of the calls it made, in order. Empty unless the
	// request ends a tool round.
	Results []Result
}

// Message is one chat message of a request.
type Message struct {
	Role       string // "system", "user", "assistant" or "tool"
	Text       string // the content's text (text parts joined with "\n")
	Reasoning  string // an assistant message's reasoning_content
	Images     int    // the content's image_url parts
	ToolCalls  []Call // an assistant message's tool_calls
	ToolCallID string // a tool message's tool_call_id
}

// Result is the output of one tool call, from a tool message.
type Result struct {
	CallID  string // the tool_call_id
	Name    string // the name of the call with that id in the messages, "" if none
	Content string // the output
}

// HasTool reports whether the request offered the tool name.
func (r Request) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t == name {
			return true
		}
	}
	return false
}

// Script chooses the reply to one chat completions request. It may be
// called concurrently.
type Script func(Request) Reply

// Server is a running fake; see New.
type Server struct {
	// URL is the fake's base URL, without a trailing slash, e.g.
	// "http://127.0.0.1:41234"; the provider's baseURL is URL+"/v1"
	// (Config adds the /v1). A path may be appended to it as a
	// per-test prefix.
	URL string

	host   *fakehttp.Host[Request]
	script Script

	idN atomic.Int64 // ids of completions and generated calls
}

// New starts a fake on 127.0.0.1 that answers with script (Directives()
// when nil). Close it when done.
func New(script Script) *Server {
	if script == nil {
		script = Directives()
	}
	s := &Server{script: script}
	s.host = fakehttp.New[Request](s.serve)
	s.host.Start()
	s.URL = s.host.URL()
	return s
}

// Close stops the server: streams still running are cut off, and it
// returns once every handler has returned.
func (s *Server) Close() { s.host.Close() }

// Requests returns every chat completions request received so far, in
// order.
func (s *Server) Requests() []Request { return s.host.Requests() }

// WaitIdle waits until no request is being answered; it reports how many
// still are after within.
func (s *Server) WaitIdle(within time.Duration) error { return s.host.WaitIdle(within) }

const completionsPath = "/v1/chat/completions"

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	prefix, path := "", r.URL.Path
	if i := strings.Index(path, "/v1/"); i >= 0 {
		prefix, path = path[:i], path[i:]
	}
	switch {
	case path == completionsPath && r.Method == http.MethodPost:
		s.completions(w, r, prefix, path)
	case path == completionsPath:
		fakehttp.WriteOpenAIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "fakechat: method "+r.Method+" not allowed")
	default:
		fakehttp.WriteOpenAIError(w, http.StatusNotFound, "invalid_request_error", "", "fakechat: no such path "+r.URL.Path)
	}
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request, prefix, path string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client is gone
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		fakehttp.WriteOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "fakechat: body is not a JSON object: "+err.Error())
		return
	}
	req := decode(raw)
	req.Path, req.Prefix, req.Header = path, prefix, r.Header.Clone()
	req.SessionID = r.Header.Get("x-session-id")
	s.host.Record(req)

	rep := s.script(req)
	n := s.idN.Add(1)
	w.Header().Set("x-request-id", fmt.Sprintf("req_fake_%012d", n))
	if rep.Status != 0 {
		fakehttp.WriteScriptedError(w, "fakechat", rep.Status, rep.ErrorType, "", rep.ErrorMessage)
		return
	}
	c := s.completion(req, rep, len(body), n)
	if !req.Stream {
		fakehttp.WriteJSON(w, http.StatusOK, c.whole())
		return
	}
	s.stream(w, r.Context(), c, rep)
}

// completion is a reply made concrete: ids and usage filled in.
type completion struct {
	id, model string
	created   int64
	rep       Reply
	usage     usage
}

func (s *Server) completion(req Request, rep Reply, bodyLen int, n int64) *completion {
	c := &completion{id: fmt.Sprintf("chatcmpl-fake-%04d", n), model: req.Model, created: time.Now().Unix()}
	if c.model == "" {
		c.model = Model
	}
	out := len(rep.Text)
	calls := make([]Call, len(rep.Calls))
	for i, call := range rep.Calls {
		if call.ID == "" {
			call.ID = fmt.Sprintf("call_%d", s.idN.Add(1))
		}
		if call.Arguments == "" {
			call.Arguments = "{}"
		}
		out += len(call.Name) + len(call.Arguments)
		calls[i] = call
	}
	rep.Calls = calls
	c.rep = rep
	reasoning := len(rep.Reasoning) / 4
	c.usage = usage{PromptTokens: max(1, bodyLen/4), CompletionTokens: max(1, out/4) + reasoning}
	c.usage.TotalTokens = c.usage.PromptTokens + c.usage.CompletionTokens
	c.usage.CompletionTokensDetails.ReasoningTokens = reasoning
	return c
}

// The wire types, with their fields in the real API's order.
type (
	chunkJSON struct {
		ID      string        `json:"id"`
		Object  string        `json:"object"`
		Created int64         `json:"created"`
		Model   string        `json:"model"`
		Choices []chunkChoice `json:"choices"`
		Usage   *usage        `json:"usage,omitempty"`
	}
	chunkChoice struct {
		Index        int     `json:"index"`
		Delta        delta   `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	}
	delta struct {
		Role             string     `json:"role,omitempty"`
		Content          *string    `json:"content,omitempty"`
		ReasoningContent *string    `json:"reasoning_content,omitempty"`
		ToolCalls        []callJSON `json:"tool_calls,omitempty"`
	}
	callJSON struct {
		Index    *int         `json:"index,omitempty"`
		ID       string       `json:"id,omitempty"`
		Type     string       `json:"type,omitempty"`
		Function functionJSON `json:"function"`
	}
	functionJSON struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	}
	usage struct {
		PromptTokens            int `json:"prompt_tokens"`
		CompletionTokens        int `json:"completion_tokens"`
		TotalTokens             int `json:"total_tokens"`
		CompletionTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	}
	completionJSON struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []choiceJSON `json:"choices"`
		Usage   usage        `json:"usage"`
	}
	choiceJSON struct {
		Index        int         `json:"index"`
		Message      messageJSON `json:"message"`
		FinishReason string      `json:"finish_reason"`
	}
	messageJSON struct {
		Role             string     `json:"role"`
		Content          *string    `json:"content"`
		ReasoningContent string     `json:"reasoning_content,omitempty"`
		ToolCalls        []callJSON `json:"tool_calls,omitempty"`
	}
)

func (c *completion) finishReason() string {
	if len(c.rep.Calls) > 0 {
		return "tool_calls"
	}
	return "stop"
}

// whole is c as one chat.completion, for a request without "stream".
func (c *completion) whole() completionJSON {
	m := messageJSON{Role: "assistant", ReasoningContent: c.rep.Reasoning}
	if c.rep.Text != "" || len(c.rep.Calls) == 0 {
		m.Content = &c.rep.Text
	}
	for _, call := range c.rep.Calls {
		m.ToolCalls = append(m.ToolCalls, callJSON{ID: call.ID, Type: "function",
			Function: functionJSON{Name: call.Name, Arguments: call.Arguments}})
	}
	return completionJSON{ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: []choiceJSON{{Message: m, FinishReason: c.finishReason()}}, Usage: c.usage}
}

// stream writes c as server-sent events, pausing rep.Delay before each
// delta. It returns early when the client goes away or the server closes.
func (s *Server) stream(w http.ResponseWriter, ctx context.Context, c *completion, rep Reply) {
	send := dataWriter(w)
	ok := true
	emit := func(ch chunkJSON) {
		if ok = ok && ctx.Err() == nil; !ok {
			return
		}
		ch.ID, ch.Object, ch.Created, ch.Model = c.id, "chat.completion.chunk", c.created, c.model
		if ch.Choices == nil {
			ch.Choices = []chunkChoice{}
		}
		ok = send(ch)
	}
	emitDelta := func(d delta) { emit(chunkJSON{Choices: []chunkChoice{{Delta: d}}}) }
	pause := func() {
		if ok && !s.host.Sleep(ctx, rep.Delay) {
			ok = false
		}
	}
	pieces := func(text string, json bool) []string {
		switch {
		case rep.Deltas > 0:
			return chunk.Split(text, rep.Deltas)
		case json:
			return chunk.JSON(text, 3)
		}
		return chunk.Words(text, 4)
	}

	empty := ""
	emitDelta(delta{Role: "assistant", Content: &empty})
	if c.rep.Reasoning != "" {
		for _, p := range pieces(c.rep.Reasoning, false) {
			pause()
			emitDelta(delta{ReasoningContent: &p})
		}
	}
	if c.rep.Text != "" {
		for _, p := range pieces(c.rep.Text, false) {
			pause()
			emitDelta(delta{Content: &p})
		}
	}
	for i, call := range c.rep.Calls {
		pause()
		emitDelta(delta{ToolCalls: []callJSON{{Index: &i, ID: call.ID, Type: "function", Function: functionJSON{Name: call.Name}}}})
		for _, p := range pieces(call.Arguments, true) {
			pause()
			emitDelta(delta{ToolCalls: []callJSON{{Index: &i, Function: functionJSON{Arguments: p}}}})
		}
	}
	finish := c.finishReason()
	emit(chunkJSON{Choices: []chunkChoice{{Delta: delta{}, FinishReason: &finish}}})
	emit(chunkJSON{Usage: &c.usage})
	if ok && ctx.Err() == nil {
		send(nil)
	}
}

// dataWriter starts a text/event-stream reply and returns the writer of
// its frames, which Chat Completions streams do not name: the chunk as
// JSON, or "[DONE]" for nil.
func dataWriter(w http.ResponseWriter) func(v any) bool {
	sse := fakehttp.SSE(w)
	return func(v any) bool {
		if v == nil {
			return sse("", fakehttp.Raw("[DONE]"))
		}
		return sse("", v)
	}
}

// cwdRE finds the working directory in OpenCode's system prompt.
var cwdRE = regexp.MustCompile(`(?m)^\s*Working directory:\s*(\S.*?)\s*$`)

// decode fills in the fields of a Request that come from the body.
func decode(raw map[string]any) Request {
	req := Request{Raw: raw}
	req.Model, _ = raw["model"].(string)
	req.Stream, _ = raw["stream"].(bool)
	tools, _ := raw["tools"].([]any)
	for _, t := range tools {
		t, _ := t.(map[string]any)
		f, _ := t["function"].(map[string]any)
		if name, _ := f["name"].(string); name != "" {
			req.Tools = append(req.Tools, name)
		}
	}
	req.Title = len(req.Tools) == 0
	msgs, _ := raw["messages"].([]any)
	var system []string
	for _, m := range msgs {
		m, _ := m.(map[string]any)
		msg := decodeMessage(m)
		req.Messages = append(req.Messages, msg)
		if msg.Role == "system" {
			system = append(system, msg.Text)
		}
	}
	req.System = strings.Join(system, "\n")
	if m := cwdRE.FindStringSubmatch(req.System); m != nil {
		req.Cwd = m[1]
	}
	names := map[string]string{} // tool call id → name
	for _, m := range req.Messages {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Name
		}
	}
	for i := len(req.Messages) - 1; i >= 0 && req.Messages[i].Role == "tool"; i-- {
		m := req.Messages[i]
		req.Results = append([]Result{{CallID: m.ToolCallID, Name: names[m.ToolCallID], Content: m.Text}}, req.Results...)
	}
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == "user" {
			req.LastUserText, req.Images = m.Text, m.Images
			break
		}
	}
	return req
}

// decodeMessage decodes one element of a request's messages.
func decodeMessage(m map[string]any) Message {
	msg := Message{}
	msg.Role, _ = m["role"].(string)
	msg.Reasoning, _ = m["reasoning_content"].(string)
	msg.ToolCallID, _ = m["tool_call_id"].(string)
	switch c := m["content"].(type) {
	case string:
		msg.Text = c
	case []any:
		var texts []string
		for _, p := range c {
			p, _ := p.(map[string]any)
			switch p["type"] {
			case "text":
				t, _ := p["text"].(string)
				texts = append(texts, t)
			case "image_url":
				msg.Images++
			}
		}
		msg.Text = strings.Join(texts, "\n")
	}
	calls, _ := m["tool_calls"].([]any)
	for _, c := range calls {
		c, _ := c.(map[string]any)
		f, _ := c["function"].(map[string]any)
		call := Call{}
		call.ID, _ = c["id"].(string)
		call.Name, _ = f["name"].(string)
		call.Arguments, _ = f["arguments"].(string)
		msg.ToolCalls = append(msg.ToolCalls, call)
	}
	return msg
}
