package serve

import (
	"context"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/pagetest"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/sandbox"
)

// TestPage_inChromium_realChat drives the page in headless Chromium on
// the Server with the real web edge (aisdk.Handler: POST /api/chat, the
// /v1 session lists) over a bridge running the mock: open it with its
// token, prompt and see the answer stream, approve an edit and see its
// diff and the plan, save a screenshot, reopen the session from the list,
// cancel a turn and prompt again; see a notice and a compaction, and the
// compaction again in the reopened session.
func TestPage_inChromium_realChat(t *testing.T) {
	bin := pagetest.Chromium(t)
	wb := webtest.StartBridge(t)
	const token = "page-test-token-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	s, stderr := newServer(t, Options{Token: token, Connector: wb.Connect, Agents: mockAgents, StateDir: t.TempDir()})
	srv := start(t, s, stderr)
	b := pagetest.NewBrowser(t, bin)

	ex := pagetest.ExercisePage(t, b, srv.URL(), token)
	if !ex.DiffWhileAsking {
		t.Log("NOTE: the edit's diff did not show while it asked for approval (the stream's approval request carries no diff)")
	}
	pagetest.NoticeAndCompaction(t, b)
	b.CheckClean(token)
}

// mockAgents is the bridge's agents as the server lists them.
func mockAgents(context.Context) []sandbox.AgentStatus {
	return []sandbox.AgentStatus{{ID: "mock", Title: "Mock agent (offline)", Installed: true, CredentialsAvailable: true}}
}
