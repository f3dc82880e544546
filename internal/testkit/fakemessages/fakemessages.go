// Package fakemessages is a scripted fake of the Anthropic Messages API, enough
// to run the real, unmodified Claude Code CLI offline: point
// ANTHROPIC_BASE_URL at Server.URL (see Env) and a Script decides what the
// "model" answers to each request.
//
// The server answers:
//
//	HEAD <anything>                        200, empty (the CLI's preconnect)
//	POST <prefix>/v1/messages              a scripted Reply: SSE when the
//	                                       body has "stream":true (always,
//	                                       from the CLI), else a JSON Message
//	POST <prefix>/v1/messages/count_tokens {"input_tokens":1000}
//	anything else                          404 with an Anthropic error body
//
// <prefix> is whatever path the base URL carried, so one server can serve
// several tests: give each its own ANTHROPIC_BASE_URL=URL+"/test-name" and
// route on Request.Prefix in the Script.
//
// The streaming reply follows the real API's framing: an "event:" line and
// a "data:" line per event, flushed after each event; message_start, then
// content_block_start / content_block_delta… / content_block_stop for each
// block, then message_delta (with stop_reason and usage) and message_stop.
// Text is sent as text_delta pieces, thinking as thinking_delta pieces
// then a signature_delta, and tool_use input as two or three
// input_json_delta pieces. By default pieces are cut between words, and
// tool input between JSON tokens, never inside a string, so that a path
// in a recorded stream is always whole on one line.
package fakemessages

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/chunk"
	"github.com/acpbridge/acpbridge/internal/testkit/fakehttp"
)

// Block is one content block of a scripted reply.
type Block struct {
	Type  string         // "text", "thinking" or "tool_use"
	Text  string         // text or thinking
	ID    string         // tool_use id (generated as toolu_fake_N if empty)
	Name  string         // tool name
	Input map[string]any // tool input
}

// Reply is what the fake answers one /v1/messages request with.
type Reply struct {
	Blocks     []Block
	StopReason string        // "" → "tool_use" if any tool_use block, else "end_turn"
	Status     int           // non-zero: answer this HTTP status with an Anthropic error body
	ErrorType  string        // e.g. "api_error", "authentication_error", "overloaded_error"; "" → chosen from Status
	Delay      time.Duration // pause before each streamed delta (to make streams slow, for cancel tests)

	// ErrorMessage is the error body's message; "" → a default per status.
	ErrorMessage string
	// Chunks, if set, is how many text_delta (or thinking_delta) events
	// each text or thinking block is split into, at most one per
	// character, cut anywhere. Without it a block is cut into up to three
	// pieces just before spaces, so that no word (or path) is cut in two.
	Chunks int
}

// Request is the decoded request the script decides on.
type Request struct {
	Path     string         // request path after the per-test prefix, e.g. "/v1/messages"
	Prefix   string         // the per-test prefix of the base URL ("" for none), e.g. "/TestFoo"
	Model    string         // the request's "model"
	Stream   bool           // the request's "stream"
	Raw      map[string]any // the whole decoded body
	LastText string         // text of the last user message's text blocks (system-reminder blocks excluded), "" if none
	Results  []ToolResult   // tool_result blocks of the last user message
	Images   int            // image blocks in the last user message
}

// ToolResult is one tool_result block of a request's last user message.
// Content is its text (text blocks joined with "\n" when it is an array).
type ToolResult struct {
	ToolUseID, Content string
	IsError            bool
}

// Script chooses the reply to one /v1/messages request. It may be called
// concurrently.
type Script func(Request) Reply

