package acphttp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// server serves NewHandler on connect (servetest.FakeAgent if nil).
type acpServer struct {
	*httptest.Server
	reg    *core.Registry
	client *http.Client
}

func newACPServer(t *testing.T, l core.Limits, connect core.Connector) *acpServer {
	t.Helper()
	if connect == nil {
		connect = servetest.FakeAgent
	}
	reg := core.NewRegistry(l, servetest.Logger())
	ts := httptest.NewServer(NewHandler(reg, connect, servetest.Logger()))
	s := &acpServer{Server: ts, reg: reg, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := reg.CloseAll(ctx); err != nil {
			t.Error(err)
		}
		s.client.CloseIdleConnections()
		ts.Close()
	})
	return s
}

type reply struct {
	status int
	header http.Header
	body   string
}

// do sends a request with headers given as "Name: value" pairs.
func (s *acpServer) do(t testing.TB, method, body string, headers ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, s.URL+"/acp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

const initialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`

// connect initializes a connection and returns its id.
func (s *acpServer) connect(t testing.TB) string {
	t.Helper()
	r := s.do(t, http.MethodPost, initialize)
	id := r.header.Get(HeaderConnectionID)
	if r.status != http.StatusOK || id == "" || !strings.Contains(r.body, `"protocolVersion":1`) {
		t.Fatalf("initialize: %d %q (%s)", r.status, r.body, id)
	}
	return id
}

func (s *acpServer) post(t testing.TB, conn, body string, headers ...string) reply {
	t.Helper()
	return s.do(t, http.MethodPost, body, append([]string{HeaderConnectionID + ": " + conn}, headers...)...)
}

// stream is an SSE stream being read.
type sseStream struct {
	events chan core.Msg
	ended  chan error
	cancel context.CancelFunc
}

// open opens a connection's SSE stream (a session's if session is set)
// and returns the status and the stream when it is 200.
func (s *acpServer) open(t *testing.T, conn, session string) (int, *sseStream) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/acp", nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(HeaderConnectionID, conn)
	if session != "" {
		req.Header.Set(HeaderSessionID, session)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return resp.StatusCode, nil
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type %q", ct)
	}
	st := &sseStream{events: make(chan core.Msg, 1000), ended: make(chan error, 1), cancel: cancel}
	go st.read(resp.Body)
	t.Cleanup(func() { cancel(); <-st.ended })
	return resp.StatusCode, st
}

func (st *sseStream) read(body io.ReadCloser) {
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		m, err := core.Parse([]byte(data))
		if err != nil {
			st.ended <- err
			return
		}
		st.events <- m
	}
	st.ended <- sc.Err()
}

func (st *sseStream) next(t *testing.T) core.Msg {
	t.Helper()
	select {
	case m := <-st.events:
		return m
	case err := <-st.ended:
		st.ended <- err
		t.Fatalf("the stream ended: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no event in 10s")
	}
	return core.Msg{}
}

func (st *sseStream) waitEnd(t *testing.T) {
	t.Helper()
	select {
	case m := <-st.events:
		t.Fatalf("got %s, want the stream's end", m.Raw)
	case err := <-st.ended:
		st.ended <- err
	case <-time.After(time.Minute):
		t.Fatal("the stream did not end")
	}
}

func TestACPHandler_statuses(t *testing.T) {
	s := newACPServer(t, core.Limits{MaxMessage: 4000}, nil)
	conn := s.connect(t)
	if code, _ := s.open(t, conn, ""); code != http.StatusOK {
		t.Fatalf("GET the connection's stream: %d", code)
	}
	long := strings.Repeat("x", core.DefaultMaxIDLength+1)
	for _, tc := range []struct {
		name, method, body string
		headers            []string
		status             int
		reply              string
	}{
		{"PUT", http.MethodPut, "", nil, 405, "Method Not Allowed"},
		{"wrong content type", "POST", initialize, []string{"Content-Type: text/plain"}, 415, "Unsupported Media Type"},
		{"content type with charset", "POST", `{"jsonrpc":"2.0","method":"x"}`, []string{"Content-Type: application/json; charset=utf-8"}, 400, "Missing Acp-Connection-Id"},
		{"invalid JSON", "POST", `{"jsonrpc":`, nil, 400, "Invalid JSON"},
		{"empty body", "POST", ``, nil, 400, "Invalid JSON"},
		{"batch", "POST", `[` + initialize + `]`, nil, 400, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: JSON-RPC batches are not supported"}}`},
		{"not an object", "POST", `"hi"`, nil, 400, "Invalid JSON-RPC message"},
		{"too big", "POST", `{"x":"` + strings.Repeat("y", 4000) + `"}`, nil, 413, "Request body exceeds 4000 bytes"},
		{"initialize id null", "POST", `{"jsonrpc":"2.0","id":null,"method":"initialize","params":{}}`, nil, 400, "Initialize request must include an ID"},
		{"initialize again", "POST", initialize, []string{HeaderConnectionID + ": " + conn}, 400, "Initialize not allowed on existing connection"},
		{"no connection id", "POST", `{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`, nil, 400, "Missing Acp-Connection-Id"},
		{"unknown connection", "POST", `{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`, []string{HeaderConnectionID + ": nope"}, 404, "Unknown Acp-Connection-Id"},
		{"request", "POST", `{"jsonrpc":"2.0","id":1,"method":"session/list","params":{}}`, []string{HeaderConnectionID + ": " + conn}, 202, ""},
		{"notification", "POST", `{"jsonrpc":"2.0","method":"x/y"}`, []string{HeaderConnectionID + ": " + conn}, 202, ""},
		{"prompt without session header", "POST", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, []string{HeaderConnectionID + ": " + conn}, 400, "Missing Acp-Session-Id"},
		{"scoped method without session", "POST", `{"jsonrpc":"2.0","id":2,"method":"session/set_mode","params":{}}`, []string{HeaderConnectionID + ": " + conn}, 400, "Missing Acp-Session-Id"},
		{"mismatched session", "POST", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, []string{HeaderConnectionID + ": " + conn, HeaderSessionID + ": s2"}, 400, "Mismatched Acp-Session-Id"},
		{"session not attached", "POST", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s9","prompt":[]}}`, []string{HeaderConnectionID + ": " + conn, HeaderSessionID + ": s9"}, 409, "Session is not attached to this connection; attach it with session/load or session/resume"},
		{"cancel of a session not attached", "POST", `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s9"}}`, []string{HeaderConnectionID + ": " + conn, HeaderSessionID + ": s9"}, 409, "Session is not attached to this connection; attach it with session/load or session/resume"},
		{"session id too long", "POST", `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"` + long + `"}}`, []string{HeaderConnectionID + ": " + conn, HeaderSessionID + ": " + long}, 400, "Session ID exceeds maxIdLength (1024)"},
		{"request id too long", "POST", `{"jsonrpc":"2.0","id":"` + long + `","method":"session/list"}`, []string{HeaderConnectionID + ": " + conn}, 400, "Request ID exceeds maxIdLength (1024)"},
		{"GET not SSE", "GET", "", []string{HeaderConnectionID + ": " + conn}, 406, "Not Acceptable"},
		{"GET no connection id", "GET", "", []string{"Accept: text/event-stream"}, 400, "Missing Acp-Connection-Id"},
		{"GET unknown connection", "GET", "", []string{"Accept: text/event-stream", HeaderConnectionID + ": nope"}, 404, "Unknown Acp-Connection-Id"},
		{"GET a second receiver", "GET", "", []string{"Accept: text/event-stream", HeaderConnectionID + ": " + conn}, 409, "Outbound stream already has an active receiver"},
		{"DELETE no connection id", "DELETE", "", nil, 400, "Missing Acp-Connection-Id"},
		{"DELETE unknown connection", "DELETE", "", []string{HeaderConnectionID + ": nope"}, 404, "Unknown Acp-Connection-Id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.do(t, tc.method, tc.body, tc.headers...)
			if r.status != tc.status || r.body != tc.reply {
				t.Errorf("%d %q, want %d %q", r.status, r.body, tc.status, tc.reply)
			}
		})
	}
	if r := s.do(t, "DELETE", "", HeaderConnectionID+": "+conn); r.status != http.StatusAccepted {
		t.Errorf("DELETE: %d %q", r.status, r.body)
	}
	if r := s.post(t, conn, `{"jsonrpc":"2.0","method":"x/y"}`); r.status != http.StatusNotFound {
		t.Errorf("POST after DELETE: %d %q", r.status, r.body)
	}
}

