package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/serve/internal/core"
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

// webBridge is a bridge running the mock agent, its transcripts in dir,
// served to in-process connections as acpbridge serve serves them
// (edge.Server.ServeConn).
type webBridge struct {
	connect core.Connector
	dir     string
	m       *bridge.Manager
	stopped sync.Once
}

// startWebBridge starts a bridge with its transcripts in a new directory.
func startWebBridge(t testing.TB) *webBridge { return startWebBridgeIn(t, t.TempDir()) }

// startWebBridgeIn starts a bridge with its transcripts in dir; it stops
// at the end of the test if not before.
func startWebBridgeIn(t testing.TB, dir string) *webBridge {
	t.Helper()
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
	wb := &webBridge{connect: edge.NewServer(m, "test", webLogger()).ServeConn, dir: dir, m: m}
	t.Cleanup(func() { wb.stop(t) })
	return wb
}

// stop shuts the bridge down (once).
func (wb *webBridge) stop(t testing.TB) {
	wb.stopped.Do(func() {
		if err := wb.m.Shutdown(); err != nil {
			t.Error(err)
		}
	})
}

// webServer is the web edges mounted on an httptest server (127.0.0.1).
type webServer struct {
	*httptest.Server
	chat    *ChatHandler
	agui    *AGUIHandler
	reg     *core.Registry
	stopped sync.Once
}

// startWebServer serves a ChatHandler and an AGUIHandler on wb, with
// their maps in stateDir ("" for none); they stop at the end of the test
// if not before, and before the bridge.
func startWebServer(t testing.TB, wb *webBridge, stateDir string) *webServer {
	t.Helper()
	return startWebServerWith(t, wb, WebOptions{StateDir: stateDir})
}

// startWebServerWith is startWebServer with options (a cwd, the logger
// and, as acpbridge serve shares one among its edges, a Registry are
// filled in).
func startWebServerWith(t testing.TB, wb *webBridge, o WebOptions) *webServer {
	t.Helper()
	if o.Cwd == "" {
		o.Cwd = t.TempDir()
	}
	o.Logger = webLogger()
	if o.Registry == nil {
		o.Registry = core.NewRegistry(core.Limits{}, webLogger())
	}
	chat := NewChatHandler(wb.connect, o)
	agui := NewAGUIHandler(wb.connect, o)
	mux := http.NewServeMux()
	for _, p := range ChatPatterns {
		mux.Handle(p, chat)
	}
	mux.Handle(AGUIPattern, agui)
	ws := &webServer{Server: httptest.NewServer(mux), chat: chat, agui: agui, reg: o.Registry}
	t.Cleanup(ws.stop)
	return ws
}

// stop closes the server, the registry's connections and the handlers
// (once), in the order acpbridge serve does.
func (ws *webServer) stop() {
	ws.stopped.Do(func() {
		ws.Close()
		ws.reg.CloseAll(context.Background())
		ws.chat.Close()
		ws.agui.Close()
	})
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
