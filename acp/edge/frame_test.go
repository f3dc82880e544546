package edge

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/coder/acp-go-sdk"
)

// raw is a bridge driven by hand-written lines.
type raw struct {
	t      *testing.T
	in     *io.PipeWriter
	out    chan map[string]any
	served chan error
	warned syncbuf.Buffer // what the server logged at warning level or above
}

func startRaw(t *testing.T, dir string) *raw {
	t.Helper()
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{mock.New()}, Default: "mock",
		Store: st, Persist: bridge.PersistAlways, Logger: testLogger(), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return serveRaw(t, m)
}

// serveRaw serves m to hand-written lines.
func serveRaw(t *testing.T, m *bridge.Manager) *raw {
	t.Helper()
	return serveRawBy(t, NewServer(m, "test", testLogger()))
}

// serveRawBy has s serve hand-written lines; r.warned gets what s logs
// at warning level or above.
func serveRawBy(t *testing.T, s *Server) *raw {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	r := &raw{t: t, in: inW, out: make(chan map[string]any, 1024), served: make(chan error, 1)}
	s.log = slog.New(slog.NewMultiHandler(s.log.Handler(),
		slog.NewTextHandler(&r.warned, &slog.HandlerOptions{Level: slog.LevelWarn})))
	go func() {
		r.served <- s.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			var msg map[string]any
			if err := json.Unmarshal(sc.Bytes(), &msg); err != nil {
				t.Errorf("bridge wrote a non-JSON line: %q", sc.Text())
			}
			r.out <- msg
		}
		close(r.out)
	}()
	t.Cleanup(func() { inW.Close(); <-r.served })
	return r
}

func (r *raw) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatal(err)
	}
}

// next returns the next message the bridge wrote that matches ok.
func (r *raw) next(ok func(map[string]any) bool) map[string]any {
	r.t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case msg, open := <-r.out:
			if !open {
				r.t.Fatal("bridge closed its output")
			}
			if ok(msg) {
				return msg
			}
		case <-timeout:
			r.t.Fatal("timed out")
		}
	}
}

// response matches the response to any of the requests ids.
func response(ids ...any) func(map[string]any) bool {
	return func(m map[string]any) bool {
		got, _ := json.Marshal(m["id"])
		_, isReq := m["method"]
		for _, id := range ids {
			if want, _ := json.Marshal(id); string(got) == string(want) && !isReq {
				return true
			}
		}
		return false
	}
}

