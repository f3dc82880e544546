// Package fakehttp is what the fake model servers (the Claude and Codex
// fakes) share and no API defines: a server on loopback, the requests it
// recorded, the handlers still running, a Close that cuts off streams, and
// server-sent event framing.
package fakehttp

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"time"
)

// Host serves a fake on 127.0.0.1 and records its decoded requests.
type Host[R any] struct {
	srv      *httptest.Server
	done     chan struct{} // closed by Close: delays stop
	once     sync.Once
	inFlight atomic.Int32 // handlers running

	mu   sync.Mutex // protects reqs
	reqs []R
}

// New returns a host for h that listens but does not serve yet: set
// whatever h reads first, then Start it. (A stray client, such as an agent
// a previous test left retrying against a port now reused, can connect the
// moment the port listens.)
func New[R any](h http.HandlerFunc) *Host[R] {
	host := &Host[R]{done: make(chan struct{})}
	host.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host.inFlight.Add(1)
		defer host.inFlight.Add(-1)
		h(w, r)
	}))
	return host
}

// InFlight is how many handlers are running.
func (h *Host[R]) InFlight() int { return int(h.inFlight.Load()) }

// WaitIdle waits until no handler runs; it reports how many still do
// after within.
func (h *Host[R]) WaitIdle(within time.Duration) error {
	for deadline := time.Now().Add(within); h.InFlight() != 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d handlers still running after %v", h.InFlight(), within)
		}
	}
	return nil
}

// Start serves.
func (h *Host[R]) Start() { h.srv.Start() }

// URL is the server's base URL, e.g. "http://127.0.0.1:41234".
func (h *Host[R]) URL() string { return h.srv.URL }

// Close stops the server: streams still running are cut off, and it
// returns once every handler has returned.
func (h *Host[R]) Close() {
	h.once.Do(func() {
		close(h.done)
		h.srv.CloseClientConnections()
		h.srv.Close()
	})
}

// Record keeps a request.
func (h *Host[R]) Record(r R) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reqs = append(h.reqs, r)
}

// Requests returns the requests recorded so far, in order.
func (h *Host[R]) Requests() []R {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]R(nil), h.reqs...)
}

// Sleep waits d; it reports false if ctx ended or the host closed first.
func (h *Host[R]) Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-h.done:
		return false
	}
}

// Raw is SSE data written as it is, not as JSON (e.g. "[DONE]").
type Raw string

// SSE starts a text/event-stream reply and returns the writer of its
// events: an "event: typ" line unless typ is "", then data as JSON (or
// as it is, for Raw), and a blank line, flushed. The writer reports false
// once a write fails (the client is gone).
func SSE(w http.ResponseWriter) func(typ string, data any) bool {
	fl, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return func(typ string, data any) bool {
		b, err := []byte(nil), error(nil)
		if raw, ok := data.(Raw); ok {
			b = []byte(raw)
		} else if b, err = json.Marshal(data); err != nil {
			return false
		}
		if typ != "" {
			if _, err := fmt.Fprintf(w, "event: %s\n", typ); err != nil {
				return false
			}
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
}

// WriteJSON answers with status and v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// OpenAIErrorType is the error type an OpenAI API gives an HTTP status.
func OpenAIErrorType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

// WriteOpenAIError answers an OpenAI-style error body:
// {"error":{"message","type","param":null,"code"}}, code null when "".
func WriteOpenAIError(w http.ResponseWriter, status int, typ, code, msg string) {
	var c any
	if code != "" {
		c = code
	}
	WriteJSON(w, status, map[string]any{
		"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": c},
	})
}

// WriteScriptedError answers the error a fake's script asked for: the
// status's usual type and a message naming fake when the script gave none.
func WriteScriptedError(w http.ResponseWriter, fake string, status int, typ, code, msg string) {
	if typ == "" {
		typ = OpenAIErrorType(status)
	}
	if msg == "" {
		msg = fmt.Sprintf("%s: scripted %d %s", fake, status, typ)
	}
	WriteOpenAIError(w, status, typ, code, msg)
}
