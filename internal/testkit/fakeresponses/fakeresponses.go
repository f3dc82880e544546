// Package fakeresponses is a scripted fake of the OpenAI Responses API,
// enough to run the real, unmodified Codex CLI (`codex app-server`,
// 0.169.0) offline and with no login, which a custom model provider does
// not need: write a CODEX_HOME whose model provider points at Server.URL
// (see WriteHome, Home and Env), and a Script decides what the "model"
// answers to each request.
//
// The server answers:
//
//	POST <anything>/responses  a scripted Reply, as server-sent events
//	anything else              404 with an OpenAI error body
//
// Codex only ever calls POST {base_url}/responses (with a custom provider
// it does not ask GET /models); URL is the base_url, ending in /v1.
//
// The reply follows the real API's framing: an "event:" line and a "data:"
// line per event, flushed after each event; response.created, then for
// each output item response.output_item.added, its own events, and
// response.output_item.done, and last response.completed (with usage), which
// codex needs to see or it treats the stream as broken. A message's text
// comes as response.content_part.added, response.output_text.delta
// pieces, response.output_text.done and response.content_part.done; a
// reasoning item's summary as response.reasoning_summary_part.added,
// response.reasoning_summary_text.delta pieces,
// response.reasoning_summary_text.done and
// response.reasoning_summary_part.done, one part per paragraph; a
// function_call's arguments as response.function_call_arguments.delta
// pieces and response.function_call_arguments.done; a custom_tool_call's
// input as response.custom_tool_call_input.delta pieces and
// response.custom_tool_call_input.done. Every event carries a
// sequence_number. By default text is cut into up to four pieces just
// before spaces, so that a path is always whole in one delta.
package fakeresponses

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/chunk"
	"github.com/acpbridge/acpbridge/internal/testkit/fakehttp"
)

// Item is one output item of a scripted reply.
type Item struct {
	// Type is "message", "reasoning", "function_call" or "custom_tool_call".
	Type string
	// Text is a message's text, or a reasoning item's summary (each
	// paragraph, separated by a blank line, is one summary part).
	Text string
	// Name is the tool a function_call or custom_tool_call calls.
	Name string
	// Namespace is the namespace of a function_call's tool, when the
	// request offered it inside one ("collaboration" for spawn_agent).
	Namespace string
	// Arguments is a function_call's arguments, a JSON text ("{}" if empty).
	Arguments string
	// Input is a custom_tool_call's freeform input (an apply_patch patch).
	Input string
	// CallID is a tool call's call_id; generated ("call_N") if empty.
	// Codex uses it as the id of the item the call becomes.
	CallID string
}

// Reply is what the fake answers one /responses request with.
type Reply struct {
	Items []Item
	// Status, if non-zero, is answered instead: that HTTP status with an
	// OpenAI error body.
	Status int
	// Delay is the pause before each streamed delta (to make streams
	// slow, for cancel tests). It ends early when the client goes away.
	Delay time.Duration
	// Deltas, if set, is how many delta events each text, summary part,
	// arguments or input is split into, at most one per character, cut
	// anywhere. Without it they are cut into up to four pieces just
	// before spaces (arguments and input into up to three, between JSON
	// tokens or after newlines), never inside a word.
	Deltas int

	// ErrorType, ErrorCode and ErrorMessage make up the error body when
	// Status is set; "" → chosen from Status (ErrorCode → null).
	ErrorType, ErrorCode, ErrorMessage string
}

// Request is the decoded request the script decides on.
type Request struct {
	Path   string         // the request path, e.g. "/v1/responses"
	Header http.Header    // the request headers (originator, session-id, …)
	Raw    map[string]any // the whole decoded body
	Model  string         // the body's "model"
	// LastUserText is the text of the last user message in input, its
	// input_text parts joined with "\n" ("" if none). Codex's own user
	// messages (<environment_context>, <user_instructions>, …) are skipped.
	// For an agent another one spawned, the task it was given (an
	// agent_message of a *_TASK type, its payload) counts as a user
	// message.
	LastUserText string
	// AgentAnswer is the payload of the last FINAL_ANSWER agent_message
	// in input: what a spawned agent answered this one ("" if none).
	AgentAnswer string
	// Outputs are the tool outputs that end the input: the
	// function_call_output and custom_tool_call_output items after the
	// last message (codex sends them once a tool has run), in order.
	Outputs []Output
	// Tools are the names of the tools offered in the body's "tools", in
	// order (a namespace's tools as "namespace.tool").
	Tools []string
}

