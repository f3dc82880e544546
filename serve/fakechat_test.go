package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeChat is a TEST DOUBLE of the chat endpoints the page calls: POST
// /api/chat (the AI SDK's UI message stream), GET /api/chat/{id}/stream
// (always 204), GET /v1/agents, GET /v1/sessions and GET
// /v1/sessions/{id}/messages. It plays the mock
// agent's words ("think", "edit", "plan", "slow", "fail") in the chunks the real
// endpoint sends for them, and writes its SSE awkwardly on purpose (CRLF
// and CR line ends, comments, events split across writes, "[DONE]"), so
// that a browser test checks the page's stream parsing beyond what the
// real server happens to send.
type fakeChat struct {
	token string

	mu        sync.Mutex
	sessions  map[string]*fakeSession // by session id
	chats     map[string]string       // chat id → session id, as the real edge maps them
	order     []string                // session ids, oldest first
	bodies    []chatBody
	urls      []string // every request's URL, to check no token is in one
	unauthAPI []string // API requests that came without the token
	cancelled []string // chat ids whose stream the client aborted
}

type fakeSession struct {
	id       string
	agent    string
	messages []json.RawMessage
	asked    string // the prompt of the turn waiting on an approval
	updated  time.Time
}

// chatBody is what DefaultChatTransport POSTs.
type chatBody struct {
	ID        string            `json:"id"`
	Messages  []json.RawMessage `json:"messages"`
	Trigger   string            `json:"trigger"`
	MessageID string            `json:"messageId,omitempty"`
	Agent     string            `json:"agent,omitempty"`
	OptionIDs map[string]string `json:"optionIds,omitempty"` // the bridge's: the ACP option an approval chose
}

func newFakeChat(token string) *fakeChat {
	return &fakeChat{token: token, sessions: map[string]*fakeSession{}, chats: map[string]string{}}
}

// handler is the fake's endpoints, for a Server to mount at /api/ and
// /v1/ (its guard checks the token); it notes every request's URL, and
// those that came without the token.
func (f *fakeChat) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/chat", f.chat)
	mux.HandleFunc("GET /api/chat/{id}/stream", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("GET /v1/agents", f.agents)
	mux.HandleFunc("GET /v1/sessions", f.list)
	mux.HandleFunc("GET /v1/sessions/{id}/messages", f.messages)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.urls = append(f.urls, r.URL.String())
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			f.unauthAPI = append(f.unauthAPI, r.Method+" "+r.URL.Path)
		}
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
}

func (f *fakeChat) agents(w http.ResponseWriter, r *http.Request) {
	fakeJSON(w, map[string]any{"agents": []map[string]any{
		{"id": "mock", "title": "Mock agent (offline)", "installed": true, "credentialsAvailable": true},
		{"id": "claude", "title": "Claude Code", "installed": false, "problem": "claude: not found"},
	}})
}

func (f *fakeChat) list(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []map[string]any
	for i := len(f.order) - 1; i >= 0; i-- {
		id := f.order[i]
		s := f.sessions[id]
		out = append(out, map[string]any{"sessionId": id, "cwd": "/tmp/work", "title": "fake " + id,
			"updatedAt": s.updated.UTC().Format(time.RFC3339Nano), "_meta": map[string]any{"acpbridge": map[string]any{"agent": s.agent}}})
	}
	fakeJSON(w, map[string]any{"sessions": out})
}

func (f *fakeChat) messages(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	s := f.sessions[r.PathValue("id")]
	var msgs []json.RawMessage
	if s != nil {
		msgs = s.messages
	}
	f.mu.Unlock()
	if s == nil {
		http.Error(w, "no such session", http.StatusNotFound)
		return
	}
	fakeJSON(w, msgs)
}

func fakeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// chat answers one POST /api/chat: a new prompt, or the answer to the
// approval the turn waits on.
func (f *fakeChat) chat(w http.ResponseWriter, r *http.Request) {
	var b chatBody
	if err := json.NewDecoder(r.Body).Decode(&b); err != nil || b.ID == "" || len(b.Messages) == 0 {
		http.Error(w, fmt.Sprintf("not a chat request: %v", err), http.StatusBadRequest)
		return
	}
	s := f.session(b)
	st := newFakeSSE(r.Context(), w)
	last := lastPosted(b.Messages)
	var msg *fakeMessage
	switch {
	case last.Role == "user":
		msg = f.prompt(st, s, last.text())
	case last.Role == "assistant" && last.approved() != nil:
		msg = f.approved(st, s, last, *last.approved())
	default:
		st.chunk(map[string]any{"type": "error", "errorText": "the last message is neither a prompt nor an approval"})
	}
	if r.Context().Err() != nil {
		f.mu.Lock()
		f.cancelled = append(f.cancelled, b.ID)
		f.mu.Unlock()
	}
	f.save(s, b, last, msg)
}