// Server is a running fake; see New.
type Server struct {
	// URL is the base URL to put in ANTHROPIC_BASE_URL, without a
	// trailing slash, e.g. "http://127.0.0.1:41234". A path may be
	// appended to it as a per-test prefix.
	URL string

	host   *fakehttp.Host[Request]
	script Script

	msgN  atomic.Int64 // message ids
	toolN atomic.Int64 // generated tool_use ids
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

// Requests returns every /v1/messages request received so far, in order.
func (s *Server) Requests() []Request { return s.host.Requests() }

// Carries reports whether a request whose last user message contains
// prompt also carries earlier somewhere in its body. Claude sends side
// requests of its own (titles, summaries) that may come last, so a test
// asking what the model saw for a prompt looks for it by its text.
func (s *Server) Carries(prompt, earlier string) bool {
	for _, r := range s.Requests() {
		if !strings.Contains(r.LastText, prompt) {
			continue
		}
		if body, _ := json.Marshal(r.Raw); strings.Contains(string(body), earlier) {
			return true
		}
	}
	return false
}

// Env is the environment for running the real CLI offline against the
// fake at baseURL (Server.URL, plus a per-test prefix if wanted) with home
// as both HOME and the parent of CLAUDE_CONFIG_DIR. Only PATH is taken
// from os.Environ. Besides a dummy API key it turns off the CLI's
// non-essential traffic, telemetry, error reports and auto-updater (else
// it tries to reach api.anthropic.com), its retries (else a 401 or 5xx is
// retried 10 times, with backoff of up to about 35 s each) and its
// non-streaming fallback (else a broken SSE stream is silently retried as
// a plain request), and sets IS_SANDBOX=1, which bypassPermissions needs
// when running as root. Set cmd.Dir to a fresh directory too, and pass
// --setting-sources "" so that no other settings leak in.
func Env(baseURL, home string) []string {
	tmp := filepath.Join(home, "tmp")
	os.MkdirAll(tmp, 0o700) // Claude makes its directory in it, not it
	return []string{
		"HOME=" + home,
		"CLAUDE_CONFIG_DIR=" + home + "/.claude",
		// Claude keeps its scratch files (shell snapshots, task output) in
		// claude-UID under these, else the system's temporary directory,
		// where a test would leave them behind.
		"CLAUDE_CODE_TMPDIR=" + tmp,
		"TMPDIR=" + tmp,
		"ANTHROPIC_BASE_URL=" + baseURL,
		"ANTHROPIC_API_KEY=dummy",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_ERROR_REPORTING=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_MAX_RETRIES=0",
		"CLAUDE_CODE_DISABLE_NONSTREAMING_FALLBACK=1",
		"IS_SANDBOX=1",
		"PATH=" + os.Getenv("PATH"),
	}
}

const (
	messagesPath    = "/v1/messages"
	countTokensPath = "/v1/messages/count_tokens"
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		w.WriteHeader(http.StatusOK)
		return
	}
	var prefix, path string
	if i := strings.Index(r.URL.Path, "/v1/"); i >= 0 {
		prefix, path = r.URL.Path[:i], r.URL.Path[i:]
	} else {
		path = r.URL.Path
	}
	switch {
	case path == countTokensPath && r.Method == http.MethodPost:
		_, _ = io.Copy(io.Discard, r.Body)
		fakehttp.WriteJSON(w, http.StatusOK, map[string]any{"input_tokens": 1000})
	case path == messagesPath && r.Method == http.MethodPost:
		s.messages(w, r, prefix, path)
	case path == messagesPath || path == countTokensPath:
		writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "fakemessages: method "+r.Method+" not allowed")
	default:
		writeError(w, http.StatusNotFound, "not_found_error", "fakemessages: no such path "+r.URL.Path)
	}
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request, prefix, path string) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // the client is gone
	}
	var raw map[string]any
	if err := json.Unmarshal(body, &raw); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "fakemessages: body is not a JSON object: "+err.Error())
		return
	}
	req := decode(raw)
	req.Path, req.Prefix = path, prefix
	s.host.Record(req)

	rep := s.script(req)
	n := s.msgN.Add(1)
	w.Header().Set("request-id", fmt.Sprintf("req_fake_%012d", n))
	if rep.Status != 0 {
		typ, msg := rep.ErrorType, rep.ErrorMessage
		if typ == "" {
			typ = errorType(rep.Status)
		}
		if msg == "" {
			msg = fmt.Sprintf("fakemessages: scripted %d %s", rep.Status, typ)
		}
		writeError(w, rep.Status, typ, msg)
		return
	}
	m := s.message(req, rep, len(body), n)
	if !req.Stream {
		if !s.host.Sleep(r.Context(), rep.Delay) {
			return
		}
		fakehttp.WriteJSON(w, http.StatusOK, m.json())
		return
	}
	s.stream(w, r.Context(), m, rep)
}

