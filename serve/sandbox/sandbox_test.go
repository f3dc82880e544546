package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// sandboxTest serves NewHandler on a Connector (servetest.FakeAgent if nil).
// reply is an answer, its body read.
type reply struct {
	status int
	header http.Header
	body   string
}

type sandboxTest struct {
	*httptest.Server
	reg    *core.Registry
	h      *sandboxHandler
	client *http.Client
}

func newSandboxTest(t *testing.T, l core.Limits, o Options, connect core.Connector) *sandboxTest {
	t.Helper()
	if connect == nil {
		connect = servetest.FakeAgent
	}
	if o.Logger == nil {
		o.Logger = servetest.Logger()
	}
	reg := core.NewRegistry(l, servetest.Logger())
	h := NewHandler(reg, connect, o).(*sandboxHandler)
	ts := httptest.NewServer(h)
	st := &sandboxTest{Server: ts, reg: reg, h: h, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := reg.CloseAll(ctx); err != nil {
			t.Error(err)
		}
		st.client.CloseIdleConnections()
		ts.Close()
	})
	return st
}

// req sends a request with headers given as "Name: value" pairs (an empty
// value deletes the header); a POST is application/json unless told.
func (st *sandboxTest) req(t testing.TB, method, path, body string, headers ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, st.URL+path, strings.NewReader(body))
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
	resp, err := st.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header, string(b)}
}

// post POSTs a message to server id.
func (st *sandboxTest) post(t testing.TB, id, body string, headers ...string) reply {
	t.Helper()
	return st.req(t, http.MethodPost, "/v1/acp/"+id, body, headers...)
}

const sbInitialize = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"test","version":"1"}}}`

// start makes server id for agent with initialize.
func (st *sandboxTest) start(t testing.TB, id, agent string) {
	t.Helper()
	r := st.post(t, id+"?agent="+agent, sbInitialize)
	if r.status != http.StatusOK || !strings.Contains(r.body, `"protocolVersion":1`) {
		t.Fatalf("initialize %s: %d %s", id, r.status, r.body)
	}
}

// sbEvent is one SSE event read.
type sbEvent struct {
	id  uint64
	msg core.Msg
}

// sbStream is a server's SSE stream being read.
type sbStream struct {
	events   chan sbEvent
	comments chan string
	ended    chan error
	cancel   context.CancelFunc
}

// open opens server id's SSE stream with headers, and returns the status
// and the stream when it is 200.
func (st *sandboxTest) open(t *testing.T, id string, headers ...string) (int, *sbStream) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, st.URL+"/v1/acp/"+id, nil)
	req.Header.Set("Accept", "text/event-stream")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ": ")
		req.Header.Set(k, v)
	}
	resp, err := st.client.Do(req)
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
	s := &sbStream{events: make(chan sbEvent, 1<<16), comments: make(chan string, 100), ended: make(chan error, 1), cancel: cancel}
	go s.read(resp.Body)
	t.Cleanup(func() { cancel(); <-s.ended })
	return resp.StatusCode, s
}

// read parses the SSE events as the SDK does: "event:", "id:" and "data:"
// lines, an empty line ending each.
func (s *sbStream) read(body io.ReadCloser) {
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 32<<20)
	var ev sbEvent
	name, data := "", ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if data != "" && name == "message" {
				m, err := core.Parse([]byte(data))
				if err != nil {
					s.ended <- fmt.Errorf("event %d: %w", ev.id, err)
					return
				}
				ev.msg = m
				s.events <- ev
			}
			ev, name, data = sbEvent{}, "", ""
		case strings.HasPrefix(line, ":"):
			select {
			case s.comments <- line:
			default:
			}
		case strings.HasPrefix(line, "event: "):
			name = line[len("event: "):]
		case strings.HasPrefix(line, "id: "):
			ev.id, _ = strconv.ParseUint(line[len("id: "):], 10, 64)
		case strings.HasPrefix(line, "data: "):
			data = line[len("data: "):]
		}
	}
	s.ended <- sc.Err()
}

func (s *sbStream) next(t *testing.T) sbEvent {
	t.Helper()
	select {
	case e := <-s.events:
		return e
	case err := <-s.ended:
		s.ended <- err
		t.Fatalf("the stream ended: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("no event in 10s")
	}
	return sbEvent{}
}

// until reads events until one matches, and returns it.
func (s *sbStream) until(t *testing.T, match func(core.Msg) bool) sbEvent {
	t.Helper()
	for {
		if e := s.next(t); match(e.msg) {
			return e
		}
	}
}

func (s *sbStream) waitEnd(t *testing.T) {
	t.Helper()
	for {
		select {
		case <-s.events:
		case err := <-s.ended:
			s.ended <- err
			return
		case <-time.After(time.Minute):
			t.Fatal("the stream did not end")
		}
	}
}

// problem checks that r is a problem of status and kind whose detail says
// want.
func problem(t *testing.T, what string, r reply, status int, kind, want string) {
	t.Helper()
	var p Problem
	if r.status != status || r.header.Get("Content-Type") != "application/problem+json" || json.Unmarshal([]byte(r.body), &p) != nil {
		t.Errorf("%s: %d %s %q, want %d application/problem+json", what, r.status, r.header.Get("Content-Type"), r.body, status)
		return
	}
	if p.Type != "urn:sandbox-agent:error:"+kind || p.Status != status || p.Title == "" || !strings.Contains(p.Detail, want) {
		t.Errorf("%s: problem %+v, want type %s, status %d, detail with %q", what, p, kind, status, want)
	}
}

func TestSandboxHandler_healthAndAgents(t *testing.T) {
	agents := func(context.Context) []AgentStatus {
		return []AgentStatus{
			{ID: "mock", Title: "Mock agent (offline)", Installed: true, Version: "builtin", CredentialsAvailable: true},
			{ID: "claude", Title: "Claude Code", Problem: "claude is not on PATH"},
		}
	}
	st := newSandboxTest(t, core.Limits{}, Options{Agents: agents}, nil)
	if r := st.req(t, "GET", "/v1/health", ""); r.status != 200 || r.body != `{"status":"ok"}` {
		t.Errorf("health: %d %s", r.status, r.body)
	}
	r := st.req(t, "GET", "/v1/agents", "")
	var list struct {
		Agents []map[string]any `json:"agents"`
	}
	if err := json.Unmarshal([]byte(r.body), &list); err != nil || r.status != 200 || len(list.Agents) != 2 {
		t.Fatalf("agents: %d %s", r.status, r.body)
	}
	mock, claude := list.Agents[0], list.Agents[1]
	if mock["id"] != "mock" || mock["installed"] != true || mock["credentialsAvailable"] != true || mock["version"] != "builtin" {
		t.Errorf("mock: %v", mock)
	}
	caps, _ := mock["capabilities"].(map[string]any)
	if len(caps) != 18 || caps["permissions"] != true || caps["textMessages"] != true || caps["sharedProcess"] != false {
		t.Errorf("capabilities: %v", caps)
	}
	if claude["installed"] != false || claude["problem"] != "claude is not on PATH" || claude["version"] != nil {
		t.Errorf("claude: %v", claude)
	}
	if r := st.req(t, "GET", "/v1/agents/mock?config=true", ""); r.status != 200 || !strings.Contains(r.body, `"configError":"acpbridge reports config options per session`) {
		t.Errorf("one agent: %d %s", r.status, r.body)
	}
	problem(t, "unknown agent", st.req(t, "GET", "/v1/agents/nope", ""), 400, "unsupported_agent", "nope")
	problem(t, "unknown agent's first POST", st.post(t, "x?agent=nope", sbInitialize), 400, "unsupported_agent", "nope")
}

