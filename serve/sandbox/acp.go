package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// An sbServer is one of sandbox-agent's ACP servers: a connection of the
// Connector under a client-chosen id, and the log its SSE streams serve.
type sbServer struct {
	id, agent string
	created   time.Time
	c         *core.Conn
	log       *eventLog
	h         *sandboxHandler

	mu       sync.Mutex                 // protects the fields below
	pending  map[string]pendingRequest  // the client's requests in flight, by id key
	config   map[string]json.RawMessage // the sessions' config options, by session id
	detached map[string]bool            // sessions whose updates the stream drops
}

// pendingRequest is a request whose answer names a session's config
// options, or attaches a session again.
type pendingRequest struct{ method, session string }

// post serves POST /v1/acp/{server}: one JSON-RPC message for the server,
// which the first POST makes.
func (h *sandboxHandler) post(w http.ResponseWriter, r *http.Request, id string) {
	if !contentJSON(r.Header.Get("Content-Type")) {
		sandboxProblem(w, http.StatusUnsupportedMediaType, "unsupported_media_type", "Unsupported Media Type", "content-type must be application/json")
		return
	}
	if !accepts(r, "application/json") {
		sandboxProblem(w, http.StatusNotAcceptable, "not_acceptable", "Not Acceptable", "accept must allow application/json")
		return
	}
	m, ok := h.readMessage(w, r)
	if !ok {
		return
	}
	s, ok := h.server(w, r, id)
	if !ok {
		return
	}
	switch {
	case m.Kind == core.Request && strings.HasPrefix(m.Method, extensionPrefix):
		h.extension(w, r, s, m)
	case m.Kind == core.Request:
		h.call(w, r, s, m)
	case m.Kind == core.Notification && strings.HasPrefix(m.Method, extensionPrefix):
		h.extensionNotification(r.Context(), s, m)
		w.WriteHeader(http.StatusAccepted)
	default:
		h.send(w, s, m)
	}
}

// readMessage reads a POST's body: one JSON-RPC 2.0 message, which it
// answers 413 or 400 if it is not.
func (h *sandboxHandler) readMessage(w http.ResponseWriter, r *http.Request) (core.Msg, bool) {
	max := h.reg.Limits().MaxMessage
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(max)))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		sandboxProblem(w, http.StatusRequestEntityTooLarge, "invalid_request", "Payload Too Large", fmt.Sprintf("request body exceeds %d bytes", max))
		return core.Msg{}, false
	case err != nil:
		sandboxProblem(w, http.StatusBadRequest, "invalid_request", "Invalid Request", "reading the request body: "+err.Error())
		return core.Msg{}, false
	}
	m, err := core.Parse(body)
	switch {
	case errors.Is(err, core.ErrInvalidJSON):
		sandboxProblem(w, http.StatusBadRequest, "invalid_request", "Invalid Request", "invalid JSON body: "+jsonError(body))
	case err != nil:
		sandboxProblem(w, http.StatusBadRequest, "invalid_request", "Invalid Request", "request body must be a JSON-RPC object (batches are not supported)")
	case m.Kind == core.Other:
		sandboxProblem(w, http.StatusBadRequest, "invalid_request", "Invalid Request",
			`not a JSON-RPC 2.0 message: want "jsonrpc":"2.0" and a method (a request or notification), or an id and a result or error (a response)`)
	default:
		return m, true
	}
	return core.Msg{}, false
}

// jsonError says what is wrong with text that is not JSON.
func jsonError(body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return err.Error()
	}
	return "not JSON"
}

// server is the server a POST names, made if this is its first POST (which
// must name its agent); it answers the POST when there is none.
func (h *sandboxHandler) server(w http.ResponseWriter, r *http.Request, id string) (*sbServer, bool) {
	q := r.URL.Query()
	agent := q.Get("agent")
	if s := h.lookup(id); s != nil {
		if q.Has("agent") && agent != s.agent {
			sandboxProblem(w, http.StatusConflict, "conflict", "Conflict", fmt.Sprintf("server %q already exists for agent %q; requested %q", id, s.agent, agent))
			return nil, false
		}
		return s, true
	}
	if status, kind, detail := h.checkNew(r.Context(), id, agent); status != 0 {
		sandboxProblem(w, status, kind, http.StatusText(status), detail)
		return nil, false
	}
	return h.create(w, id, agent)
}

