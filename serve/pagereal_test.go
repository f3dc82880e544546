package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestPage_inChromium_realChat drives the page in headless Chromium on
// the Server with the real web edge (ChatHandler: POST /api/chat, the
// /v1 session lists) over a bridge running the mock: open it with its
// token, prompt and see the answer stream, approve an edit and see its
// diff and the plan, save a screenshot, reopen the session from the list,
// cancel a turn and prompt again.
func TestPage_inChromium_realChat(t *testing.T) {
	bin := chromium(t)
	wb := startWebBridge(t)
	const token = "page-test-token"
	s, stderr := newServer(t, Options{Token: token, Connector: wb.connect, Agents: mockAgents})
	chat, err := NewChatHandler(wb.connect, WebOptions{StateDir: t.TempDir(), Cwd: t.TempDir(), Logger: webLogger()})
	if err != nil {
		t.Fatal(err)
	}
	closeAll := chat.Close
	for _, p := range ChatPatterns {
		if mountIfAbsent(s, p, chat, closeAll) {
			closeAll = nil // closed once
		}
	}
	if closeAll != nil { // the server mounts the edge itself, and closes it
		chat.Close()
	}
	mountIfAbsent(s, "GET /v1/agents", agentsStandIn(s.opts.Agents), nil)
	srv := start(t, s, stderr)
	b := newBrowser(t, bin)

	ex := exercisePage(t, b, srv.URL(), token)
	if !ex.diffWhileAsking {
		t.Log("NOTE: the edit's diff did not show while it asked for approval (the stream's approval request carries no diff)")
	}
	b.checkClean(token)
}

// mockAgents is the bridge's agents as the server lists them.
func mockAgents(context.Context) []AgentStatus {
	return []AgentStatus{{ID: "mock", Title: "Mock agent (offline)", Installed: true, CredentialsAvailable: true}}
}

// mountIfAbsent mounts h at pattern on s unless s routes it already (the
// edges its routes mount); it reports whether it mounted.
func mountIfAbsent(s *Server, pattern string, h http.Handler, closeAll func()) bool {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "GET", pattern
	}
	path = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(path, "x") // a path its wildcards match
	if _, got := s.mux.Handler(httptest.NewRequest(method, path, nil)); got != "/" && got != "" {
		return false
	}
	s.mount(pattern, h, closeAll)
	return true
}

// agentsStandIn is GET /v1/agents in sandbox-agent's shape, until the
// sandbox edge the server mounts serves it: a stand-in of the test.
func agentsStandIn(agents Agents) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var out []map[string]any
		for _, a := range agents(r.Context()) {
			out = append(out, map[string]any{"id": a.ID, "title": a.Title, "installed": a.Installed,
				"credentialsAvailable": a.CredentialsAvailable, "version": a.Version})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"agents": out})
	})
}