func errCode(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func TestServe_badInputGetsErrorsAndTheConnectionLives(t *testing.T) {
	r := startRaw(t, t.TempDir())
	r.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}`)
	r.next(response(0))
	huge := `{"jsonrpc":"2.0","id":"big","method":"session/prompt","params":{"x":"` + strings.Repeat("a", MaxLine) + `"}}`
	for _, tc := range []struct {
		line string
		id   any
		code int
	}{
		{`this is not json`, nil, -32700},
		{`{"jsonrpc":"2.0","id":1,"method":"initialize"`, nil, -32700},
		{`[{"jsonrpc":"2.0","id":1,"method":"initialize"}]`, nil, -32600},
		{`"just a string"`, nil, -32600},
		{`{"foo":1}`, nil, -32600},
		{`{"jsonrpc":"2.0","id":2,"method":42}`, 2, -32600},
		{huge, "big", -32600},
		{`{"jsonrpc":"2.0","id":3,"method":"no/such/method","params":{}}`, 3, -32601},
		{`{"jsonrpc":"2.0","id":4,"method":"session/new","params":{"cwd":"/w"}}`, 4, -32602},
		{`{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"../../etc","prompt":[]}}`, 5, -32602},
		{`{"jsonrpc":"2.0","id":6,"method":"session/prompt","params":"nonsense"}`, 6, -32602},
		{`{"jsonrpc":"2.0","id":null,"method":"session/list","params":{}}`, nil, -32600},
	} {
		r.send(tc.line)
		msg := r.next(response(tc.id))
		if got := errCode(msg); got != tc.code {
			t.Errorf("%.60s: code %d, want %d (%v)", tc.line, got, tc.code, msg["error"])
		}
	}
	r.send(`{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}`)
	if msg := r.next(response(7)); msg["result"] == nil {
		t.Errorf("initialize after bad input: %v", msg)
	}
}

// ACP: clients MUST initialize before they use sessions. Requests before it
// are refused, and the connection goes on.
func TestServe_requestsBeforeInitializeAreRefused(t *testing.T) {
	r := startRaw(t, t.TempDir())
	r.send(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	if msg := r.next(response(1)); errCode(msg) != -32600 || !strings.Contains(fmt.Sprint(msg["error"]), "initialize first") {
		t.Errorf("session/new before initialize: %v", msg)
	}
	r.send(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"x"}}`) // a notification: ignored
	r.send(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":1}}`)
	r.next(response(2))
	r.send(`{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	if msg := r.next(response(3)); msg["result"] == nil {
		t.Errorf("session/new after initialize: %v", msg)
	}
}

// A request with a null id is answered (with a null id), not dropped: the
// SDK would take it for a notification, and the bridge would wait for it
// at exit.
func TestServe_nullIDIsAnsweredAtOnce(t *testing.T) {
	r := startRaw(t, t.TempDir())
	r.send(`{"jsonrpc":"2.0","id":null,"method":"initialize","params":{"protocolVersion":1}}`)
	msg := r.next(response(nil))
	if errCode(msg) != -32600 {
		t.Errorf("null id: %v", msg)
	}
	r.in.Close()
	<-r.served
	r.served <- nil
	// Not waited for at exit: the server did not give up on it after
	// DrainTimeout.
	if w := r.warned.String(); strings.Contains(w, "still unanswered") {
		t.Errorf("the exit waited for the null-id request: %s", w)
	}
}

func TestServe_stdinClosedMidTurnAnswersAndKeepsTheTranscript(t *testing.T) {
	dir := t.TempDir()
	r := startRaw(t, dir)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	id := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
	r.send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"` + id + `","prompt":[{"type":"text","text":"slow plan read"}]}}`)
	r.next(func(m map[string]any) bool {
		p, _ := m["params"].(map[string]any) // nil for a response
		u, _ := p["update"].(map[string]any)
		return u["sessionUpdate"] == "tool_call"
	})
	r.in.Close()
	resp := r.next(response(3))
	if reason := resp["result"].(map[string]any)["stopReason"]; reason != "cancelled" {
		t.Errorf("prompt after stdin closed: %v, want stopReason cancelled", resp)
	}
	select {
	case err := <-r.served:
		r.served <- err
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("bridge did not exit after stdin closed")
	}
	st, _ := persist.Open(dir)
	tr, err := st.Read(id)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, u := range bridge.Replay(tr.Entries) {
		b, _ := json.Marshal(u)
		var m map[string]any
		json.Unmarshal(b, &m)
		kinds = append(kinds, m["sessionUpdate"].(string)+":"+str(m["status"]))
	}
	want := "user_message_chunk: plan: tool_call:failed"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("transcript after stdin closed mid-turn: %s, want %s", got, want)
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// The SDK handles a prompt in its own goroutine and a cancel in its
// notification queue; whichever it gets to first, a cancel applies to the
// prompts read before it and to none read after it.
func TestServe_cancelAppliesInArrivalOrder(t *testing.T) {
	r := startRaw(t, t.TempDir())
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`)
	id := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
	prompt := func(n int, text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, n, id, text)
	}
	cancel := `{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"` + id + `"}}`
	for i := range 20 {
		n := 10 + 2*i
		r.send(cancel) // stray: nothing runs
		r.send(prompt(n, "hi"))
		if got := stopReason(r.next(response(n))); got != "end_turn" {
			t.Fatalf("round %d: prompt after a stray cancel stopped %q, want end_turn", i, got)
		}
		r.send(prompt(n+1, "slow"))
		r.send(cancel) // at once, maybe before the turn exists
		if got := stopReason(r.next(response(n + 1))); got != "cancelled" {
			t.Fatalf("round %d: prompt cancelled at once stopped %q, want cancelled", i, got)
		}
	}
}

func stopReason(m map[string]any) string {
	res, _ := m["result"].(map[string]any)
	return str(res["stopReason"])
}

// The guard stamps each prompt with its own arrival, keeps the client's
// _meta beside it, and the handler takes the stamp out again; a prompt
// whose params are not an object passes as it came (the SDK refuses it).
func TestArrivals_stampEachPromptWithItsOwnArrival(t *testing.T) {
	a := newArrivals()
	env := envelope{ID: json.RawMessage(`7`), Method: json.RawMessage(`"session/prompt"`)}
	a.seen(envelope{Method: json.RawMessage(`"session/update"`)}, []byte(`{}`))
	line := a.seen(env, []byte(`{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"s","prompt":[],"_meta":{"client":{"x":1}}}}`))
	var req struct{ Params acp.PromptRequest }
	if err := json.Unmarshal(line, &req); err != nil {
		t.Fatalf("stamped line %s: %v", line, err)
	}
	if got := arrival(&req.Params); got != 2 {
		t.Errorf("arrival = %d, want 2 (the second line read)", got)
	}
	if want := map[string]any{"client": map[string]any{"x": float64(1)}}; !reflect.DeepEqual(req.Params.Meta, want) {
		t.Errorf("the client's _meta became %v, want %v", req.Params.Meta, want)
	}
	for _, odd := range []string{`{"id":8,"method":"session/prompt","params":[1]}`, `{"id":8,"method":"session/prompt","params":{"_meta":3}}`} {
		if got := string(a.seen(env, []byte(odd))); got != odd {
			t.Errorf("seen(%s) = %s, want it unchanged", odd, got)
		}
	}
	plain := acp.PromptRequest{}
	if arrival(&plain) != 0 || plain.Meta != nil {
		t.Errorf("a prompt with no stamp has arrival %d, meta %v", arrival(&plain), plain.Meta)
	}
	if got := a.cancel("s"); got != 0 {
		t.Errorf("cancel with none seen = %d, want 0", got)
	}
}