// message is a reply made concrete: ids filled in, stop reason chosen.
type message struct {
	id, model, stop string
	blocks          []Block
	inTokens        int
	outTokens       int
	chunks          int
}

func (s *Server) message(req Request, rep Reply, bodyLen int, n int64) *message {
	m := &message{
		id:       fmt.Sprintf("msg_fake_%04d", n),
		model:    req.Model,
		stop:     rep.StopReason,
		inTokens: max(1, bodyLen/4),
		chunks:   rep.Chunks,
	}
	if m.model == "" {
		m.model = "claude-fake"
	}
	hasTool := false
	out := 0
	for _, b := range rep.Blocks {
		if b.Type == "tool_use" {
			hasTool = true
			if b.ID == "" {
				b.ID = fmt.Sprintf("toolu_fake_%d", s.toolN.Add(1))
			}
			if b.Input == nil {
				b.Input = map[string]any{}
			}
			in, _ := json.Marshal(b.Input)
			out += len(in)
		}
		out += len(b.Text)
		m.blocks = append(m.blocks, b)
	}
	m.outTokens = max(1, out/4)
	if m.stop == "" {
		m.stop = "end_turn"
		if hasTool {
			m.stop = "tool_use"
		}
	}
	return m
}

func signature(i int) string {
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "fakeapi-signature-%d", i))
}