// Output is one tool output at the end of a request's input.
type Output struct {
	Type   string // "function_call_output" or "custom_tool_call_output"
	CallID string
	Name   string // the name of the call with that call_id in input, "" if none
	Output string // the output text (text parts joined with "\n" for an array)
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

// ToolType is the "type" of the tool name in the request's "tools"
// ("function", "custom", …), or "" when it is not offered.
func (r Request) ToolType(name string) string {
	tools, _ := r.Raw["tools"].([]any)
	for _, t := range tools {
		t, _ := t.(map[string]any)
		if n, _ := t["name"].(string); n == name {
			typ, _ := t["type"].(string)
			return typ
		}
	}
	return ""
}

// Script chooses the reply to one /responses request. It may be called
// concurrently.
type Script func(Request) Reply

// Server is a running fake; see New.
type Server struct {
	// URL is the base_url for codex's model provider, e.g.
	// "http://127.0.0.1:41234/v1": codex POSTs to URL+"/responses".
	URL string

	host   *fakehttp.Host[Request]
	script Script

	idN atomic.Int64 // ids of responses, items and calls
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
	s.URL = s.host.URL() + "/v1"
	return s
}

// Close stops the server: streams still running are cut off, and it
// returns once every handler has returned.
func (s *Server) Close() { s.host.Close() }

// Requests returns every /responses request received so far, in order.
func (s *Server) Requests() []Request { return s.host.Requests() }

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	switch {
	case strings.HasSuffix(r.URL.Path, "/responses") && r.Method == http.MethodPost:
		s.responses(w, r)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		fakehttp.WriteOpenAIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "", "fakeresponses: method "+r.Method+" not allowed")
	default:
		fakehttp.WriteOpenAIError(w, http.StatusNotFound, "invalid_request_error", "unknown_url", "fakeresponses: no such path "+r.URL.Path)
	}
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client is gone
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		fakehttp.WriteOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "", "fakeresponses: body is not a JSON object: "+err.Error())
		return
	}
	req := decode(raw)
	req.Path, req.Header = r.URL.Path, r.Header.Clone()
	s.host.Record(req)

	rep := s.script(req)
	n := s.idN.Add(1)
	w.Header().Set("x-request-id", fmt.Sprintf("req_fake_%012d", n))
	if rep.Status != 0 {
		fakehttp.WriteScriptedError(w, "fakeresponses", rep.Status, rep.ErrorType, rep.ErrorCode, rep.ErrorMessage)
		return
	}
	s.stream(w, r.Context(), s.response(req, rep, len(body), n), rep)
}

// response is a reply made concrete: ids filled in.
type response struct {
	id, model   string
	created     int64
	items       []Item
	ids         []string // the output items' ids
	inTokens    int
	outTokens   int
	reasonToken int
}

func (s *Server) response(req Request, rep Reply, bodyLen int, n int64) *response {
	m := &response{
		id:       fmt.Sprintf("resp_fake_%04d", n),
		model:    req.Model,
		created:  time.Now().Unix(),
		inTokens: max(1, bodyLen/4),
	}
	if m.model == "" {
		m.model = "fake-model"
	}
	out := 0
	for _, it := range rep.Items {
		k := s.idN.Add(1)
		var id string
		switch it.Type {
		case "reasoning":
			id = fmt.Sprintf("rs_%d", k)
			m.reasonToken += len(it.Text) / 4
		case "function_call":
			id = fmt.Sprintf("fc_%d", k)
			if it.Arguments == "" {
				it.Arguments = "{}"
			}
		case "custom_tool_call":
			id = fmt.Sprintf("ctc_%d", k)
		default:
			id = fmt.Sprintf("msg_%d", k)
		}
		if (it.Type == "function_call" || it.Type == "custom_tool_call") && it.CallID == "" {
			it.CallID = fmt.Sprintf("call_%d", s.idN.Add(1))
		}
		out += len(it.Text) + len(it.Arguments) + len(it.Input)
		m.items = append(m.items, it)
		m.ids = append(m.ids, id)
	}
	m.outTokens = max(1, out/4)
	return m
}

