package acphttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
	"github.com/coder/websocket"
)

// dial opens a WebSocket connection to s's /acp.
func (s *acpServer) dial(t *testing.T) (*websocket.Conn, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	ws, resp, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.URL, "http")+"/acp", nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(16 << 20)
	t.Cleanup(func() { ws.CloseNow() })
	id := resp.Header.Get(HeaderConnectionID)
	if resp.StatusCode != http.StatusSwitchingProtocols || id == "" {
		t.Fatalf("upgrade: %d, %s %q", resp.StatusCode, HeaderConnectionID, id)
	}
	return ws, id
}

func wsSend(t *testing.T, ws *websocket.Conn, s string) {
	t.Helper()
	if err := ws.Write(t.Context(), websocket.MessageText, []byte(s)); err != nil {
		t.Fatal(err)
	}
}

func wsRead(t *testing.T, ws *websocket.Conn) core.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	typ, b, err := ws.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		t.Errorf("a %v frame", typ)
	}
	return servetest.Msg(t, string(b))
}

// wsClosed reads until the server closes the socket, and returns its
// status.
func wsClosed(t *testing.T, ws *websocket.Conn) (websocket.StatusCode, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	for {
		_, _, err := ws.Read(ctx)
		if err == nil {
			continue
		}
		var ce websocket.CloseError
		if !errors.As(err, &ce) {
			t.Fatalf("read ended with %v, not a close", err)
		}
		return ce.Code, ce.Reason
	}
}

func TestWebSocket_session(t *testing.T) {
	s := newACPServer(t, core.Limits{}, nil)
	ws, id := s.dial(t)
	if s.reg.Get(id) == nil {
		t.Fatal("the connection is not registered")
	}
	if r := s.post(t, id, `{"jsonrpc":"2.0","method":"x/y"}`); r.status != http.StatusNotFound {
		t.Errorf("POST to a WebSocket's connection: %d", r.status)
	}
	wsSend(t, ws, `{"jsonrpc":"2.0","id":9,"result":{}}`) // ignored before initialize
	wsSend(t, ws, initialize)
	if m := wsRead(t, ws); m.Key() != "n:0" || !strings.Contains(string(m.Raw), "protocolVersion") {
		t.Fatalf("initialize answered %s", m.Raw)
	}
	for _, tc := range []struct{ send, want string }{
		{`{"jsonrpc":`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`},
		{`[1]`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: JSON-RPC batches are not supported"}}`},
		{`7`, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request","data":7}}`},
		{strings.Replace(initialize, `"id":0`, `"id":"again"`, 1), `{"jsonrpc":"2.0","id":"again","error":{"code":-32600,"message":"Initialize not allowed on existing connection"}}`},
	} {
		wsSend(t, ws, tc.send)
		if m := wsRead(t, ws); string(m.Raw) != tc.want {
			t.Errorf("sent %s, got %s, want %s", tc.send, m.Raw, tc.want)
		}
	}
	wsSend(t, ws, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	if m := wsRead(t, ws); m.ResultSessionID != "s1" {
		t.Fatalf("session/new answered %s", m.Raw)
	}
	wsSend(t, ws, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	if m := wsRead(t, ws); m.Method != "session/update" {
		t.Fatalf("got %s", m.Raw)
	}
	ask := wsRead(t, ws)
	if ask.Method != "session/request_permission" {
		t.Fatalf("got %s", ask.Raw)
	}
	wsSend(t, ws, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"cancelled"}}}`, ask.ID))
	if m := wsRead(t, ws); m.Key() != "n:2" || !strings.Contains(string(m.Raw), `"cancelled"`) {
		t.Fatalf("prompt answered %s", m.Raw)
	}
	c := s.reg.Get(id)
	ws.Close(websocket.StatusNormalClosure, "")
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the connection did not end with its socket")
	}
}

func TestWebSocket_firstMessageMustBeInitialize(t *testing.T) {
	s := newACPServer(t, core.Limits{}, nil)
	ws, _ := s.dial(t)
	wsSend(t, ws, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	if code, why := wsClosed(t, ws); code != websocket.StatusProtocolError || why != "First message must be initialize" {
		t.Errorf("closed %v %q", code, why)
	}
	ws2, _ := s.dial(t)
	wsSend(t, ws2, `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}`)
	if code, why := wsClosed(t, ws2); code != websocket.StatusProtocolError || why != "Initialize request must include an ID" {
		t.Errorf("closed %v %q", code, why)
	}
}

func TestWebSocket_shutdown(t *testing.T) {
	s := newACPServer(t, core.Limits{}, nil)
	ws, _ := s.dial(t)
	wsSend(t, ws, initialize)
	wsRead(t, ws)
	done := make(chan error, 1)
	go func() { done <- s.reg.CloseAll(context.Background()) }()
	if code, why := wsClosed(t, ws); code != websocket.StatusGoingAway || why != "Server shutting down" {
		t.Errorf("closed %v %q", code, why)
	}
	if err := <-done; err != nil {
		t.Error(err)
	}
}

// TestWebSocket_unreadDropped: a client that stops reading has its
// connection dropped, and the agent side is not held up.
func TestWebSocket_unreadDropped(t *testing.T) {
	s := newACPServer(t, core.Limits{MaxBuffered: 1 << 20}, servetest.FakeAgent)
	ws, id := s.dial(t)
	wsSend(t, ws, initialize)
	wsRead(t, ws)
	c := s.reg.Get(id)
	wsSend(t, ws, `{"jsonrpc":"2.0","id":1,"method":"flood","params":{"bytes":100000000}}`)
	select {
	case <-c.Done():
	case <-time.After(time.Minute):
		t.Fatal("the connection of a client that does not read was not dropped")
	}
	// Overflowed, not stalled: the agent side's writes went on while
	// nobody read.
	if !errors.Is(c.Err(), core.ErrOverflow) {
		t.Errorf("Err() = %v", c.Err())
	}
	if code, _ := wsClosed(t, ws); code != websocket.StatusPolicyViolation {
		t.Errorf("closed %v, want 1008", code)
	}
}

func TestWebSocket_messageTooBig(t *testing.T) {
	s := newACPServer(t, core.Limits{MaxMessage: 1000}, nil)
	ws, id := s.dial(t)
	c := s.reg.Get(id)
	wsSend(t, ws, `{"x":"`+strings.Repeat("y", 1000)+`"}`)
	if code, _ := wsClosed(t, ws); code != websocket.StatusMessageTooBig {
		t.Errorf("closed %v, want 1009", code)
	}
	<-c.Done()
}