// session is the session of a chat: the one its id names (a session
// reopened from the list), the one it was mapped to, or a new one.
func (f *fakeChat) session(b chatBody) *fakeSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.bodies = append(f.bodies, b)
	if s := f.sessions[b.ID]; s != nil {
		return s
	}
	if s := f.sessions[f.chats[b.ID]]; s != nil {
		return s
	}
	s := &fakeSession{id: fmt.Sprintf("sess-%d", len(f.order)+1), agent: b.Agent}
	f.sessions[s.id] = s
	f.chats[b.ID] = s.id
	f.order = append(f.order, s.id)
	return s
}

// save keeps the transcript: the messages posted, with the assistant
// message of this response.
func (f *fakeChat) save(s *fakeSession, b chatBody, last postedMessage, msg *fakeMessage) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s.messages = b.Messages
	s.updated = time.Now()
	if msg == nil {
		return
	}
	raw, _ := json.Marshal(msg)
	if last.Role == "assistant" {
		s.messages = append(append([]json.RawMessage{}, b.Messages[:len(b.Messages)-1]...), raw)
	} else {
		s.messages = append(append([]json.RawMessage{}, b.Messages...), raw)
	}
}

// prompt streams a turn; one with "edit" stops at the approval.
func (f *fakeChat) prompt(st *fakeSSE, s *fakeSession, text string) *fakeMessage {
	words := strings.ToLower(text)
	m := &fakeMessage{ID: fmt.Sprintf("msg-%d", time.Now().UnixNano()), Role: "assistant"}
	st.delay = 0
	if strings.Contains(words, "slow") {
		st.delay = 60 * time.Millisecond
	}
	st.start(m, s)
	if strings.Contains(words, "think") {
		st.streamed(m, "reasoning", "r1", "The user wants a demonstration. I will answer in small chunks.")
	}
	if strings.Contains(words, "edit") {
		st.askEdit(m)
		s.asked = text
		st.end("tool-calls")
		return m
	}
	if strings.Contains(words, "fail") {
		st.streamed(m, "text", "t1", "You said: "+text)
		st.chunk(map[string]any{"type": "finish-step"})
		st.chunk(map[string]any{"type": "error", "errorText": `mock: simulated agent failure (the prompt said "fail")`})
		st.chunk(map[string]any{"type": "finish", "finishReason": "error"})
		st.write("data: [DONE]\n\n")
		return m
	}
	st.answer(m, text)
	return m
}

const (
	fakeEditPath = "/tmp/work/mock.txt"
	fakeCallID   = "mock_call_1"
	fakeAskID    = "ask_1"
)

// fakeDiff is the mock's edit: "hello" becomes "hello, world".
func fakeDiff() map[string]any {
	return map[string]any{"type": "diff", "path": fakeEditPath, "oldText": "hello\n", "newText": "hello, world\n"}
}

// askEdit streams an edit tool call that waits on the user's approval.
func (st *fakeSSE) askEdit(m *fakeMessage) {
	input := map[string]any{"path": fakeEditPath, "content": "hello, world\n"}
	meta := map[string]any{"kind": "edit", "locations": []any{map[string]any{"path": fakeEditPath}}, "content": []any{fakeDiff()}}
	title := "Edit " + fakeEditPath
	st.chunk(map[string]any{"type": "tool-input-start", "toolCallId": fakeCallID, "toolName": "edit", "dynamic": true, "title": title})
	st.chunk(map[string]any{"type": "tool-input-available", "toolCallId": fakeCallID, "toolName": "edit", "dynamic": true,
		"title": title, "input": input, "toolMetadata": meta})
	options := []any{
		map[string]any{"optionId": "allow", "name": "Allow", "kind": "allow_once"},
		map[string]any{"optionId": "always", "name": "Always allow edits", "kind": "allow_always"},
		map[string]any{"optionId": "reject", "name": "Reject", "kind": "reject_once"},
	}
	st.chunk(map[string]any{"type": "tool-approval-request", "approvalId": fakeAskID, "toolCallId": fakeCallID,
		"approvalDescriptor": map[string]any{"title": title, "options": options}})
	m.Parts = append(m.Parts, map[string]any{"type": "dynamic-tool", "toolName": "edit", "toolCallId": fakeCallID, "title": title,
		"state": "approval-requested", "input": input, "toolMetadata": meta, "approval": map[string]any{"id": fakeAskID}})
}

// approved goes on with the turn waiting on the approval, in the message
// that asked.
func (f *fakeChat) approved(st *fakeSSE, s *fakeSession, last postedMessage, yes bool) *fakeMessage {
	m := &fakeMessage{ID: last.ID, Role: "assistant", Parts: last.Parts}
	tool := m.Parts[len(m.Parts)-1]
	st.start(m, s)
	if yes {
		out := map[string]any{"status": "completed", "content": []any{fakeDiff()}, "rawOutput": map[string]any{"applied": true}}
		st.chunk(map[string]any{"type": "tool-output-available", "toolCallId": fakeCallID, "output": out, "dynamic": true})
		tool["state"], tool["output"] = "output-available", out
	} else {
		st.chunk(map[string]any{"type": "tool-output-denied", "toolCallId": fakeCallID})
		tool["state"] = "output-denied"
	}
	st.answer(m, s.asked)
	return m
}

