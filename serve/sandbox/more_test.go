package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// rpcResult decodes a JSON-RPC response's body into result, and fails the
// test if it is an error.
func rpcResult(t *testing.T, what string, r reply, result any) {
	t.Helper()
	var env struct {
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &env) != nil || env.Error != nil {
		t.Fatalf("%s: %d %s", what, r.status, r.body)
	}
	if err := json.Unmarshal(env.Result, result); err != nil {
		t.Fatalf("%s: %v in %s", what, err, r.body)
	}
}

// rpcError checks that r is a JSON-RPC error of code whose message says
// want.
func rpcError(t *testing.T, what string, r reply, code int, want string) {
	t.Helper()
	var env struct {
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if r.status != 200 || json.Unmarshal([]byte(r.body), &env) != nil || env.Error.Code != code || !strings.Contains(env.Error.Message, want) {
		t.Errorf("%s: %d %s, want error %d saying %q", what, r.status, r.body, code, want)
	}
}

// The _sandboxagent/session methods, on the real bridge (the mock agent).
func TestSandboxHandler_extensions(t *testing.T) {
	st := newSandboxTest(t, core.Limits{}, Options{}, servetest.BridgeConnector(t))
	st.start(t, "srv", "mock")
	var created struct {
		SessionID string `json:"sessionId"`
	}
	rpcResult(t, "session/new", st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, t.TempDir())), &created)
	sid := created.SessionID
	listModels := func(id int) sandboxModels {
		var models sandboxModels
		rpcResult(t, "list_models", st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"_sandboxagent/session/list_models","params":{"sessionId":%q}}`, id, sid)), &models)
		return models
	}
	models := listModels(2)
	if len(models.AvailableModels) != 2 || models.AvailableModels[1].ModelID != "mock-large" || models.AvailableModels[1].Name != "Mock Large" ||
		models.CurrentModelID == nil || *models.CurrentModelID != "mock-small" {
		t.Errorf("list_models: %+v", models)
	}
	st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/set_config_option","params":{"sessionId":%q,"configId":"model","value":"mock-large"}}`, sid))
	if m := listModels(4); m.CurrentModelID == nil || *m.CurrentModelID != "mock-large" {
		t.Errorf("list_models after set_config_option: %+v", m)
	}
	rpcError(t, "list_models without a session", st.post(t, "srv", `{"jsonrpc":"2.0","id":5,"method":"_sandboxagent/session/list_models","params":{}}`), -32602, "requires params.sessionId")
	rpcError(t, "list_models of another session", st.post(t, "srv", `{"jsonrpc":"2.0","id":6,"method":"_sandboxagent/session/list_models","params":{"sessionId":"nope"}}`), -32002, "nope")
	rpcError(t, "set_metadata", st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"_sandboxagent/session/set_metadata","params":{"sessionId":%q,"metadata":{}}}`, sid)), -32601, "acpbridge does not serve _sandboxagent/session/set_metadata")

	_, events := st.open(t, "srv")
	if r := st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"_sandboxagent/session/detach","params":{"sessionId":%q}}`, sid)); r.status != 200 || !strings.Contains(r.body, `"result":{}`) {
		t.Errorf("detach: %d %s", r.status, r.body)
	}
	prompt := st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"hello"}]}}`, sid))
	if !strings.Contains(prompt.body, `"stopReason":"end_turn"`) {
		t.Errorf("a detached session's prompt: %d %s", prompt.status, prompt.body)
	}
	if e := events.until(t, func(m core.Msg) bool {
		return m.Kind == core.Response && m.Key() == "n:9" || m.Method == "session/update" && m.SessionID == sid
	}); e.msg.Kind != core.Response {
		t.Errorf("a detached session's update came on the stream: %s", e.msg.Raw)
	}

	var term map[string]any
	rpcResult(t, "terminate", st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":10,"method":"_sandboxagent/session/terminate","params":{"sessionId":%q}}`, sid)), &term)
	if term["terminated"] != true || term["alreadyEnded"] != false || term["reason"] != "terminated" {
		t.Errorf("terminate: %v", term)
	}
	rpcResult(t, "terminate again", st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":11,"method":"_sandboxagent/session/terminate","params":{"sessionId":%q}}`, sid)), &term)
	if term["terminated"] != false || term["alreadyEnded"] != true {
		t.Errorf("terminate of a closed session: %v", term)
	}
	rpcError(t, "prompt after terminate", st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":12,"method":"session/prompt","params":{"sessionId":%q,"prompt":[]}}`, sid)), -32002, sid)
	if r := st.post(t, "srv", `{"jsonrpc":"2.0","method":"_sandboxagent/session/whatever","params":{}}`); r.status != 202 {
		t.Errorf("an extension notification: %d %s", r.status, r.body)
	}
}

// sandboxSettle waits until the registry is empty and at most max
// goroutines run (max 0: any number).
func sandboxSettle(t *testing.T, st *sandboxTest, max int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st.client.CloseIdleConnections()
		n := runtime.NumGoroutine()
		if st.reg.Len() == 0 && (max == 0 || n <= max) {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d connections and %d goroutines, want 0 and at most %d:\n%s", st.reg.Len(), n, max, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A thousand bad requests, and servers made and deleted with a request
// in flight, leave no goroutine behind; the handler goes on serving.
func TestSandboxHandler_noLeak(t *testing.T) {
	st := newSandboxTest(t, core.Limits{MaxMessage: 1000}, Options{}, nil)
	st.start(t, "warm", "a")
	st.req(t, "DELETE", "/v1/acp/warm", "")
	sandboxSettle(t, st, 0)
	before := runtime.NumGoroutine()
	big := `{"jsonrpc":"2.0","method":"x","params":"` + strings.Repeat("x", 1000) + `"}`
	for i := range 1000 {
		switch i % 10 {
		case 0:
			st.post(t, "x?agent=a", `{"jsonrpc":`)
		case 1:
			st.post(t, "x?agent=a", sbInitialize, "Content-Type: text/xml")
		case 2:
			st.post(t, "x?agent=a", `[1]`)
		case 3:
			st.post(t, "x?agent=a", big)
		case 4:
			st.post(t, "nope", `{"jsonrpc":"2.0","method":"x"}`)
		case 5:
			st.req(t, "GET", "/v1/acp/nope", "", "Accept: text/event-stream")
		case 6:
			st.req(t, "PATCH", "/v1/acp/nope", "")
		case 7:
			st.req(t, "GET", "/v1/desktop/screenshot", "")
		case 8:
			st.post(t, "x?agent=a", `{"id":1}`)
		case 9:
			id := fmt.Sprintf("s%d", i)
			st.start(t, id, "a")
			st.post(t, id, `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`)
			prompt := make(chan reply, 1)
			go func() {
				prompt <- st.post(t, id, `{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`)
			}()
			time.Sleep(time.Millisecond)
			st.req(t, "DELETE", "/v1/acp/"+id, "")
			if r := <-prompt; r.status == 200 {
				t.Errorf("a prompt waiting on an ask when its server was deleted: %d %s", r.status, r.body)
			}
		}
	}
	sandboxSettle(t, st, before)
	st.start(t, "after", "a")
	if r := st.post(t, "after", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{}}`); !strings.Contains(r.body, `"sessionId":"s1"`) {
		t.Errorf("after the bad requests, session/new answered %d %s", r.status, r.body)
	}
}

// openStuck opens server id's SSE stream on a connection that never
// reads.
func (st *sandboxTest) openStuck(t *testing.T, id string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", st.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /v1/acp/%s HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n\r\n", id, st.Listener.Addr())
	return c
}

// flood has the fake agent write n bytes of notifications at once.
func (st *sandboxTest) flood(t *testing.T, id string, n int) {
	t.Helper()
	var flood struct{ Written, Failed int }
	rpcResult(t, "flood", st.post(t, id, fmt.Sprintf(`{"jsonrpc":"2.0","id":"f","method":"flood","params":{"bytes":%d}}`, n)), &flood)
	if flood.Failed != 0 || flood.Written < n {
		t.Errorf("the flood: %+v", flood)
	}
}

// A stream whose client reads nothing never holds up the agent side: with
// MaxStall longer than the test, a flood of messages is still written
// while that stream is open (had the flood waited for it, it could only
// have gone on by dropping it at MaxStall), and another stream gets them
// (or skips what the log dropped).
func TestSandboxHandler_slowStream(t *testing.T) {
	const stall = time.Hour
	st := newSandboxTest(t, core.Limits{MaxStall: stall}, Options{LogBytes: 256 << 10}, nil)
	st.start(t, "srv", "a")
	st.openStuck(t, "srv")
	_, live := st.open(t, "srv")
	s := st.h.lookup("srv")
	servetest.WaitFor(t, "both streams open", func() bool { return s.log.streamsOpen() == 2 })
	st.flood(t, "srv", 8<<20)
	if n := s.log.streamsOpen(); n != 2 {
		t.Errorf("%d streams open after the flood; want the stuck one still open beside the live one", n)
	}
	live.until(t, func(m core.Msg) bool { return m.Key() == "s:f" })
	if r := st.post(t, "srv", `{"jsonrpc":"2.0","id":2,"method":"echo","params":{}}`); r.status != 200 {
		t.Errorf("after the flood: %d %s", r.status, r.body)
	}
	if kept := s.log.keptBytes(); kept > 256<<10 {
		t.Errorf("the log keeps %d bytes, over its bound", kept)
	}
}

// A stream whose client reads nothing is dropped once a write has waited
// Limits.MaxStall.
func TestSandboxHandler_stuckStreamDropped(t *testing.T) {
	st := newSandboxTest(t, core.Limits{MaxStall: 200 * time.Millisecond}, Options{LogBytes: 256 << 10}, nil)
	st.start(t, "srv", "a")
	st.openStuck(t, "srv")
	s := st.h.lookup("srv")
	servetest.WaitFor(t, "the stream open", func() bool { return s.log.streamsOpen() == 1 })
	for sent := 0; s.log.streamsOpen() > 0; sent += 1 << 20 {
		if sent > 64<<20 {
			t.Fatal("64 MiB written and the stream that reads none is still open")
		}
		st.flood(t, "srv", 1<<20)
		time.Sleep(250 * time.Millisecond)
	}
}

// The registry's CloseAll ends every server and its streams, and no
// server is made after it.
func TestSandboxHandler_closeAll(t *testing.T) {
	st := newSandboxTest(t, core.Limits{}, Options{}, nil)
	st.start(t, "srv", "a")
	_, events := st.open(t, "srv")
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := st.reg.CloseAll(ctx); err != nil {
		t.Fatal(err)
	}
	events.waitEnd(t)
	problem(t, "a new server after CloseAll", st.post(t, "new?agent=a", sbInitialize), 503, "service_unavailable", "shutting down")
	problem(t, "the closed server", st.post(t, "srv", sbInitialize), 400, "invalid_request", "missing required 'agent'")
	if r := st.req(t, "GET", "/v1/acp", ""); r.body != `{"servers":[]}` {
		t.Errorf("servers after CloseAll: %s", r.body)
	}
}

// A request's answer in the POST's body waits for an open stream to have
// sent the messages before it, and the answer.
func TestSandboxHandler_answerAfterStream(t *testing.T) {
	st := newSandboxTest(t, core.Limits{}, Options{}, nil)
	st.start(t, "srv", "a")
	_, events := st.open(t, "srv")
	events.next(t) // initialize's answer
	s := st.h.lookup("srv")
	for i := range 5 {
		r := st.post(t, "srv", fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"flood","params":{"bytes":200000}}`, i))
		if r.status != 200 {
			t.Fatalf("flood: %d %s", r.status, r.body)
		}
		s.log.mu.Lock()
		sent, last := s.log.carried, s.log.next-1
		s.log.mu.Unlock()
		if sent != last {
			t.Errorf("when the POST was answered the stream had sent up to event %d of %d", sent, last)
		}
	}
}

