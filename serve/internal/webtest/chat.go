package webtest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// UserMsg is a UIMessage from the user saying text.
func UserMsg(id, text string) map[string]any {
	return map[string]any{"id": id, "role": "user", "parts": []any{map[string]any{"type": "text", "text": text}}}
}

// ChatTurn POSTs a chat request and returns its events; it fails unless
// the answer is 200.
func ChatTurn(t *testing.T, base, id string, messages ...any) []map[string]any {
	t.Helper()
	resp := Post(t, base+"/api/chat", map[string]any{"id": id, "trigger": "submit-message", "messages": messages})
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /api/chat %s: %d %s", id, resp.StatusCode, b)
	}
	return SSEEvents(t, resp.Body)
}

// WantError checks that resp is a JSON error of status whose message has
// want.
func WantError(t *testing.T, what string, resp *http.Response, status int, want string) {
	t.Helper()
	defer resp.Body.Close()
	var body struct{ Error string }
	b, _ := io.ReadAll(resp.Body)
	json.Unmarshal(b, &body)
	if resp.StatusCode != status || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body.Error, want) {
		t.Errorf("%s: %d %s %q, want %d and an error saying %q", what, resp.StatusCode, resp.Header.Get("Content-Type"), b, status, want)
	}
}

// SessionOf is the session id a stream's start chunk gives.
func SessionOf(t *testing.T, events []map[string]any) string {
	t.Helper()
	start := Find(events, "start")
	meta, _ := start["messageMetadata"].(map[string]any)
	id, _ := meta["sessionId"].(string)
	if id == "" {
		t.Fatalf("no session id in the start chunk: %v", start)
	}
	return id
}

// GetMessages is GET /v1/sessions/{id}/messages.
func GetMessages(t *testing.T, base, id string) []map[string]any {
	t.Helper()
	resp, err := http.Get(base + "/v1/sessions/" + id + "/messages")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var msgs []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&msgs); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET messages: %d %v", resp.StatusCode, err)
	}
	return msgs
}

func MustJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// StartStream POSTs to url with ctx and returns the response, to be read
// as it streams.
func StartStream(t *testing.T, ctx context.Context, url string, body any) *http.Response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("POST %s: %d", url, resp.StatusCode)
	}
	return resp
}

// ReadUntil reads SSE data lines from r until one contains want.
func ReadUntil(t *testing.T, r *bufio.Reader, want string) {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the stream ended before %q: %v", want, err)
		}
		if strings.HasPrefix(line, "data: ") && strings.Contains(line, want) {
			return
		}
	}
}
