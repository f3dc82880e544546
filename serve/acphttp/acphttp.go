package acphttp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// The headers of ACP's Streamable HTTP transport.
const (
	HeaderConnectionID = "Acp-Connection-Id"
	HeaderSessionID    = "Acp-Session-Id"
)

// NewHandler returns the handler of ACP over Streamable HTTP and
// WebSocket (the RFD "streamable-http-websocket-transport"), as
// @agentclientprotocol/sdk 2.4.0's AcpServer and its Node adapter serve
// it, for one endpoint (the server mounts it at /acp):
//
//   - POST initialize, without Acp-Connection-Id: a new connection on
//     connect; 200 with the answer and Acp-Connection-Id.
//   - POST any other message, with Acp-Connection-Id (and Acp-Session-Id
//     for a session's): 202; the answer comes on a stream.
//   - GET with Accept: text/event-stream: the connection's SSE stream, or
//     with Acp-Session-Id that session's.
//   - GET with Upgrade: websocket: a connection over WebSocket instead,
//     one JSON-RPC message per text frame (ws.go).
//   - DELETE with Acp-Connection-Id: ends the connection; 202.
//
// A prompt, cancel or option change for a session the connection has not
// attached (session/new, session/fork, session/load or session/resume
// attach one, until another connection loads or resumes it) is refused
// with 409: the client re-attaches it with session/load or session/resume.
// The other refusals are the SDK's: 405, 415, 413 (past
// Limits.MaxMessage), 400 (invalid JSON, a batch, no object, a header
// missing or not matching the params, an id too long), 404 (an unknown
// connection), 406 and 409 (a second receiver) for a GET. Their bodies
// are text/plain, but for a batch's and a failed initialize's (500), which
// are JSON-RPC errors. A connection whose client does not read its output
// is dropped (Limits).
//
// The connection speaks the ACP version the Connector picks from the
// initialize (the binary's: v2 for a client asking for protocol 2, else
// v1, as the SDK's AgentProtocolRouter picks); the transport is the same
// for both, v2's methods being as session-scoped as v1's.
//
// ?agent=NAME on the initialize POST or the WebSocket GET picks the agent
// of the connection's new sessions. The handler checks no token, Host or
// Origin (a WebSocket's neither): the server in front of it does. Its
// connections live in reg, whose CloseAll ends them; log may be nil.
func NewHandler(reg *core.Registry, connect core.Connector, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &acpHandler{reg: reg, connect: connect, log: log}
}

type acpHandler struct {
	reg     *core.Registry
	connect core.Connector
	log     *slog.Logger
}

func (h *acpHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
			h.serveWebSocket(w, r)
			return
		}
		h.get(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		text(w, http.StatusMethodNotAllowed, "Method Not Allowed")
	}
}

// text answers with a text/plain status, as the SDK's textResponse.
func text(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain")
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func jsonBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

func (h *acpHandler) post(w http.ResponseWriter, r *http.Request) {
	if !isJSON(r.Header.Get("Content-Type")) {
		text(w, http.StatusUnsupportedMediaType, "Unsupported Media Type")
		return
	}
	m, ok := h.readMessage(w, r)
	if !ok {
		return
	}
	id := r.Header.Get(HeaderConnectionID)
	switch {
	case m.IsInitialize() && id == "":
		h.initialize(w, r, m)
	case m.IsInitialize():
		text(w, http.StatusBadRequest, "Initialize not allowed on existing connection")
	case id == "":
		text(w, http.StatusBadRequest, "Missing Acp-Connection-Id")
	default:
		hc := h.lookup(id)
		if hc == nil {
			text(w, http.StatusNotFound, "Unknown Acp-Connection-Id")
			return
		}
		hc.forward(w, r, m)
	}
}

// readMessage reads a POST's body, answering 413, or 400 for what is no
// JSON-RPC message.
func (h *acpHandler) readMessage(w http.ResponseWriter, r *http.Request) (core.Msg, bool) {
	max := h.reg.Limits().MaxMessage
	if r.ContentLength > int64(max) {
		text(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body exceeds %d bytes", max))
		return core.Msg{}, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(max)))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		text(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("Request body exceeds %d bytes", max))
		return core.Msg{}, false
	case err != nil:
		text(w, http.StatusBadRequest, "Invalid JSON")
		return core.Msg{}, false
	}
	m, err := core.Parse(body)
	switch {
	case errors.Is(err, core.ErrBatch):
		jsonBody(w, http.StatusBadRequest, core.ErrorResponse(nil, -32600, "Invalid request: JSON-RPC batches are not supported", nil))
	case errors.Is(err, core.ErrNotObject):
		text(w, http.StatusBadRequest, "Invalid JSON-RPC message")
	case err != nil:
		text(w, http.StatusBadRequest, "Invalid JSON")
	default:
		return m, true
	}
	return core.Msg{}, false
}

func isJSON(contentType string) bool {
	t, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(t), "application/json")
}

