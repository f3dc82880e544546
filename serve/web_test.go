package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
)

// webLogger logs at error level, or everything with ACPBRIDGE_TEST_LOG set.
func webLogger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("ACPBRIDGE_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// webBridge is a bridge running the mock agent, its transcripts in a
// directory of the test, served to in-process connections as acpbridge
// serve serves them (acp.Server.ServeConn).
type webBridge struct {
	connect  Connector
	stateDir string
	m        *bridge.Manager
}

func startWebBridge(t testing.TB) *webBridge {
	t.Helper()
	dir := t.TempDir()
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := mock.New()
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAuto, Logger: webLogger(), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return &webBridge{connect: acp.NewServer(m, "test", webLogger()).ServeConn, stateDir: dir, m: m}
}

// webServer is the web edges mounted on an httptest server (127.0.0.1).
type webServer struct {
	*httptest.Server
	chat *ChatHandler
	agui *AGUIHandler
}

// startWebServer serves a ChatHandler and an AGUIHandler on wb, with
// their maps in stateDir ("" for none); both close at the end of the test,
// before the bridge.
func startWebServer(t testing.TB, wb *webBridge, stateDir string) *webServer {
	t.Helper()
	o := WebOptions{StateDir: stateDir, Cwd: t.TempDir(), Logger: webLogger()}
	chat, err := NewChatHandler(wb.connect, o)
	if err != nil {
		t.Fatal(err)
	}
	agui, err := NewAGUIHandler(wb.connect, o)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, p := range ChatPatterns {
		mux.Handle(p, chat)
	}
	mux.Handle(AGUIPattern, agui)
	ws := &webServer{Server: httptest.NewServer(mux), chat: chat, agui: agui}
	t.Cleanup(func() {
		ws.Close()
		chat.Close()
		agui.Close()
	})
	return ws
}

// sseEvents reads an SSE body's data lines, each decoded as JSON; the
// AI SDK's [DONE] comes as the string "[DONE]".
func sseEvents(t testing.TB, body io.Reader) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			out = append(out, map[string]any{"type": "[DONE]"})
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("an SSE data line is not JSON: %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// post POSTs v as JSON to url and returns the response.
func post(t testing.TB, url string, v any) *http.Response {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// types is the events' types, in order.
func types(events []map[string]any) []string {
	var ts []string
	for _, e := range events {
		ts = append(ts, e["type"].(string))
	}
	return ts
}

// textOf is what the events' text deltas say.
func textOf(events []map[string]any, deltaType string) string {
	var b strings.Builder
	for _, e := range events {
		if e["type"] == deltaType {
			if s, ok := e["delta"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

// find is the first event of type typ, or nil.
func find(events []map[string]any, typ string) map[string]any {
	for _, e := range events {
		if e["type"] == typ {
			return e
		}
	}
	return nil
}