// The wire types, with their fields in the real API's order.
type (
	apiMessage struct {
		ID           string   `json:"id"`
		Type         string   `json:"type"`
		Role         string   `json:"role"`
		Model        string   `json:"model"`
		Content      []any    `json:"content"`
		StopReason   *string  `json:"stop_reason"`
		StopSequence *string  `json:"stop_sequence"`
		Usage        apiUsage `json:"usage"`
	}
	apiUsage struct {
		InputTokens              int `json:"input_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
		OutputTokens             int `json:"output_tokens"`
	}
	textBlock struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	thinkingBlock struct {
		Type      string `json:"type"`
		Thinking  string `json:"thinking"`
		Signature string `json:"signature"`
	}
	toolUseBlock struct {
		Type  string         `json:"type"`
		ID    string         `json:"id"`
		Name  string         `json:"name"`
		Input map[string]any `json:"input"`
	}
	// event is one server-sent event's data.
	event struct {
		Type         string      `json:"type"`
		Message      *apiMessage `json:"message,omitempty"`
		Index        *int        `json:"index,omitempty"`
		ContentBlock any         `json:"content_block,omitempty"`
		Delta        any         `json:"delta,omitempty"`
		Usage        any         `json:"usage,omitempty"`
	}
	textDelta struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	thinkingDelta struct {
		Type     string `json:"type"`
		Thinking string `json:"thinking"`
	}
	signatureDelta struct {
		Type      string `json:"type"`
		Signature string `json:"signature"`
	}
	inputJSONDelta struct {
		Type        string `json:"type"`
		PartialJSON string `json:"partial_json"`
	}
	messageDelta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	}
	outputUsage struct {
		OutputTokens int `json:"output_tokens"`
	}
)

// pieces cuts a text or thinking block into its deltas: exactly m.chunks
// pieces (at most one per character) if the Reply set Chunks, else up to
// three cut at spaces (or anywhere, in a text without spaces).
func (m *message) pieces(text string) []string {
	if m.chunks > 0 {
		return chunk.Split(text, m.chunks)
	}
	if !strings.Contains(text, " ") {
		return chunk.Split(text, 3)
	}
	return chunk.Words(text, 3)
}

// blockJSON is a block as it appears complete in a JSON Message.
func blockJSON(i int, b Block) any {
	switch b.Type {
	case "thinking":
		return thinkingBlock{"thinking", b.Text, signature(i)}
	case "tool_use":
		return toolUseBlock{"tool_use", b.ID, b.Name, b.Input}
	default:
		return textBlock{b.Type, b.Text}
	}
}

// json is m as the non-streaming API returns it.
func (m *message) json() apiMessage {
	content := make([]any, len(m.blocks))
	for i, b := range m.blocks {
		content[i] = blockJSON(i, b)
	}
	msg := m.start(m.outTokens)
	msg.Content, msg.StopReason = content, &m.stop
	return msg
}

// start is m as message_start announces it: no content, no stop reason.
func (m *message) start(out int) apiMessage {
	return apiMessage{
		ID: m.id, Type: "message", Role: "assistant", Model: m.model, Content: []any{},
		Usage: apiUsage{InputTokens: m.inTokens, OutputTokens: out},
	}
}

// stream writes m as server-sent events, pausing rep.Delay before each
// delta. It returns early when the client goes away or the server closes.
func (s *Server) stream(w http.ResponseWriter, ctx context.Context, m *message, rep Reply) {
	send := fakehttp.SSE(w)
	ok := true
	ev := func(e event) { ok = ok && send(e.Type, e) }
	delta := func(i int, d any) {
		if ok && !s.host.Sleep(ctx, rep.Delay) {
			ok = false
		}
		ev(event{Type: "content_block_delta", Index: &i, Delta: d})
	}

	start := m.start(1)
	ev(event{Type: "message_start", Message: &start})
	for i, b := range m.blocks {
		switch b.Type {
		case "thinking":
			ev(event{Type: "content_block_start", Index: &i, ContentBlock: thinkingBlock{Type: "thinking"}})
			for _, p := range m.pieces(b.Text) {
				delta(i, thinkingDelta{"thinking_delta", p})
			}
			delta(i, signatureDelta{"signature_delta", signature(i)})
		case "tool_use":
			ev(event{Type: "content_block_start", Index: &i,
				ContentBlock: toolUseBlock{"tool_use", b.ID, b.Name, map[string]any{}}})
			in, _ := json.Marshal(b.Input)
			for _, p := range chunk.JSON(string(in), 3) {
				delta(i, inputJSONDelta{"input_json_delta", p})
			}
		default:
			ev(event{Type: "content_block_start", Index: &i, ContentBlock: textBlock{Type: b.Type}})
			for _, p := range m.pieces(b.Text) {
				delta(i, textDelta{"text_delta", p})
			}
		}
		ev(event{Type: "content_block_stop", Index: &i})
	}
	ev(event{Type: "message_delta", Delta: messageDelta{StopReason: m.stop}, Usage: outputUsage{m.outTokens}})
	ev(event{Type: "message_stop"})
}

func errorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	default:
		return "api_error"
	}
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	fakehttp.WriteJSON(w, status, map[string]any{
		"type":  "error",
		"error": map[string]any{"type": typ, "message": msg},
	})
}

// decode fills in the fields of a Request that come from the body.
func decode(raw map[string]any) Request {
	req := Request{Raw: raw}
	req.Model, _ = raw["model"].(string)
	req.Stream, _ = raw["stream"].(bool)
	msgs, _ := raw["messages"].([]any)
	last := lastMessage(msgs, "user")
	if last == nil {
		return req
	}
	var texts []string
	switch c := last["content"].(type) {
	case string:
		if !isReminder(c) {
			texts = append(texts, c)
		}
	case []any:
		for _, b := range c {
			b, _ := b.(map[string]any)
			switch b["type"] {
			case "text":
				if t, _ := b["text"].(string); !isReminder(t) {
					texts = append(texts, t)
				}
			case "image":
				req.Images++
			case "tool_result":
				id, _ := b["tool_use_id"].(string)
				isErr, _ := b["is_error"].(bool)
				req.Results = append(req.Results, ToolResult{ToolUseID: id, Content: contentText(b["content"]), IsError: isErr})
			}
		}
	}
	req.LastText = strings.Join(texts, "\n")
	return req
}

// lastMessage is the last message of msgs with that role, or nil.
func lastMessage(msgs []any, role string) map[string]any {
	for i := len(msgs) - 1; i >= 0; i-- {
		if m, _ := msgs[i].(map[string]any); m != nil && m["role"] == role {
			return m
		}
	}
	return nil
}

func isReminder(text string) bool {
	return strings.HasPrefix(strings.TrimSpace(text), "<system-reminder>")
}

// contentText is the text of a tool_result's content: a string, or an
// array of blocks whose text blocks are joined with "\n".
func contentText(c any) string {
	switch c := c.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, b := range c {
			if b, _ := b.(map[string]any); b["type"] == "text" {
				t, _ := b["text"].(string)
				parts = append(parts, t)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