// start begins a response: the message (the one that asked, after an
// approval), the session's id in its metadata, and a step.
func (st *fakeSSE) start(m *fakeMessage, s *fakeSession) {
	st.chunk(map[string]any{"type": "start", "messageId": m.ID, "messageMetadata": map[string]any{"sessionId": s.id}})
	st.chunk(map[string]any{"type": "start-step"})
	m.Metadata = map[string]any{"sessionId": s.id}
	m.Parts = append(m.Parts, map[string]any{"type": "step-start"})
}

// answer streams the mock's echo and the plan, and ends the response.
func (st *fakeSSE) answer(m *fakeMessage, prompt string) {
	st.streamed(m, "text", "t1", "You said: "+prompt)
	plan := map[string]any{"entries": []any{
		map[string]any{"content": "Read the README", "status": "completed", "priority": "medium"},
		map[string]any{"content": "Edit mock.txt", "status": "completed", "priority": "medium"},
		map[string]any{"content": "Answer the user", "status": "in_progress", "priority": "medium"},
	}}
	st.chunk(map[string]any{"type": "data-plan", "id": "plan", "data": plan})
	m.Parts = append(m.Parts, map[string]any{"type": "data-plan", "id": "plan", "data": plan})
	st.end("stop")
}

// fakeSSE writes a UI message stream, each event in a different framing.
type fakeSSE struct {
	ctx   context.Context // the request's: done when the client goes away
	w     http.ResponseWriter
	rc    *http.ResponseController
	n     int
	delay time.Duration // between the deltas of a streamed part
	done  bool          // the client went away
}

func newFakeSSE(ctx context.Context, w http.ResponseWriter) *fakeSSE {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Vercel-Ai-Ui-Message-Stream", "v1")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &fakeSSE{ctx: ctx, w: w, rc: http.NewResponseController(w)}
}

// chunk writes one chunk. Every few it uses CRLF or CR line ends, puts a
// comment first, or splits the event across two flushes.
func (st *fakeSSE) chunk(v any) {
	b, _ := json.Marshal(v)
	st.n++
	switch st.n % 4 {
	case 0:
		st.write("data: " + string(b) + "\r\n\r\n")
	case 1:
		st.write(": keep-alive\n\ndata: " + string(b) + "\n\n")
	case 2:
		half := len(b) / 2
		st.write("data: " + string(b[:half]))
		st.write(string(b[half:]) + "\r")
		st.write("\r")
	default:
		st.write("data:" + string(b) + "\n\n")
	}
}

func (st *fakeSSE) write(s string) {
	if st.done {
		return
	}
	if _, err := st.w.Write([]byte(s)); err != nil {
		st.done = true
		return
	}
	if err := st.rc.Flush(); err != nil {
		st.done = true
	}
}

// streamed streams text as a text or reasoning part, a word per delta.
func (st *fakeSSE) streamed(m *fakeMessage, kind, id, text string) {
	st.chunk(map[string]any{"type": kind + "-start", "id": id})
	for _, w := range strings.SplitAfter(text, " ") {
		if st.delay > 0 {
			select {
			case <-time.After(st.delay):
			case <-st.ctx.Done():
				st.done = true
				return
			}
		}
		st.chunk(map[string]any{"type": kind + "-delta", "id": id, "delta": w})
	}
	st.chunk(map[string]any{"type": kind + "-end", "id": id})
	m.Parts = append(m.Parts, map[string]any{"type": kind, "text": text, "state": "done"})
}

// end closes the response as the SDK's streams end.
func (st *fakeSSE) end(reason string) {
	st.chunk(map[string]any{"type": "finish-step"})
	st.chunk(map[string]any{"type": "finish", "finishReason": reason})
	st.write("data: [DONE]\n\n")
}

// fakeMessage is a UIMessage the fake keeps.
type fakeMessage struct {
	ID       string           `json:"id"`
	Role     string           `json:"role"`
	Metadata map[string]any   `json:"metadata,omitempty"`
	Parts    []map[string]any `json:"parts"`
}

// postedMessage is a posted UIMessage, read loosely.
type postedMessage struct {
	ID    string           `json:"id"`
	Role  string           `json:"role"`
	Parts []map[string]any `json:"parts"`
}

func lastPosted(msgs []json.RawMessage) postedMessage {
	var m postedMessage
	json.Unmarshal(msgs[len(msgs)-1], &m)
	return m
}

func (m postedMessage) text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if p["type"] == "text" {
			s, _ := p["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// approved is the answer a posted assistant message carries for the
// fake's approval, or nil.
func (m postedMessage) approved() *bool {
	for _, p := range m.Parts {
		a, _ := p["approval"].(map[string]any)
		if p["state"] != "approval-responded" || a == nil || a["id"] != fakeAskID {
			continue
		}
		yes, ok := a["approved"].(bool)
		if ok {
			return &yes
		}
	}
	return nil
}

// snapshot returns what the fake saw, for a test's checks.
func (f *fakeChat) snapshot(t *testing.T) (bodies []chatBody, urls, unauth, cancelled []string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]chatBody(nil), f.bodies...), append([]string(nil), f.urls...),
		append([]string(nil), f.unauthAPI...), append([]string(nil), f.cancelled...)
}
