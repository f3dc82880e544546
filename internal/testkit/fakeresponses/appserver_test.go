package fakeresponses

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
)

// appServer is a minimal, synchronous client of `codex app-server` for
// these tests: one goroutine reads stdout lines into a channel, and the
// test consumes them in order with call and until.
type appServer struct {
	t       testing.TB
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan rpcMsg
	pending []rpcMsg // read but not yet consumed
	all     []rpcMsg // every message the server sent, in order
	nextID  int
	stderr  *syncbuf.Buffer
	ctx     context.Context
	started time.Time
	closeFn func()
}

// close closes codex's stdin and waits for it to exit (at most 10s).
func (a *appServer) close() { a.closeFn() }

// use makes a report to t (a subtest) until the returned func is called:
// defer a.use(t)().
func (a *appServer) use(t testing.TB) func() {
	prev := a.t
	a.t = t
	return func() { a.t = prev }
}

// rpcMsg is one line from the server.
type rpcMsg struct {
	ID          json.RawMessage `json:"id,omitempty"`
	Method      string          `json:"method,omitempty"`
	Params      json.RawMessage `json:"params,omitempty"`
	Result      json.RawMessage `json:"result,omitempty"`
	Error       *rpcError       `json:"error,omitempty"`
	EmittedAtMs *int64          `json:"emittedAtMs,omitempty"`
	JSONRPC     *string         `json:"jsonrpc,omitempty"`
	raw         []byte
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (m rpcMsg) isRequest() bool      { return m.Method != "" && len(m.ID) > 0 }
func (m rpcMsg) isNotification() bool { return m.Method != "" && len(m.ID) == 0 }
func (m rpcMsg) String() string       { return string(m.raw) }

// params decodes the message's params into v.
func (m rpcMsg) params(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(m.Params, v); err != nil {
		t.Fatalf("params of %s: %v", m.raw, err)
	}
}

// codexEnv is a fake, a CODEX_HOME for it and a workspace.
type codexEnv struct {
	fake                       *Server
	bin, home, codexHome, work string
}

func newCodexEnv(t *testing.T, opts HomeOptions) *codexEnv {
	bin := CodexBin(t)
	fake := New(nil)
	t.Cleanup(fake.Close)
	home, codexHome := Home(t, fake.URL, opts)
	work := filepath.Join(home, "project")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	return &codexEnv{fake: fake, bin: bin, home: home, codexHome: codexHome, work: work}
}

// start starts `codex app-server -c tools.update_plan={enabled=true}` in
// the workspace and does the handshake.
func (e *codexEnv) start(t *testing.T) *appServer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	cmd := exec.Command(e.bin, "app-server", "-c", "tools.update_plan={enabled=true}")
	cmd.Dir = e.work
	cmd.Env = Env(e.home, e.codexHome)
	cmd.SysProcAttr = testproc.GroupAttr()
	a := &appServer{t: t, cmd: cmd, lines: make(chan rpcMsg, 1024), stderr: &syncbuf.Buffer{}, ctx: ctx, nextID: 1}
	cmd.Stderr = a.stderr
	var err error
	if a.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.started = time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(a.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var m rpcMsg
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				m = rpcMsg{Method: "<not JSON>"}
			}
			m.raw = append([]byte(nil), sc.Bytes()...)
			a.lines <- m
		}
	}()
	a.closeFn = sync.OnceFunc(func() {
		a.stdin.Close()
		exited := make(chan error, 1)
		go func() {
			for range a.lines { // drain, so that the reader never blocks
			}
			<-readerDone
			exited <- cmd.Wait()
		}()
		select {
		case err := <-exited:
			if err != nil {
				t.Errorf("codex app-server: %v\nstderr:\n%s", err, tail(a.stderr.String()))
			}
		case <-time.After(time.Minute):
			_ = testproc.KillGroup(cmd.Process.Pid)
			<-exited
			t.Errorf("codex app-server did not exit within a minute of stdin closing")
		}
	})
	t.Cleanup(a.closeFn)

	res := a.call("initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "acpbridge-test", "title": "acpbridge test", "version": "0.0.1"},
		"capabilities": map[string]any{"experimentalApi": false},
	})
	var init struct {
		UserAgent string `json:"userAgent"`
		CodexHome string `json:"codexHome"`
	}
	if err := json.Unmarshal(res, &init); err != nil || init.UserAgent == "" {
		t.Fatalf("initialize result %s: %v", res, err)
	}
	t.Logf("initialize answered after %v: userAgent %q", time.Since(a.started).Round(time.Millisecond), init.UserAgent)
	a.notify("initialized", nil)
	return a
}