// lookup is the HTTP connection id names (nil for a WebSocket's).
func (h *acpHandler) lookup(id string) *httpConn {
	c := h.reg.Get(id)
	if c == nil {
		return nil
	}
	hc, _ := c.Transport().(*httpConn)
	return hc
}

// initialize opens a connection with the client's initialize, answering
// with the agent side's answer and the connection's id.
func (h *acpHandler) initialize(w http.ResponseWriter, r *http.Request, m core.Msg) {
	if string(m.ID) == "null" {
		text(w, http.StatusBadRequest, "Initialize request must include an ID")
		return
	}
	hc := &httpConn{limits: h.reg.Limits(), log: h.log, sessions: map[string]*core.Mailbox{}, pending: map[string]string{}, asked: map[string]string{}}
	c := h.reg.NewConn(core.ConnOptions{Agent: r.URL.Query().Get("agent"), Route: hc.route, Detached: hc.detached, Transport: hc})
	hc.c, hc.main = c, c.NewMailbox()
	if err := c.Start(h.connect); err != nil {
		text(w, http.StatusServiceUnavailable, "Server shutting down")
		return
	}
	res, err := c.Call(r.Context(), m)
	if err != nil {
		c.Close(err)
		if r.Context().Err() != nil {
			text(w, 499, "Request aborted")
			return
		}
		jsonBody(w, http.StatusInternalServerError, core.ErrorResponse(m.ID, -32603, "Initialize failed", err.Error()))
		return
	}
	w.Header().Set(HeaderConnectionID, c.ID())
	jsonBody(w, http.StatusOK, res.Raw)
}

func (h *acpHandler) delete(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(HeaderConnectionID)
	switch {
	case id == "":
		text(w, http.StatusBadRequest, "Missing Acp-Connection-Id")
	case !h.reg.Delete(id):
		text(w, http.StatusNotFound, "Unknown Acp-Connection-Id")
	default:
		w.WriteHeader(http.StatusAccepted)
	}
}

// An httpConn is a Conn's Streamable HTTP side: the connection's stream,
// its sessions' streams, and where answers go. Outbound requests and
// notifications go to the stream of the session their params name, else
// the connection's; a response goes where the request it answers came
// from (session/load's to the connection's stream).
type httpConn struct {
	c      *core.Conn
	limits core.Limits
	log    *slog.Logger
	main   *core.Mailbox // the connection's stream

	mu       sync.Mutex               // protects the fields below; taken before c.mu
	sessions map[string]*core.Mailbox // session streams
	pending  map[string]string        // the client's requests in flight, by id key: their session ("" the connection)
	asked    map[string]string        // the agent side's requests in flight, by id key: their session
}

// route files one of the agent side's messages on its stream.
func (hc *httpConn) route(m core.Msg) {
	key := m.Key()
	if m.Kind == core.Response {
		if len(m.ResultSessionID) > hc.limits.MaxIDLength {
			hc.c.Close(fmt.Errorf("%w: a session id of %d bytes", core.ErrLimit, len(m.ResultSessionID)))
			return
		}
		hc.mu.Lock()
		session := hc.pending[key]
		delete(hc.pending, key)
		hc.mu.Unlock()
		hc.push(session, m)
		return
	}
	if m.Kind == core.Request && key != "" {
		hc.mu.Lock()
		hc.asked[key] = m.SessionID
		hc.mu.Unlock()
	}
	hc.push(m.SessionID, m)
}

// push queues m on the stream of session ("" the connection's).
func (hc *httpConn) push(session string, m core.Msg) {
	if session == "" {
		hc.main.Push(m)
		return
	}
	box, err := hc.sessionStream(session)
	if err != nil {
		hc.log.Warn("closing a connection", "conn", hc.c.ID(), "err", err)
		hc.c.Close(err)
		return
	}
	box.Push(m)
}

// sessionStream is session's stream, made if need be: a new one buffers
// until a receiver comes, and no more than Limits.MaxSessionStreams may.
func (hc *httpConn) sessionStream(session string) (*core.Mailbox, error) {
	if len(session) > hc.limits.MaxIDLength {
		return nil, fmt.Errorf("%w: a session id of %d bytes", core.ErrLimit, len(session))
	}
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if box := hc.sessions[session]; box != nil {
		return box, nil
	}
	if hc.buffering() >= hc.limits.MaxSessionStreams {
		return nil, fmt.Errorf("%w: more than %d session streams without a receiver", core.ErrLimit, hc.limits.MaxSessionStreams)
	}
	box := hc.c.NewMailbox()
	hc.sessions[session] = box
	return box, nil
}

// buffering counts the session streams without a receiver. hc.mu is held.
func (hc *httpConn) buffering() int {
	n := 0
	for _, box := range hc.sessions {
		if !box.HasReceiver() {
			n++
		}
	}
	return n
}