// checkNew checks a new server's id and agent: it returns the status,
// problem type and detail that refuse them, or a zero status.
func (h *sandboxHandler) checkNew(ctx context.Context, id, agent string) (int, string, string) {
	switch max := h.reg.Limits().MaxIDLength; {
	case agent == "":
		return http.StatusBadRequest, "invalid_request", "missing required 'agent' query parameter for first POST to /v1/acp/" + id
	case len(id) > max || len(agent) > max:
		return http.StatusBadRequest, "invalid_request", fmt.Sprintf("server id or agent longer than %d bytes", max)
	case h.o.Agents != nil && !h.knownAgent(ctx, agent):
		return http.StatusBadRequest, "unsupported_agent", "unsupported agent: " + agent + " (GET /v1/agents lists this bridge's)"
	}
	return 0, "", ""
}

// create makes and starts server id, unless a concurrent first POST just
// did.
func (h *sandboxHandler) create(w http.ResponseWriter, id, agent string) (*sbServer, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s := h.liveLocked(id); s != nil {
		if s.agent != agent {
			sandboxProblem(w, http.StatusConflict, "conflict", "Conflict", fmt.Sprintf("server %q already exists for agent %q; requested %q", id, s.agent, agent))
			return nil, false
		}
		return s, true
	}
	if len(h.servers) >= h.o.MaxServers {
		sandboxProblem(w, http.StatusServiceUnavailable, "service_unavailable", "Service Unavailable",
			fmt.Sprintf("this bridge serves at most %d ACP servers at once; DELETE /v1/acp/{server} one that is done", h.o.MaxServers))
		return nil, false
	}
	s := &sbServer{id: id, agent: agent, created: time.Now(), h: h, log: newEventLog(h.o.LogEvents, h.o.LogBytes),
		pending: map[string]pendingRequest{}, config: map[string]json.RawMessage{}, detached: map[string]bool{}}
	s.c = h.reg.NewConn(core.ConnOptions{Agent: agent, Route: s.route, Transport: s})
	if err := s.c.Start(h.connect); err != nil {
		sandboxProblem(w, http.StatusServiceUnavailable, "service_unavailable", "Service Unavailable", "the server is shutting down")
		return nil, false
	}
	h.servers[id] = s
	return s, true
}

// call passes a request on and answers with its answer, or 202 if that
// takes longer than Options.Hold while a stream is open to carry
// it. With no stream open it waits on: a client whose stream has gone
// (the SDK's first GET can come before its initialize POST has made the
// server, and it opens another only with its next POST) must get the
// answer in the body.
func (h *sandboxHandler) call(w http.ResponseWriter, r *http.Request, s *sbServer, m core.Msg) {
	s.asking(m)
	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	stop := s.hold(ctx, cancel, h.o.Hold)
	defer stop()
	res, err := s.c.Call(ctx, m)
	switch {
	case err == nil:
		s.answered(res)
		h.answer(w, r, s, res.Raw)
	case r.Context().Err() != nil:
		// The client is gone; the answer goes to the stream when it comes.
	case errors.Is(context.Cause(ctx), errHeld):
		w.WriteHeader(http.StatusAccepted)
	default:
		h.ended(w, s, err)
	}
}

// errHeld ends a request's wait for its answer (call): the answer will go
// on the stream.
var errHeld = errors.New("held past Options.Hold with a stream open")