// The wire types, with their fields in the real API's order.
type (
	apiResponse struct {
		ID        string    `json:"id"`
		Object    string    `json:"object"`
		CreatedAt int64     `json:"created_at"`
		Status    string    `json:"status"`
		Model     string    `json:"model"`
		Output    []any     `json:"output"`
		Usage     *apiUsage `json:"usage"`
	}
	apiUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
	messageItem struct {
		Type    string     `json:"type"`
		ID      string     `json:"id"`
		Status  string     `json:"status"`
		Role    string     `json:"role"`
		Content []textPart `json:"content"`
	}
	textPart struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		Annotations []any  `json:"annotations"`
	}
	reasoningItem struct {
		Type    string        `json:"type"`
		ID      string        `json:"id"`
		Summary []summaryPart `json:"summary"`
	}
	summaryPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	functionCallItem struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		Status    string `json:"status"`
		Arguments string `json:"arguments"`
		CallID    string `json:"call_id"`
		Name      string `json:"name"`
		Namespace string `json:"namespace,omitempty"`
	}
	customToolCallItem struct {
		Type   string `json:"type"`
		ID     string `json:"id"`
		Status string `json:"status"`
		CallID string `json:"call_id"`
		Input  string `json:"input"`
		Name   string `json:"name"`
	}
	// event is one server-sent event's data; Type is also its event name.
	event struct {
		Type           string       `json:"type"`
		SequenceNumber int          `json:"sequence_number"`
		Response       *apiResponse `json:"response,omitempty"`
		OutputIndex    *int         `json:"output_index,omitempty"`
		ItemID         string       `json:"item_id,omitempty"`
		ContentIndex   *int         `json:"content_index,omitempty"`
		SummaryIndex   *int         `json:"summary_index,omitempty"`
		Item           any          `json:"item,omitempty"`
		Part           any          `json:"part,omitempty"`
		Delta          *string      `json:"delta,omitempty"`
		Text           *string      `json:"text,omitempty"`
		Arguments      *string      `json:"arguments,omitempty"`
		Input          *string      `json:"input,omitempty"`
	}
)

// itemJSON is output item i as response.output_item.done (and
// response.completed) carries it; done=false gives the empty, in-progress
// form of response.output_item.added.
func (m *response) itemJSON(i int, done bool) any {
	it, id := m.items[i], m.ids[i]
	status := "completed"
	if !done {
		status = "in_progress"
		it.Text, it.Arguments, it.Input = "", "", ""
	}
	switch it.Type {
	case "reasoning":
		sum := []summaryPart{}
		if it.Text != "" {
			for _, p := range paragraphs(it.Text) {
				sum = append(sum, summaryPart{"summary_text", p})
			}
		}
		return reasoningItem{Type: "reasoning", ID: id, Summary: sum}
	case "function_call":
		return functionCallItem{Type: "function_call", ID: id, Status: status, Arguments: it.Arguments, CallID: it.CallID, Name: it.Name, Namespace: it.Namespace}
	case "custom_tool_call":
		return customToolCallItem{Type: "custom_tool_call", ID: id, Status: status, CallID: it.CallID, Input: it.Input, Name: it.Name}
	default:
		content := []textPart{}
		if done {
			content = append(content, textPart{"output_text", it.Text, []any{}})
		}
		return messageItem{Type: "message", ID: id, Status: status, Role: "assistant", Content: content}
	}
}

// apiResponse is m as response.created (done=false) or
// response.completed (done=true) carries it.
func (m *response) json(done bool) *apiResponse {
	r := &apiResponse{ID: m.id, Object: "response", CreatedAt: m.created, Status: "in_progress", Model: m.model, Output: []any{}}
	if done {
		r.Status = "completed"
		for i := range m.items {
			r.Output = append(r.Output, m.itemJSON(i, true))
		}
		u := &apiUsage{InputTokens: m.inTokens, OutputTokens: m.outTokens + m.reasonToken}
		u.OutputTokensDetails.ReasoningTokens = m.reasonToken
		u.TotalTokens = u.InputTokens + u.OutputTokens
		r.Usage = u
	}
	return r
}