// TestSandboxHandler_flow is the SDK's flow on the wire: initialize makes
// the server, requests are answered in their POST's body and on the
// stream, a permission ask comes on the stream and its answer is POSTed.
func TestSandboxHandler_flow(t *testing.T) {
	st := newSandboxTest(t, core.Limits{}, Options{}, nil)
	st.start(t, "srv", "alpha")
	if r := st.req(t, "GET", "/v1/acp", ""); r.status != 200 || !strings.Contains(r.body, `{"serverId":"srv","agent":"alpha","createdAtMs":`) {
		t.Errorf("servers: %d %s", r.status, r.body)
	}
	_, events := st.open(t, "srv")
	if e := events.next(t); e.id != 1 || !strings.Contains(string(e.msg.Raw), `"version":"alpha"`) {
		t.Errorf("first event %d %s, want initialize's answer (the agent named alpha)", e.id, e.msg.Raw)
	}
	r := st.post(t, "srv", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	if r.status != 200 || !strings.Contains(r.body, `"result":{"sessionId":"s1"}`) {
		t.Fatalf("session/new: %d %s", r.status, r.body)
	}
	prompt := make(chan reply, 1)
	go func() {
		prompt <- st.post(t, "srv", `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	}()
	update := events.until(t, func(m core.Msg) bool { return m.Method == "session/update" })
	ask := events.next(t)
	if ask.msg.Method != "session/request_permission" || ask.id != update.id+1 {
		t.Fatalf("after the update %d: %d %s", update.id, ask.id, ask.msg.Raw)
	}
	if r := st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, ask.msg.ID)); r.status != 202 || r.body != "" {
		t.Errorf("the answer to the ask: %d %q", r.status, r.body)
	}
	if r := <-prompt; r.status != 200 || !strings.Contains(r.body, `"stopReason":"end_turn"`) {
		t.Errorf("session/prompt: %d %s", r.status, r.body)
	}
	if e := events.next(t); e.msg.Kind != core.Response || e.msg.Key() != "n:2" {
		t.Errorf("the stream's next %s, want the prompt's answer", e.msg.Raw)
	}
	if r := st.post(t, "srv", `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`); r.status != 202 {
		t.Errorf("a notification: %d %s", r.status, r.body)
	}
	if r := st.post(t, "srv", `{"jsonrpc":"2.0","id":3,"method":"nope","params":{}}`); r.status != 200 || !strings.Contains(r.body, `"code":-32601`) {
		t.Errorf("an unknown method: %d %s", r.status, r.body)
	}
	if r := st.req(t, "DELETE", "/v1/acp/srv", ""); r.status != 204 {
		t.Errorf("DELETE: %d %s", r.status, r.body)
	}
	events.waitEnd(t)
	problem(t, "GET after DELETE", st.req(t, "GET", "/v1/acp/srv", ""), 404, "session_not_found", "srv")
	problem(t, "POST after DELETE", st.post(t, "srv", `{"jsonrpc":"2.0","method":"x"}`), 400, "invalid_request", "missing required 'agent'")
	if r := st.req(t, "GET", "/v1/acp", ""); r.body != `{"servers":[]}` {
		t.Errorf("servers after DELETE: %s", r.body)
	}
}

// A request answered later than the hold is 202 while a stream is open,
// and its answer comes on the stream; with no stream open its POST waits
// for it.
func TestSandboxHandler_hold(t *testing.T) {
	st := newSandboxTest(t, core.Limits{}, Options{Hold: 50 * time.Millisecond}, nil)
	st.start(t, "srv", "a")
	st.post(t, "srv", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
	prompt := make(chan reply, 1)
	go func() {
		prompt <- st.post(t, "srv", `{"jsonrpc":"2.0","id":"p1","method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	}()
	time.Sleep(200 * time.Millisecond) // past the hold, with no stream open
	if r := st.post(t, "srv", `{"jsonrpc":"2.0","id":"perm-1","result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`); r.status != 202 {
		t.Fatalf("the answer to the ask: %d %s", r.status, r.body)
	}
	if r := <-prompt; r.status != 200 || !strings.Contains(r.body, `"stopReason":"end_turn"`) {
		t.Errorf("a prompt held past the hold with no stream open: %d %q, want its answer", r.status, r.body)
	}

	_, events := st.open(t, "srv")
	r := st.post(t, "srv", `{"jsonrpc":"2.0","id":"p2","method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
	if r.status != 202 || r.body != "" {
		t.Fatalf("a prompt waiting on a permission ask, a stream open: %d %q, want 202", r.status, r.body)
	}
	ask := events.until(t, func(m core.Msg) bool { return m.Method == "session/request_permission" && m.Key() == "s:perm-2" })
	st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"cancelled"}}}`, ask.msg.ID))
	if e := events.next(t); e.msg.Key() != `s:p2` || !strings.Contains(string(e.msg.Raw), `"stopReason":"cancelled"`) {
		t.Errorf("after the ask %s, want the prompt's answer", e.msg.Raw)
	}
}

// Last-Event-ID resumes after that id; without it a stream starts at the
// oldest kept event; one that asks for dropped events is told so.
func TestSandboxHandler_lastEventID(t *testing.T) {
	st := newSandboxTest(t, core.Limits{}, Options{LogEvents: 4}, nil)
	st.start(t, "srv", "a")
	for i := 1; i <= 6; i++ {
		st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"echo","params":{"n":%d}}`, i, i))
	}
	ids := func(s *sbStream, n int) []uint64 {
		var got []uint64
		for range n {
			got = append(got, s.next(t).id)
		}
		return got
	}
	_, all := st.open(t, "srv")
	if got := fmt.Sprint(ids(all, 4)); got != "[4 5 6 7]" {
		t.Errorf("without Last-Event-ID: %s, want the 4 kept of 7", got)
	}
	_, resumed := st.open(t, "srv", "Last-Event-ID: 5")
	if got := fmt.Sprint(ids(resumed, 2)); got != "[6 7]" {
		t.Errorf("after 5: %s", got)
	}
	_, behind := st.open(t, "srv", "Last-Event-ID: 1")
	if c := <-behind.comments; c != ": 2 events dropped: this stream fell behind" {
		t.Errorf("a stream behind the log: comment %q", c)
	}
	if got := fmt.Sprint(ids(behind, 4)); got != "[4 5 6 7]" {
		t.Errorf("after 1: %s", got)
	}
	_, future := st.open(t, "srv", "Last-Event-ID: 99")
	if got := fmt.Sprint(ids(future, 1)); got != "[4]" {
		t.Errorf("after an id of an earlier server: %s, want all kept", got)
	}
	st.post(t, "srv", `{"jsonrpc":"2.0","id":7,"method":"echo","params":{}}`)
	for _, s := range []*sbStream{all, resumed, behind} {
		if e := s.next(t); e.id != 8 {
			t.Errorf("a live event: %d", e.id)
		}
	}
}

func TestSandboxHandler_badRequests(t *testing.T) {
	st := newSandboxTest(t, core.Limits{MaxMessage: 2000}, Options{MaxServers: 2, MaxStreams: 1}, nil)
	st.start(t, "srv", "a")
	big := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("x", 2000) + `"}`
	for _, tc := range []struct {
		what         string
		method, path string
		body         string
		headers      []string
		status       int
		kind, detail string
	}{
		{"content type", "POST", "/v1/acp/srv", `{}`, []string{"Content-Type: text/plain"}, 415, "unsupported_media_type", "application/json"},
		{"no content type", "POST", "/v1/acp/srv", `{}`, []string{"Content-Type: "}, 415, "unsupported_media_type", "application/json"},
		{"accept", "POST", "/v1/acp/srv", `{}`, []string{"Accept: text/html"}, 406, "not_acceptable", "application/json"},
		{"malformed JSON", "POST", "/v1/acp/srv", `{bad`, nil, 400, "invalid_request", "invalid JSON body: invalid character"},
		{"a batch", "POST", "/v1/acp/srv", `[{"jsonrpc":"2.0","method":"x"}]`, nil, 400, "invalid_request", "batches are not supported"},
		{"a string", "POST", "/v1/acp/srv", `"x"`, nil, 400, "invalid_request", "must be a JSON-RPC object"},
		{"no jsonrpc", "POST", "/v1/acp/srv", `{"id":1,"method":"x"}`, nil, 400, "invalid_request", `"jsonrpc":"2.0"`},
		{"too big", "POST", "/v1/acp/srv", big, nil, 413, "invalid_request", "exceeds 2000 bytes"},
		{"no agent", "POST", "/v1/acp/other", sbInitialize, nil, 400, "invalid_request", "missing required 'agent' query parameter"},
		{"another agent", "POST", "/v1/acp/srv?agent=b", sbInitialize, nil, 409, "conflict", `for agent "a"; requested "b"`},
		{"long id", "POST", "/v1/acp/" + strings.Repeat("i", 1100) + "?agent=a", sbInitialize, nil, 400, "invalid_request", "longer than 1024 bytes"},
		{"unknown server's stream", "GET", "/v1/acp/nope", "", nil, 404, "session_not_found", `"nope"`},
		{"stream accept", "GET", "/v1/acp/srv", "", []string{"Accept: application/json"}, 406, "not_acceptable", "text/event-stream"},
		{"Last-Event-ID", "GET", "/v1/acp/srv", "", []string{"Last-Event-ID: x"}, 400, "invalid_request", "Last-Event-ID"},
		{"method", "PUT", "/v1/acp/srv", "", nil, 405, "invalid_request", "allowed GET, POST, DELETE"},
		{"method on a list", "POST", "/v1/acp", "", nil, 405, "invalid_request", "allowed GET"},
		{"desktop", "GET", "/v1/desktop/status", "", nil, 404, "not_found", "acpbridge does not serve GET /v1/desktop/status"},
		{"processes", "POST", "/v1/processes/run", "{}", nil, 404, "not_found", "does not serve"},
		{"fs", "GET", "/v1/fs/file?path=/etc/passwd", "", nil, 404, "not_found", "does not serve"},
		{"install", "POST", "/v1/agents/mock/install", "{}", nil, 404, "not_found", "does not serve"},
		{"a path under a server", "GET", "/v1/acp/srv/x", "", nil, 404, "not_found", "does not serve"},
	} {
		problem(t, tc.what, st.req(t, tc.method, tc.path, tc.body, tc.headers...), tc.status, tc.kind, tc.detail)
	}
	st.start(t, "second", "a")
	problem(t, "one server too many", st.post(t, "third?agent=a", sbInitialize), 503, "service_unavailable", "at most 2 ACP servers")
	st.open(t, "srv")
	problem(t, "one stream too many", st.req(t, "GET", "/v1/acp/srv", ""), 429, "too_many_streams", "1 SSE streams")
	if r := st.req(t, "DELETE", "/v1/acp/nope", ""); r.status != 204 {
		t.Errorf("DELETE of no server: %d", r.status)
	}
	if r := st.post(t, "srv", `{"jsonrpc":"2.0","id":1,"method":"echo","params":{"still":"here"}}`); r.status != 200 || !strings.Contains(r.body, `"still":"here"`) {
		t.Errorf("after the bad requests: %d %s", r.status, r.body)
	}
}