// hold cancels ctx with errHeld once d has passed and a stream is open,
// checking again every second (at most d) while none is. stop stops it.
func (s *sbServer) hold(ctx context.Context, cancel context.CancelCauseFunc, d time.Duration) (stop func()) {
	var mu sync.Mutex // makes the callback wait until t is set
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(d, func() {
		if s.log.streamsOpen() > 0 {
			cancel(errHeld)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if ctx.Err() == nil {
			t.Reset(min(d, time.Second))
		}
	})
	return func() { t.Stop() }
}

// answer answers a POST with the answer to its request. The answer goes on
// the stream too (as the daemon's does), and the POST waits a little for
// an open stream to have carried it, so that the messages written before
// it reach the client first.
func (h *sandboxHandler) answer(w http.ResponseWriter, r *http.Request, s *sbServer, raw []byte) {
	s.log.waitSent(r.Context(), s.log.append(raw), sentWait)
	writeRaw(w, http.StatusOK, raw)
}

// sentWait bounds how long an answer waits for a stream to send it.
const sentWait = time.Second

// send passes on a notification or a response: 202.
func (h *sandboxHandler) send(w http.ResponseWriter, s *sbServer, m core.Msg) {
	if err := s.c.Send(m); err != nil {
		h.ended(w, s, err)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// ended answers a POST whose server's connection is over.
func (h *sandboxHandler) ended(w http.ResponseWriter, s *sbServer, err error) {
	h.mu.Lock()
	if h.servers[s.id] == s {
		delete(h.servers, s.id)
	}
	h.mu.Unlock()
	sandboxProblem(w, http.StatusBadGateway, "stream_error", "Stream Error", fmt.Sprintf("ACP server %q has ended: %v", s.id, err))
}

// route files one of the agent side's messages no POST awaits on the
// server's log. It runs on the agent side's writing goroutine and never
// waits.
func (s *sbServer) route(m core.Msg) {
	switch {
	case m.Kind == core.Response && isInternal(m):
		return // an internal request's answer, after its POST gave up
	case m.Kind == core.Response:
		s.answered(m)
	case m.Kind == core.Notification && m.Method == "session/update":
		if s.updated(m) {
			return
		}
	}
	s.log.append(m.Raw)
}

// asking notes a request whose answer carries a session's config options
// or attaches a session.
func (s *sbServer) asking(m core.Msg) {
	switch m.Method {
	case "session/new", "session/fork", "session/load", "session/resume", "session/set_config_option":
	default:
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending[m.Key()] = pendingRequest{m.Method, m.SessionID}
}

// answered notes what an answer says of its session: its config options,
// and that it is attached again.
func (s *sbServer) answered(m core.Msg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.pending[m.Key()]
	delete(s.pending, m.Key())
	if !ok || m.IsError {
		return
	}
	session := p.session
	if m.ResultSessionID != "" {
		session = m.ResultSessionID
	}
	if p.method != "session/set_config_option" {
		delete(s.detached, session)
	}
	var res struct {
		ConfigOptions json.RawMessage `json:"configOptions"`
	}
	if json.Unmarshal(resultOf(m.Raw), &res) == nil && len(res.ConfigOptions) > 0 && res.ConfigOptions[0] == '[' {
		s.config[session] = res.ConfigOptions
	}
}

// updated notes a session's config_option_update and reports whether the
// update is to be dropped (the session is detached).
func (s *sbServer) updated(m core.Msg) (drop bool) {
	var configs json.RawMessage
	if strings.Contains(string(m.Raw), `"config_option_update"`) {
		var n struct {
			Params struct {
				Update struct {
					SessionUpdate string          `json:"sessionUpdate"`
					ConfigOptions json.RawMessage `json:"configOptions"`
				} `json:"update"`
			} `json:"params"`
		}
		if json.Unmarshal(m.Raw, &n) == nil && n.Params.Update.SessionUpdate == "config_option_update" {
			configs = n.Params.Update.ConfigOptions
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(configs) > 0 && configs[0] == '[' && m.SessionID != "" {
		s.config[m.SessionID] = configs
	}
	return s.detached[m.SessionID]
}

// resultOf is a response's result member.
func resultOf(raw []byte) json.RawMessage {
	var r struct {
		Result json.RawMessage `json:"result"`
	}
	json.Unmarshal(raw, &r)
	return r.Result
}

// events serves GET /v1/acp/{server}: its SSE stream.
func (h *sandboxHandler) events(w http.ResponseWriter, r *http.Request, id string) {
	s := h.lookup(id)
	if s == nil {
		sandboxProblem(w, http.StatusNotFound, "session_not_found", "Session Not Found",
			"no ACP server "+strconv.Quote(id)+" (its first POST, with ?agent=, makes it)")
		return
	}
	if !accepts(r, "text/event-stream") {
		sandboxProblem(w, http.StatusNotAcceptable, "not_acceptable", "Not Acceptable", "accept must allow text/event-stream")
		return
	}
	after, err := lastEventID(r)
	if err != nil {
		sandboxProblem(w, http.StatusBadRequest, "invalid_request", "Invalid Request", err.Error())
		return
	}
	if !s.log.open(h.o.MaxStreams) {
		sandboxProblem(w, http.StatusTooManyRequests, "too_many_streams", "Too Many Requests",
			fmt.Sprintf("ACP server %q has %d SSE streams open already", id, h.o.MaxStreams))
		return
	}
	defer s.log.close()
	if after > s.log.last() {
		after = 0 // an id of an earlier server of this id: all of this one's
	}
	s.stream(w, r, after)
}

// lastEventID is the request's Last-Event-ID (0 without one).
func lastEventID(r *http.Request) (uint64, error) {
	v := strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if v == "" {
		return 0, nil
	}
	id, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("Last-Event-ID %q: want the id of an event of this stream", v)
	}
	return id, nil
}

// streamKeepAlive is how often an idle stream gets a comment, as the
// ACP SDK's SSE streams do.
const streamKeepAlive = 15 * time.Second

// streamBatch is how many events a stream writes between flushes.
const streamBatch = 64

// stream writes the log's events after id as SSE until the client goes,
// the server's connection is over (and what it wrote was sent), or a
// write waits Limits.MaxStall.
func (s *sbServer) stream(w http.ResponseWriter, r *http.Request, after uint64) {
	rc, ok := startSSE(w)
	if !ok {
		return
	}
	stop := s.c.UnblockWrites(rc)
	defer stop()
	tick := time.NewTicker(streamKeepAlive)
	defer tick.Stop()
	over := false
	for {
		evs, dropped, changed := s.log.after(after, streamBatch)
		if dropped > 0 && !s.write(w, rc, fmt.Appendf(nil, ": %d events dropped: this stream fell behind\n\n", dropped)) {
			return
		}
		if len(evs) > 0 {
			if !s.writeEvents(w, rc, evs) {
				return
			}
			after = evs[len(evs)-1].id
			s.log.markSent(after)
			continue
		}
		if over {
			return
		}
		select {
		case <-changed:
		case <-s.c.Done():
			over = true // send what it wrote last, then end
		case <-tick.C:
			if !s.write(w, rc, []byte(":\n\n")) {
				return
			}
		case <-r.Context().Done():
			return
		}
	}
}

// startSSE answers 200 with an SSE stream's headers, flushed.
func startSSE(w http.ResponseWriter) (*http.ResponseController, bool) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return rc, rc.Flush() == nil
}

// writeEvents writes events as SSE and flushes them, within
// Limits.MaxStall.
func (s *sbServer) writeEvents(w http.ResponseWriter, rc *http.ResponseController, evs []event) bool {
	var b []byte
	for _, e := range evs {
		b = fmt.Appendf(b, "event: message\nid: %d\ndata: ", e.id)
		b = append(b, e.data...)
		b = append(b, "\n\n"...)
	}
	return s.write(w, rc, b)
}

// write writes b and flushes it, within Limits.MaxStall.
func (s *sbServer) write(w http.ResponseWriter, rc *http.ResponseController, b []byte) bool {
	rc.SetWriteDeadline(time.Now().Add(s.h.reg.Limits().MaxStall))
	if _, err := w.Write(b); err != nil {
		return false
	}
	return rc.Flush() == nil
}
