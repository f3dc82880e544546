package webtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
	"github.com/acpbridge/acpbridge/translators/mock"
)

// Bridge is a bridge running the mock agent, its transcripts in dir,
// served to in-process connections as acpbridge serve serves them
// (edge.Server.ServeConn).
type Bridge struct {
	Connect core.Connector
	dir     string
	m       *bridge.Manager
	stopped sync.Once
}

// StartBridge starts a bridge with its transcripts in a new directory.
func StartBridge(t testing.TB) *Bridge { return StartBridgeIn(t, t.TempDir()) }

// StartBridgeIn starts a bridge with its transcripts in dir; it stops
// at the end of the test if not before.
func StartBridgeIn(t testing.TB, dir string) *Bridge {
	t.Helper()
	m, connect := servetest.Bridge(t, dir, mock.New())
	wb := &Bridge{Connect: connect, dir: dir, m: m}
	t.Cleanup(func() { wb.Stop(t) })
	return wb
}

// Stop shuts the bridge down (once).
func (wb *Bridge) Stop(t testing.TB) {
	wb.stopped.Do(func() {
		if err := wb.m.Shutdown(); err != nil {
			t.Error(err)
		}
	})
}

// SSEEvents reads an SSE body's data lines, each decoded as JSON; the
// AI SDK's [DONE] comes as the string "[DONE]".
func SSEEvents(t testing.TB, body io.Reader) []map[string]any {
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

// Post POSTs v as JSON to url and returns the response.
func Post(t testing.TB, url string, v any) *http.Response {
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

// Types is the events' types, in order.
func Types(events []map[string]any) []string {
	var ts []string
	for _, e := range events {
		ts = append(ts, e["type"].(string))
	}
	return ts
}

// TextOf is what the events' text deltas say.
func TextOf(events []map[string]any, deltaType string) string {
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

// Find is the first event of type typ, or nil.
func Find(events []map[string]any, typ string) map[string]any {
	for _, e := range events {
		if e["type"] == typ {
			return e
		}
	}
	return nil
}