func TestACPHandler_routing(t *testing.T) {
	s := newACPServer(t, core.Limits{}, nil)
	conn := s.connect(t)
	_, main := s.open(t, conn, "")
	if r := s.post(t, conn, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`); r.status != 202 {
		t.Fatalf("session/new: %d %s", r.status, r.body)
	}
	if m := main.next(t); m.Key() != "n:1" || m.ResultSessionID != "s1" {
		t.Fatalf("session/new answered %s", m.Raw)
	}
	_, sess := s.open(t, conn, "s1")
	onS1 := []string{HeaderSessionID + ": s1"}
	if r := s.post(t, conn, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, onS1...); r.status != 202 {
		t.Fatalf("prompt: %d %s", r.status, r.body)
	}
	if m := sess.next(t); m.Method != "session/update" {
		t.Fatalf("got %s, want an update", m.Raw)
	}
	ask := sess.next(t)
	if ask.Method != "session/request_permission" || ask.Kind != core.Request {
		t.Fatalf("got %s, want a permission request", ask.Raw)
	}
	answer := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, ask.ID)
	if r := s.post(t, conn, answer); r.status != 400 || r.body != "Missing Acp-Session-Id" {
		t.Errorf("answer without the session: %d %q", r.status, r.body)
	}
	if r := s.post(t, conn, answer, HeaderSessionID+": s2"); r.status != 400 || r.body != "Mismatched Acp-Session-Id" {
		t.Errorf("answer on another session: %d %q", r.status, r.body)
	}
	if r := s.post(t, conn, answer, onS1...); r.status != 202 {
		t.Fatalf("answer: %d %q", r.status, r.body)
	}
	if m := sess.next(t); m.Key() != "n:2" || !strings.Contains(string(m.Raw), "end_turn") {
		t.Fatalf("prompt answered %s", m.Raw)
	}
	// session/load: the replay on the session's stream, the answer on the
	// connection's.
	if r := s.post(t, conn, `{"jsonrpc":"2.0","id":3,"method":"session/load","params":{"sessionId":"s1","cwd":"/","mcpServers":[]}}`, onS1...); r.status != 202 {
		t.Fatalf("load: %d %q", r.status, r.body)
	}
	if m := sess.next(t); m.Method != "session/update" {
		t.Errorf("got %s on the session's stream, want the replay", m.Raw)
	}
	if m := main.next(t); m.Key() != "n:3" {
		t.Errorf("got %s on the connection's stream, want load's answer", m.Raw)
	}
	// session/close: its answer on the session's stream, which stays; the
	// session is no longer attached.
	if r := s.post(t, conn, `{"jsonrpc":"2.0","id":4,"method":"session/close","params":{"sessionId":"s1"}}`, onS1...); r.status != 202 {
		t.Fatalf("close: %d %q", r.status, r.body)
	}
	if m := sess.next(t); m.Key() != "n:4" {
		t.Errorf("got %s on the session's stream, want close's answer", m.Raw)
	}
	if r := s.post(t, conn, `{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, onS1...); r.status != http.StatusConflict {
		t.Errorf("prompt after close: %d %q, want 409", r.status, r.body)
	}
}

func TestACPHandler_sessionStreamBuffersUntilOpened(t *testing.T) {
	s := newACPServer(t, core.Limits{}, nil)
	conn := s.connect(t)
	_, main := s.open(t, conn, "")
	s.post(t, conn, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	main.next(t)
	s.post(t, conn, `{"jsonrpc":"2.0","id":2,"method":"session/load","params":{"sessionId":"s1"}}`, HeaderSessionID+": s1")
	main.next(t) // load's answer comes after its replay, which waits for s1's stream
	_, sess := s.open(t, conn, "s1")
	if m := sess.next(t); m.Method != "session/update" {
		t.Errorf("got %s", m.Raw)
	}
}

func TestACPHandler_takeover(t *testing.T) {
	s := newACPServer(t, core.Limits{}, nil)
	a := s.connect(t)
	_, aMain := s.open(t, a, "")
	s.post(t, a, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	aMain.next(t)
	_, aS1 := s.open(t, a, "s1")
	b := s.connect(t)
	_, bMain := s.open(t, b, "")
	if r := s.post(t, b, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s1"}}`, HeaderSessionID+": s1"); r.status != 202 {
		t.Fatalf("load on b: %d %q", r.status, r.body)
	}
	bMain.next(t)
	aS1.waitEnd(t)
	r := s.post(t, a, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, HeaderSessionID+": s1")
	if r.status != http.StatusConflict {
		t.Errorf("prompt on a after b loaded s1: %d %q, want 409", r.status, r.body)
	}
	if r := s.post(t, a, `{"jsonrpc":"2.0","id":3,"method":"session/resume","params":{"sessionId":"s1"}}`, HeaderSessionID+": s1"); r.status != 202 {
		t.Errorf("resume on a: %d %q", r.status, r.body)
	}
}

// TestACPHandler_unreadStreamDropped: a client that opens its stream and
// never reads it has its connection dropped, and the handler writing to
// it returns (httptest's Close waits for it).
func TestACPHandler_unreadStreamDropped(t *testing.T) {
	s := newACPServer(t, core.Limits{MaxBuffered: 1 << 20}, servetest.FakeAgent)
	conn := s.connect(t)
	c := s.reg.Get(conn)
	raw, err := net.Dial("tcp", s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	fmt.Fprintf(raw, "GET /acp HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n%s: %s\r\n\r\n", HeaderConnectionID, conn)
	time.Sleep(100 * time.Millisecond) // the stream is open; nobody reads it
	if r := s.post(t, conn, `{"jsonrpc":"2.0","id":1,"method":"flood","params":{"bytes":100000000}}`); r.status != 202 {
		t.Fatalf("flood: %d %q", r.status, r.body)
	}
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
	if r := s.post(t, conn, `{"jsonrpc":"2.0","method":"x/y"}`); r.status != http.StatusNotFound {
		t.Errorf("POST to the dropped connection: %d", r.status)
	}
}

func TestACPHandler_noLeak(t *testing.T) {
	s := newACPServer(t, core.Limits{}, nil)
	warm := s.connect(t)
	s.do(t, "DELETE", "", HeaderConnectionID+": "+warm)
	settle(t, s, 0)
	before := runtime.NumGoroutine()
	for i := range 1000 {
		switch i % 8 {
		case 0:
			s.do(t, "POST", `{"jsonrpc":`)
		case 1:
			s.do(t, "POST", initialize, "Content-Type: text/xml")
		case 2:
			s.do(t, "POST", `[1]`)
		case 3:
			s.post(t, "nope", `{"jsonrpc":"2.0","method":"x/y"}`)
		case 4:
			s.do(t, "GET", "", "Accept: text/event-stream", HeaderConnectionID+": nope")
		case 5:
			s.do(t, "PATCH", "")
		case 6:
			s.do(t, "POST", `{"jsonrpc":"2.0","id":null,"method":"initialize"}`)
		case 7:
			conn := s.connect(t)
			s.post(t, conn, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, HeaderSessionID+": s1")
			s.do(t, "DELETE", "", HeaderConnectionID+": "+conn)
		}
	}
	settle(t, s, before)
	conn := s.connect(t)
	_, main := s.open(t, conn, "")
	s.post(t, conn, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	if m := main.next(t); m.ResultSessionID != "s1" {
		t.Errorf("after the bad requests, session/new answered %s", m.Raw)
	}
}

// settle waits until the registry is empty and at most max goroutines
// run (max 0: any number).
func settle(t *testing.T, s *acpServer, max int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s.client.CloseIdleConnections()
		n := runtime.NumGoroutine()
		if s.reg.Len() == 0 && (max == 0 || n <= max) {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d connections and %d goroutines, want 0 and at most %d:\n%s", s.reg.Len(), n, max, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestACPHandler_initializeFails(t *testing.T) {
	connect := func(ctx context.Context, r io.Reader, w io.Writer, agent string) error {
		return fmt.Errorf("no agent %q here", agent)
	}
	s := newACPServer(t, core.Limits{}, connect)
	req, _ := http.NewRequest("POST", s.URL+"/acp?agent=nobody", strings.NewReader(initialize))
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	want := `{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"Initialize failed","data":"the agent side ended the connection: no agent \"nobody\" here"}}`
	if resp.StatusCode != http.StatusInternalServerError || string(b) != want || resp.Header.Get(HeaderConnectionID) != "" {
		t.Errorf("%d %s, want 500 %s", resp.StatusCode, b, want)
	}
	settle(t, s, 0)
}

func TestACPHandler_tooManySessionStreams(t *testing.T) {
	reg := servetest.NewRegistry(t, core.Limits{MaxSessionStreams: 2})
	hc := &httpConn{limits: reg.Limits(), log: servetest.Logger(), sessions: map[string]*core.Mailbox{}, pending: map[string]string{}, asked: map[string]string{}}
	c := reg.NewConn(core.ConnOptions{Route: hc.route, Transport: hc})
	hc.c, hc.main = c, c.NewMailbox()
	for i := range 3 {
		hc.route(servetest.Msg(t, fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s%d"}}`, i)))
	}
	if !errors.Is(c.Err(), core.ErrLimit) {
		t.Errorf("Err() = %v after a third session stream nobody reads", c.Err())
	}
}

// TestACPHandler_takeoverDropsUnreadStream: the stream of a session taken
// over that held messages and had no receiver is dropped, so that they
// do not wait there until the connection stalls.
func TestACPHandler_takeoverDropsUnreadStream(t *testing.T) {
	s := newACPServer(t, core.Limits{}, nil)
	a := s.connect(t)
	ac := s.reg.Get(a)
	_, aMain := s.open(t, a, "")
	s.post(t, a, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	aMain.next(t)
	// The prompt's update and ask wait on s1's stream, which a never opens.
	s.post(t, a, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`, HeaderSessionID+": s1")
	servetest.WaitFor(t, "the prompt's update and ask", func() bool { return ac.Buffered() > 0 })
	b := s.connect(t)
	_, bMain := s.open(t, b, "")
	_, bS1 := s.open(t, b, "s1")
	s.post(t, b, `{"jsonrpc":"2.0","id":1,"method":"session/load","params":{"sessionId":"s1"}}`, HeaderSessionID+": s1")
	bMain.next(t)
	bS1.next(t)
	if n := ac.Buffered(); n != 0 {
		t.Errorf("a still holds %d bytes for the session b took", n)
	}
	if r := s.post(t, a, `{"jsonrpc":"2.0","id":3,"method":"session/list","params":{}}`); r.status != 202 {
		t.Errorf("a's session/list: %d", r.status)
	}
	if m := aMain.next(t); m.Key() != "n:3" {
		t.Errorf("a got %s", m.Raw)
	}
}
