// Package servetest holds what the serve packages' tests share: a fake
// ACP agent (FakeAgent), the real bridge on the mock agent
// (BridgeConnector) and the real agents on their fake model APIs
// (RealAgents), a logger, a Registry that is closed when the test ends,
// and the checks that nothing is left running (Settled).
package servetest

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// FakeAgent is a Connector for the tests: a tiny ACP agent that answers
// initialize, session/new (s1, s2, ...), session/load and session/resume
// (one session/update first), session/close, session/list, and
// session/prompt (a
// session/update, a session/request_permission the client must answer,
// then end_turn, or "cancelled" if it answered cancelled). "flood" writes
// params.bytes bytes of notifications as fast as it can and answers with
// how many it wrote, and how many writes failed, without waiting; "echo"
// answers with its params. Anything else is method not found.
func FakeAgent(ctx context.Context, r io.Reader, w io.Writer, agent string) error {
	a := &fake{w: w, asked: map[string]chan json.RawMessage{}}
	defer a.wg.Wait()
	defer a.cancelAsks()
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			a.send(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32700, "message": "Parse error"}})
			continue
		}
		a.handle(ctx, m.ID, m.Method, m.Params, m.Result, agent)
	}
	return sc.Err()
}

type fake struct {
	w   io.Writer
	wmu sync.Mutex
	wg  sync.WaitGroup

	mu       sync.Mutex // protects the fields below
	sessions int
	asks     int
	asked    map[string]chan json.RawMessage // by id: our requests' answers
}

func (a *fake) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	a.wmu.Lock()
	defer a.wmu.Unlock()
	_, err = a.w.Write(append(b, '\n'))
	return err
}

func (a *fake) result(id json.RawMessage, v any) {
	a.send(map[string]any{"jsonrpc": "2.0", "id": id, "result": v})
}

func (a *fake) update(session, text string) error {
	return a.send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{
		"sessionId": session, "update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}}}})
}

func (a *fake) handle(ctx context.Context, id json.RawMessage, method string, params, result json.RawMessage, agent string) {
	var p struct {
		SessionID string `json:"sessionId"`
		Bytes     int    `json:"bytes"`
	}
	json.Unmarshal(params, &p)
	switch method {
	case "":
		a.answer(id, result)
	case "initialize":
		a.result(id, map[string]any{"protocolVersion": 1, "agentCapabilities": map[string]any{"loadSession": true}, "agentInfo": map[string]any{"name": "fake", "version": agent}})
	case "session/new":
		a.mu.Lock()
		a.sessions++
		n := a.sessions
		a.mu.Unlock()
		a.result(id, map[string]any{"sessionId": fmt.Sprintf("s%d", n)})
	case "session/load", "session/resume":
		a.update(p.SessionID, "replayed")
		a.result(id, map[string]any{})
	case "session/close":
		a.result(id, map[string]any{})
	case "session/list":
		a.result(id, map[string]any{"sessions": []any{}})
	case "session/cancel":
	case "session/prompt":
		a.wg.Go(func() { a.prompt(ctx, id, p.SessionID) })
	case "echo":
		a.result(id, params)
	case "flood":
		a.result(id, a.flood(p.Bytes))
	default:
		if id != nil {
			a.send(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "Method not found"}})
		}
	}
}

// prompt streams a chunk, asks permission, and ends the turn.
func (a *fake) prompt(ctx context.Context, id json.RawMessage, session string) {
	a.update(session, "hello")
	a.mu.Lock()
	a.asks++
	askID := fmt.Sprintf("perm-%d", a.asks)
	ch := make(chan json.RawMessage, 1)
	a.asked[askID] = ch
	a.mu.Unlock()
	a.send(map[string]any{"jsonrpc": "2.0", "id": askID, "method": "session/request_permission", "params": map[string]any{
		"sessionId": session, "toolCall": map[string]any{"toolCallId": "t1"},
		"options": []any{map[string]any{"optionId": "allow", "name": "Allow", "kind": "allow_once"}}}})
	var res json.RawMessage
	select {
	case res = <-ch:
	case <-ctx.Done():
		return
	}
	stop := "end_turn"
	if strings.Contains(string(res), "cancelled") {
		stop = "cancelled"
	}
	a.result(id, map[string]any{"stopReason": stop})
}

// answer hands the client's answer to the request that asked it.
func (a *fake) answer(id, result json.RawMessage) {
	var key string
	json.Unmarshal(id, &key)
	a.mu.Lock()
	ch := a.asked[key]
	delete(a.asked, key)
	a.mu.Unlock()
	if ch != nil {
		ch <- result
	}
}

func (a *fake) cancelAsks() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, ch := range a.asked {
		close(ch)
		delete(a.asked, k)
	}
}

// flood writes n bytes of notifications, stopping at the first failed
// write.
func (a *fake) flood(n int) map[string]any {
	pad := strings.Repeat("x", 1000)
	written, failed := 0, 0
	for written < n {
		if err := a.update("flood", pad); err != nil {
			failed++
			break
		}
		written += len(pad)
	}
	return map[string]any{"written": written, "failed": failed}
}

func Logger() *slog.Logger {
	level := slog.LevelError + 4
	if os.Getenv("ACPBRIDGE_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// Msg parses a message for a test.
func Msg(t testing.TB, s string) core.Msg {
	t.Helper()
	m, err := core.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return m
}