func tail(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

func (a *appServer) send(v any) {
	a.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := a.stdin.Write(append(b, '\n')); err != nil {
		a.t.Fatalf("writing to codex: %v", err)
	}
}

func (a *appServer) notify(method string, params any) {
	a.t.Helper()
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	a.send(m)
}

// respond answers the server's request id.
func (a *appServer) respond(id json.RawMessage, result any) {
	a.t.Helper()
	a.send(map[string]any{"id": id, "result": result})
}

// next is the next message from the server; it fails the test when the
// server's stdout ends or the test's time is up.
func (a *appServer) next() rpcMsg {
	a.t.Helper()
	if len(a.pending) > 0 {
		m := a.pending[0]
		a.pending = a.pending[1:]
		return m
	}
	select {
	case m, ok := <-a.lines:
		if !ok {
			a.t.Fatalf("codex's stdout ended\nstderr:\n%s", tail(a.stderr.String()))
		}
		a.all = append(a.all, m)
		return m
	case <-a.ctx.Done():
		a.t.Fatalf("timed out waiting for codex\nstderr:\n%s", tail(a.stderr.String()))
	}
	return rpcMsg{}
}

// call sends a request and returns its result, keeping the messages that
// came before the response for until. An error response fails the test.
func (a *appServer) call(method string, params any) json.RawMessage {
	a.t.Helper()
	res, rerr := a.tryCall(method, params)
	if rerr != nil {
		a.t.Fatalf("%s: error %d %s", method, rerr.Code, rerr.Message)
	}
	return res
}

func (a *appServer) tryCall(method string, params any) (json.RawMessage, *rpcError) {
	a.t.Helper()
	id := a.nextID
	a.nextID++
	m := map[string]any{"id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	a.send(m)
	want := fmt.Sprint(id)
	var skipped []rpcMsg
	for {
		msg := a.next()
		if msg.Method == "" && string(msg.ID) == want {
			a.pending = append(skipped, a.pending...)
			return msg.Result, msg.Error
		}
		skipped = append(skipped, msg)
	}
}

// until consumes messages up to and including the first one for which
// pred is true, and returns it and the ones before it.
func (a *appServer) until(pred func(rpcMsg) bool) (rpcMsg, []rpcMsg) {
	a.t.Helper()
	var seen []rpcMsg
	for {
		m := a.next()
		if pred(m) {
			return m, seen
		}
		seen = append(seen, m)
	}
}

func method(name string) func(rpcMsg) bool {
	return func(m rpcMsg) bool { return m.Method == name }
}

// startThread calls thread/start with params and returns the thread id.
func (a *appServer) startThread(params map[string]any) (string, json.RawMessage) {
	a.t.Helper()
	res := a.call("thread/start", params)
	var r struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Thread.ID == "" {
		a.t.Fatalf("thread/start result %s: %v", res, err)
	}
	return r.Thread.ID, res
}

// turn is what one turn brought.
type turn struct {
	id        string
	msgs      []rpcMsg // every message from turn/start's response to turn/completed
	completed turnCompleted
}

type turnCompleted struct {
	ThreadID string `json:"threadId"`
	Turn     struct {
		ID     string          `json:"id"`
		Status string          `json:"status"`
		Error  json.RawMessage `json:"error"`
		Items  []codexItem     `json:"items"`
	} `json:"turn"`
}

type codexItem struct {
	Type             string            `json:"type"`
	ID               string            `json:"id"`
	Status           string            `json:"status"`
	Text             string            `json:"text"`
	Command          string            `json:"command"`
	Cwd              string            `json:"cwd"`
	Source           string            `json:"source"`
	AggregatedOutput *string           `json:"aggregatedOutput"`
	ExitCode         *int              `json:"exitCode"`
	Summary          []string          `json:"summary"`
	Changes          []json.RawMessage `json:"changes"`
	Content          []json.RawMessage `json:"content"`
}

type itemParams struct {
	Item     codexItem `json:"item"`
	ThreadID string    `json:"threadId"`
	TurnID   string    `json:"turnId"`
}

// runTurn starts a turn with text and consumes its messages up to
// turn/completed, answering server requests with answer (which may be
// nil when none are expected).
func (a *appServer) runTurn(thread, text string, answer func(rpcMsg) any) turn {
	a.t.Helper()
	t0 := time.Now()
	res := a.call("turn/start", map[string]any{
		"threadId": thread,
		"input":    []any{map[string]any{"type": "text", "text": text, "text_elements": []any{}}},
	})
	var r struct {
		Turn struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"turn"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.Turn.ID == "" {
		a.t.Fatalf("turn/start result %s: %v", res, err)
	}
	tr := turn{id: r.Turn.ID}
	for {
		m := a.next()
		tr.msgs = append(tr.msgs, m)
		if m.isRequest() {
			if answer == nil {
				a.t.Fatalf("unexpected server request %s", m)
			}
			a.respond(m.ID, answer(m))
			continue
		}
		if m.Method == "turn/completed" {
			m.params(a.t, &tr.completed)
			if tr.completed.Turn.ID == tr.id {
				a.t.Logf("turn %q: %s after %v", text, tr.completed.Turn.Status, time.Since(t0).Round(time.Millisecond))
				return tr
			}
		}
	}
}

// items are the items of the turn's item/completed notifications.
func (tr turn) items(t testing.TB) []codexItem {
	var out []codexItem
	for _, m := range tr.msgs {
		if m.Method == "item/completed" {
			var p itemParams
			m.params(t, &p)
			out = append(out, p.Item)
		}
	}
	return out
}

// item is the turn's completed item of that type (the last one), or fails.
func (tr turn) item(t testing.TB, typ string) codexItem {
	t.Helper()
	items := tr.items(t)
	for i := len(items) - 1; i >= 0; i-- {
		if items[i].Type == typ {
			return items[i]
		}
	}
	t.Fatalf("no completed %s item in turn:\n%s", typ, tr.dump())
	return codexItem{}
}

func (tr turn) find(method string) (rpcMsg, bool) {
	for _, m := range tr.msgs {
		if m.Method == method {
			return m, true
		}
	}
	return rpcMsg{}, false
}

func (tr turn) dump() string {
	var b strings.Builder
	for _, m := range tr.msgs {
		s := m.String()
		if len(s) > 600 {
			s = s[:600] + "…"
		}
		b.WriteString(s + "\n")
	}
	return b.String()
}