func TestEventLog_bounds(t *testing.T) {
	l := newEventLog(3, 10)
	for i, s := range []string{"aa", "bb", "cc", "dd"} {
		if id := l.append([]byte(s)); id != uint64(i+1) {
			t.Errorf("append %s: id %d", s, id)
		}
	}
	evs, dropped, _ := l.after(0, 10)
	if got := ids(evs); got != "[2 3 4]" || dropped != 1 {
		t.Errorf("after 0: %s, %d dropped; want [2 3 4], 1", got, dropped)
	}
	l.append([]byte("0123456789"))
	if evs, dropped, _ = l.after(2, 10); ids(evs) != "[5]" || dropped != 2 {
		t.Errorf("after a long one: %s, %d dropped; want the newest alone", ids(evs), dropped)
	}
	if evs, _, _ = l.after(5, 10); len(evs) != 0 {
		t.Errorf("after the last: %s", ids(evs))
	}
	big := newEventLog(5000, 1<<30)
	for range 3000 {
		big.append([]byte("x"))
	}
	if evs, _, _ = big.after(2990, 3); ids(evs) != "[2991 2992 2993]" {
		t.Errorf("a batch: %s", ids(evs))
	}
}

func ids(evs []event) string {
	var out []uint64
	for _, e := range evs {
		out = append(out, e.id)
	}
	return fmt.Sprint(out)
}

// In a synctest bubble the clock moves only when every goroutine waits,
// so a waitSent that sat out its timer shows on the clock, however slow
// the machine.
func TestEventLog_waitSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newEventLog(10, 100)
		id := l.append([]byte("a"))
		start := time.Now()
		l.waitSent(t.Context(), id, 5*time.Second)
		if time.Since(start) != 0 {
			t.Error("waitSent waited with no stream open")
		}
		if !l.open(1) || l.open(1) {
			t.Fatal("open(1) twice")
		}
		done := make(chan struct{})
		start = time.Now()
		go func() {
			defer close(done)
			l.waitSent(t.Context(), id, 5*time.Second)
		}()
		l.markSent(id)
		<-done
		if time.Since(start) != 0 {
			t.Error("waitSent waited for its timer, not for the event to be sent")
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		l.waitSent(ctx, l.append([]byte("b")), 5*time.Second)
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Fatal(ctx.Err())
		}
		l.close()
		if l.streamsOpen() != 0 {
			t.Error("a stream left open")
		}
	})
}