// detached ends the stream of a session another connection took: its
// receiver gets what it holds, then its SSE response ends; without one,
// what it holds is dropped.
func (hc *httpConn) detached(session string) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	box := hc.sessions[session]
	delete(hc.sessions, session)
	switch {
	case box == nil:
	case box.HasReceiver():
		box.Finish()
	default:
		box.Discard()
	}
}

// released forgets session's stream once its receiver has gone, unless
// messages wait on it.
func (hc *httpConn) released(session string, box *core.Mailbox) {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.sessions[session] != box {
		box.Discard() // detached meanwhile
		return
	}
	if box.HasReceiver() {
		return
	}
	if box.Queued() == 0 {
		delete(hc.sessions, session)
		box.Discard()
		return
	}
	if hc.buffering() > hc.limits.MaxSessionStreams {
		hc.c.Close(fmt.Errorf("%w: more than %d session streams without a receiver", core.ErrLimit, hc.limits.MaxSessionStreams))
	}
}

// sessionScoped are the methods whose requests carry Acp-Session-Id (the
// SDK's SESSION_SCOPED_METHODS).
var sessionScoped = map[string]bool{
	"session/cancel": true, "session/close": true, "session/delete": true, "session/fork": true,
	"session/load": true, "session/prompt": true, "session/resume": true,
	"session/set_config_option": true, "session/set_mode": true, "session/set_model": true,
}

// needsAttached are the session-scoped methods that act on a session the
// connection has attached. The others name a stored one (load, resume,
// fork), or may end a session no connection has (close, delete): the
// agent side answers those.
var needsAttached = map[string]bool{
	"session/cancel": true, "session/prompt": true,
	"session/set_config_option": true, "session/set_mode": true, "session/set_model": true,
}

// forward hands a connected client's message to the agent side: 202, or
// the status that refuses it.
func (hc *httpConn) forward(w http.ResponseWriter, r *http.Request, m core.Msg) {
	header := r.Header.Get(HeaderSessionID)
	var status int
	var reason string
	if m.Kind == core.Response {
		status, reason = hc.forwardResponse(m, header)
	} else {
		status, reason = hc.forwardMethod(r.Context(), m, header)
	}
	if status != http.StatusAccepted {
		text(w, status, reason)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// forwardResponse passes on the client's answer to one of the agent
// side's requests, which must name the session the request came on.
func (hc *httpConn) forwardResponse(m core.Msg, header string) (int, string) {
	key := m.Key()
	hc.mu.Lock()
	session, ok := hc.asked[key]
	switch {
	case ok && session != "" && header == "":
		hc.mu.Unlock()
		return http.StatusBadRequest, "Missing Acp-Session-Id"
	case ok && session != "" && header != session:
		hc.mu.Unlock()
		return http.StatusBadRequest, "Mismatched Acp-Session-Id"
	}
	delete(hc.asked, key)
	hc.mu.Unlock()
	return hc.send(m)
}

// forwardMethod passes on a request or notification (or anything else
// object-shaped) on the route its session names.
func (hc *httpConn) forwardMethod(ctx context.Context, m core.Msg, header string) (int, string) {
	session := header
	switch {
	case (sessionScoped[m.Method] || m.SessionID != "") && header == "":
		return http.StatusBadRequest, "Missing Acp-Session-Id"
	case m.SessionID != "" && header != m.SessionID:
		return http.StatusBadRequest, "Mismatched Acp-Session-Id"
	case len(session) > hc.limits.MaxIDLength:
		return http.StatusBadRequest, fmt.Sprintf("Session ID exceeds maxIdLength (%d)", hc.limits.MaxIDLength)
	case session != "" && needsAttached[m.Method] && !hc.c.Attached(session):
		return http.StatusConflict, "Session is not attached to this connection; attach it with session/load or session/resume"
	}
	if m.Kind != core.Notification {
		if id, ok := m.StringID(); ok && len(id) > hc.limits.MaxIDLength {
			return http.StatusBadRequest, fmt.Sprintf("Request ID exceeds maxIdLength (%d)", hc.limits.MaxIDLength)
		}
		if err := hc.c.WaitRoom(ctx); err != nil {
			return failed(ctx, err)
		}
	}
	if key := m.Key(); m.Kind == core.Request && key != "" {
		route := session
		if m.Method == "session/load" {
			route = ""
		}
		hc.mu.Lock()
		hc.pending[key] = route
		hc.mu.Unlock()
	}
	return hc.send(m)
}

func (hc *httpConn) send(m core.Msg) (int, string) {
	if err := hc.c.Send(m); err != nil {
		return failed(context.Background(), err)
	}
	return http.StatusAccepted, ""
}

// failed is the status of a message the connection could not take: the
// client gave up (499), or the connection is gone (404, as the SDK
// answers for a connection that shut down mid-request).
func failed(ctx context.Context, err error) (int, string) {
	if ctx.Err() != nil {
		return 499, "Request aborted"
	}
	return http.StatusNotFound, "Unknown Acp-Connection-Id"
}