// stream writes m as server-sent events, pausing rep.Delay before each
// delta. It returns early when the client goes away or the server closes.
func (s *Server) stream(w http.ResponseWriter, ctx context.Context, m *response, rep Reply) {
	send := fakehttp.SSE(w)
	ok := true
	seq := 0
	ev := func(e event) {
		if ok = ok && ctx.Err() == nil; !ok {
			return
		}
		e.SequenceNumber = seq
		seq++
		ok = send(e.Type, e)
	}
	pause := func() {
		if ok && !s.host.Sleep(ctx, rep.Delay) {
			ok = false
		}
	}
	pieces := func(text string, kind int) []string {
		switch {
		case rep.Deltas > 0:
			return chunk.Split(text, rep.Deltas)
		case kind == 'j':
			return chunk.JSON(text, 3)
		case kind == 'l':
			return chunk.Lines(text, 3)
		}
		return chunk.Words(text, 4)
	}
	zero := 0

	ev(event{Type: "response.created", Response: m.json(false)})
	for i := range m.items {
		if !ok {
			return
		}
		it, id := m.items[i], m.ids[i]
		ev(event{Type: "response.output_item.added", OutputIndex: &i, Item: m.itemJSON(i, false)})
		switch it.Type {
		case "reasoning":
			for k, p := range paragraphs(it.Text) {
				ev(event{Type: "response.reasoning_summary_part.added", ItemID: id, OutputIndex: &i, SummaryIndex: &k,
					Part: summaryPart{"summary_text", ""}})
				for _, d := range pieces(p, 'w') {
					pause()
					ev(event{Type: "response.reasoning_summary_text.delta", ItemID: id, OutputIndex: &i, SummaryIndex: &k, Delta: &d})
				}
				ev(event{Type: "response.reasoning_summary_text.done", ItemID: id, OutputIndex: &i, SummaryIndex: &k, Text: &p})
				ev(event{Type: "response.reasoning_summary_part.done", ItemID: id, OutputIndex: &i, SummaryIndex: &k,
					Part: summaryPart{"summary_text", p}})
			}
		case "function_call":
			for _, d := range pieces(it.Arguments, 'j') {
				pause()
				ev(event{Type: "response.function_call_arguments.delta", ItemID: id, OutputIndex: &i, Delta: &d})
			}
			ev(event{Type: "response.function_call_arguments.done", ItemID: id, OutputIndex: &i, Arguments: &it.Arguments})
		case "custom_tool_call":
			for _, d := range pieces(it.Input, 'l') {
				pause()
				ev(event{Type: "response.custom_tool_call_input.delta", ItemID: id, OutputIndex: &i, Delta: &d})
			}
			ev(event{Type: "response.custom_tool_call_input.done", ItemID: id, OutputIndex: &i, Input: &it.Input})
		default:
			ev(event{Type: "response.content_part.added", ItemID: id, OutputIndex: &i, ContentIndex: &zero,
				Part: textPart{"output_text", "", []any{}}})
			for _, d := range pieces(it.Text, 'w') {
				pause()
				ev(event{Type: "response.output_text.delta", ItemID: id, OutputIndex: &i, ContentIndex: &zero, Delta: &d})
			}
			ev(event{Type: "response.output_text.done", ItemID: id, OutputIndex: &i, ContentIndex: &zero, Text: &it.Text})
			ev(event{Type: "response.content_part.done", ItemID: id, OutputIndex: &i, ContentIndex: &zero,
				Part: textPart{"output_text", it.Text, []any{}}})
		}
		ev(event{Type: "response.output_item.done", OutputIndex: &i, Item: m.itemJSON(i, true)})
	}
	ev(event{Type: "response.completed", Response: m.json(true)})
}

// paragraphs cuts a reasoning summary into its parts at blank lines;
// "" is one empty part.
func paragraphs(text string) []string {
	var out []string
	for _, p := range strings.Split(text, "\n\n") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		return []string{""}
	}
	return out
}

