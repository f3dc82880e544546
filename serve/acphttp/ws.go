package acphttp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/coder/websocket"
)

// serveWebSocket serves a connection over WebSocket, as the SDK's
// ws-server.js: the connection (and its Acp-Connection-Id, sent on the
// 101) exists before the client's first frame, which must be initialize.
// Every message goes either way as one text frame.
func (h *acpHandler) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	wc := &wsConn{limits: h.reg.Limits(), log: h.log}
	c := h.reg.NewConn(core.ConnOptions{Agent: r.URL.Query().Get("agent"), Route: wc.route, Transport: wc})
	wc.c, wc.all = c, c.NewMailbox()
	if err := c.Start(h.connect); err != nil {
		text(w, http.StatusServiceUnavailable, "Server shutting down")
		return
	}
	defer c.Close(core.ErrClosed)
	w.Header().Set(HeaderConnectionID, c.ID())
	// The server in front checks Origin, for WebSockets too.
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		h.log.Debug("websocket upgrade refused", "err", err)
		return
	}
	ws.SetReadLimit(int64(wc.limits.MaxMessage))
	wc.ws = ws
	wc.serve()
}

// A wsConn is a Conn's WebSocket side: it reads the client's frames and
// writes the agent side's messages, all of them, in order.
type wsConn struct {
	c      *core.Conn
	ws     *websocket.Conn
	limits core.Limits
	log    *slog.Logger
	all    *core.Mailbox

	pump      sync.WaitGroup // the writer, once initialize is answered
	closeOnce sync.Once
}

func (wc *wsConn) route(m core.Msg) { wc.all.Push(m) }

// serve reads frames until the socket closes, then closes the connection
// and joins its writer.
func (wc *wsConn) serve() {
	ran := make(chan struct{})
	stop := context.AfterFunc(wc.c.Context(), func() {
		defer close(ran)
		wc.closeFor(context.Cause(wc.c.Context()))
	})
	defer func() {
		if !stop() {
			<-ran
		}
		wc.c.Close(core.ErrClosed)
		wc.pump.Wait()
		wc.closeFor(core.ErrClosed)
	}()
	wc.pump.Go(wc.keepAlive)
	ctx := context.Background() // the socket's reads end when it closes
	initialized := false
	for {
		typ, data, err := wc.ws.Read(ctx)
		if err != nil {
			wc.log.Debug("websocket read ended", "conn", wc.c.ID(), "err", err)
			return
		}
		if typ != websocket.MessageText {
			wc.log.Warn("ignoring a binary ACP WebSocket frame", "conn", wc.c.ID())
			continue
		}
		if !wc.frame(data, &initialized) {
			return
		}
	}
}

// keepAlive pings the socket every Limits.PingInterval until the
// connection ends, and closes it when a pong has not come by the next
// ping: a client that has gone, or that stopped halfway through a frame
// (its pong would come after the frame), holds no slot.
func (wc *wsConn) keepAlive() {
	every := wc.limits.PingInterval
	life := wc.c.Context()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-life.Done():
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(life, every)
		err := wc.ws.Ping(ctx)
		cancel()
		if err != nil && life.Err() == nil {
			wc.log.Debug("websocket answered no ping", "conn", wc.c.ID(), "err", err)
			wc.c.Close(fmt.Errorf("%w: no pong within %v", core.ErrStalled, every))
			return
		}
	}
}

// frame handles one of the client's frames; false ends the connection.
func (wc *wsConn) frame(data []byte, initialized *bool) bool {
	m, err := core.Parse(data)
	switch {
	case errors.Is(err, core.ErrBatch):
		return wc.send(core.ErrorResponse(nil, -32600, "Invalid request: JSON-RPC batches are not supported", nil))
	case errors.Is(err, core.ErrNotObject):
		return wc.send(core.ErrorResponse(nil, -32600, "Invalid request", rawJSON(data)))
	case err != nil:
		return wc.send(core.ErrorResponse(nil, -32700, "Parse error", nil))
	}
	if !*initialized {
		ok := wc.initialize(m)
		*initialized = ok
		return ok || m.ResponseShaped() || m.Kind == core.Other
	}
	if m.Kind == core.Request && m.IsInitialize() {
		return wc.send(core.ErrorResponse(m.ID, -32600, "Initialize not allowed on existing connection", nil))
	}
	return wc.forward(m)
}

