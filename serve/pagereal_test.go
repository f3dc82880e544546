package serve

import (
	"context"
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
	const token = "page-test-token-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	s, stderr := newServer(t, Options{Token: token, Connector: wb.connect, Agents: mockAgents, StateDir: t.TempDir()})
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