// decode fills in the fields of a Request that come from the body.
func decode(raw map[string]any) Request {
	req := Request{Raw: raw}
	req.Model, _ = raw["model"].(string)
	tools, _ := raw["tools"].([]any)
	for _, t := range tools {
		t, _ := t.(map[string]any)
		name, _ := t["name"].(string)
		if name == "" {
			name, _ = t["type"].(string) // e.g. {"type":"web_search"}
		}
		if sub, ok := t["tools"].([]any); ok && t["type"] == "namespace" {
			for _, st := range sub {
				st, _ := st.(map[string]any)
				if n, _ := st["name"].(string); n != "" {
					req.Tools = append(req.Tools, name+"."+n)
				}
			}
			continue
		}
		if name != "" {
			req.Tools = append(req.Tools, name)
		}
	}
	input, _ := raw["input"].([]any)
	calls := map[string]string{} // call_id → name
	for _, it := range input {
		it, _ := it.(map[string]any)
		switch it["type"] {
		case "function_call", "custom_tool_call":
			id, _ := it["call_id"].(string)
			name, _ := it["name"].(string)
			calls[id] = name
		}
	}
	// The outputs after the last message.
	start := len(input)
	for start > 0 {
		it, _ := input[start-1].(map[string]any)
		t, _ := it["type"].(string)
		if t == "message" || (t == "" && it["role"] != nil) {
			break
		}
		start--
	}
	for _, it := range input[start:] {
		it, _ := it.(map[string]any)
		switch t, _ := it["type"].(string); t {
		case "function_call_output", "custom_tool_call_output":
			id, _ := it["call_id"].(string)
			req.Outputs = append(req.Outputs, Output{Type: t, CallID: id, Name: calls[id], Output: outputText(it["output"])})
		}
	}
	for i := len(input) - 1; i >= 0; i-- {
		it, _ := input[i].(map[string]any)
		if it["type"] == "agent_message" {
			kind, payload := agentMessage(it["content"])
			if kind == "FINAL_ANSWER" && req.AgentAnswer == "" {
				req.AgentAnswer = payload
			}
			if strings.HasSuffix(kind, "_TASK") {
				req.LastUserText = payload
				break
			}
			continue
		}
		if it["role"] != "user" || (it["type"] != nil && it["type"] != "message") {
			continue
		}
		if text, ok := userText(it["content"]); ok {
			req.LastUserText = text
			break
		}
	}
	return req
}

// agentMessage is the kind ("NEW_TASK", "FINAL_ANSWER", …) and the
// payload of an agent_message, a message between codex's agents: its
// text reads "Message Type: <kind>\n…Payload:\n<payload>", and the payload
// may go on in encrypted_content parts (as the model's "encrypted"
// arguments came; the fake's are plain text).
func agentMessage(c any) (kind, payload string) {
	parts, _ := c.([]any)
	var b strings.Builder
	for _, p := range parts {
		p, _ := p.(map[string]any)
		switch p["type"] {
		case "input_text", "text":
			t, _ := p["text"].(string)
			b.WriteString(t)
		case "encrypted_content":
			t, _ := p["encrypted_content"].(string)
			b.WriteString(t)
		}
	}
	text := b.String()
	if rest, ok := strings.CutPrefix(text, "Message Type: "); ok {
		kind, _, _ = strings.Cut(rest, "\n")
	}
	if _, after, ok := strings.Cut(text, "Payload:\n"); ok {
		payload = after
	}
	return kind, payload
}

// userText is the text of a user message's content, and false when it is
// one of codex's own context messages.
func userText(c any) (string, bool) {
	var texts []string
	switch c := c.(type) {
	case string:
		texts = append(texts, c)
	case []any:
		for _, p := range c {
			p, _ := p.(map[string]any)
			if p["type"] == "input_text" || p["type"] == "text" {
				t, _ := p["text"].(string)
				texts = append(texts, t)
			}
		}
	}
	text := strings.Join(texts, "\n")
	if isContext(text) {
		return "", false
	}
	return text, true
}

// isContext reports whether a user message's text is one that codex adds
// itself: it starts with a tag such as <environment_context>,
// <user_instructions> or "# AGENTS.md instructions".
func isContext(text string) bool {
	t := strings.TrimSpace(text)
	for _, p := range []string{"<environment_context>", "<user_instructions>", "<turn_aborted>", "<user_shell_command>",
		"# AGENTS.md instructions", "<skill>", "<subagent_notification>"} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

// outputText is a tool output's text: a string, or an array of content
// parts whose text parts are joined with "\n".
func outputText(o any) string {
	switch o := o.(type) {
	case string:
		return o
	case []any:
		var parts []string
		for _, p := range o {
			if p, _ := p.(map[string]any); p != nil {
				if t, ok := p["text"].(string); ok {
					parts = append(parts, t)
				}
			}
		}
		return strings.Join(parts, "\n")
	case map[string]any: // {"content": …} in some versions
		if c, ok := o["content"]; ok {
			return outputText(c)
		}
	}
	return ""
}