// initialize answers the first request, which must be initialize; it
// reports whether the connection is initialized. Frames shaped like
// responses before it are ignored, and other objects answered -32600.
func (wc *wsConn) initialize(m core.Msg) bool {
	switch {
	case m.ResponseShaped():
		return false
	case m.Kind != core.Request && m.Kind != core.Notification:
		wc.send(core.ErrorResponse(nil, -32600, "Invalid request", rawJSON(m.Raw)))
		return false
	case !m.IsInitialize():
		wc.closeWith(websocket.StatusProtocolError, "First message must be initialize")
		return false
	case string(m.ID) == "null":
		wc.closeWith(websocket.StatusProtocolError, "Initialize request must include an ID")
		return false
	}
	res, err := wc.c.Call(context.Background(), m)
	if err != nil {
		wc.send(core.ErrorResponse(m.ID, -32603, "Initialize failed", err.Error()))
		wc.closeWith(websocket.StatusInternalError, "Initialize failed")
		return false
	}
	if !wc.send(res.Raw) {
		return false
	}
	l := wc.all.Acquire()
	if l == nil { // closed meanwhile
		return false
	}
	wc.pump.Go(func() { wc.write(l) })
	return true
}

// forward passes a message on, once the connection has room for the
// answer of a request; false when an id is too long, which closes it.
func (wc *wsConn) forward(m core.Msg) bool {
	if len(m.SessionID) > wc.limits.MaxIDLength {
		wc.c.Close(errors.Join(core.ErrLimit, errors.New("session ID exceeds maxIdLength")))
		return false
	}
	if id, ok := m.StringID(); ok && m.Kind == core.Request && len(id) > wc.limits.MaxIDLength {
		wc.c.Close(errors.Join(core.ErrLimit, errors.New("request ID exceeds maxIdLength")))
		return false
	}
	if m.Kind != core.Notification && !m.ResponseShaped() {
		if wc.c.WaitRoom(context.Background()) != nil {
			return false
		}
	}
	return wc.c.Send(m) == nil
}

// write sends what the agent side writes, each message within
// Limits.MaxStall, until the connection ends; then it closes the socket.
func (wc *wsConn) write(l *core.Lease) {
	defer l.Release()
	for {
		m, err := l.Next(context.Background())
		if err != nil {
			wc.closeFor(err)
			return
		}
		if !wc.send(m.Raw) {
			wc.c.Close(core.ErrClosed)
			return
		}
	}
}

// send writes one text frame within Limits.MaxStall; past it the
// connection is closed (ErrStalled).
func (wc *wsConn) send(b []byte) bool {
	ctx, cancel := context.WithTimeout(context.Background(), wc.limits.MaxStall)
	defer cancel()
	err := wc.ws.Write(ctx, websocket.MessageText, b)
	if errors.Is(err, context.DeadlineExceeded) {
		wc.c.Close(fmt.Errorf("%w for %v", core.ErrStalled, wc.limits.MaxStall))
	}
	return err == nil
}

// closeFor closes the socket with the status that says why the
// connection ended.
func (wc *wsConn) closeFor(err error) {
	switch {
	case errors.Is(err, core.ErrShutdown):
		wc.closeWith(websocket.StatusGoingAway, "Server shutting down")
	case errors.Is(err, core.ErrOverflow), errors.Is(err, core.ErrStalled), errors.Is(err, core.ErrLimit):
		wc.closeWith(websocket.StatusPolicyViolation, reason(err))
	default:
		wc.closeWith(websocket.StatusNormalClosure, "")
	}
}

// closeWith closes the socket, once: the first status given is the one
// sent.
func (wc *wsConn) closeWith(code websocket.StatusCode, why string) {
	wc.closeOnce.Do(func() { wc.ws.Close(code, why) })
}

// reason is err's text cut to what a close frame holds (123 bytes).
func reason(err error) string {
	s := err.Error()
	if len(s) > 123 {
		s = s[:123]
	}
	return s
}

// rawJSON lets valid JSON text be a value of errorResponse's data.
type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }
