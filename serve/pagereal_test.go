package serve

import (
	"context"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/pagetest"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/sandbox"
)

// pageToken is the page tests' token.
const pageToken = "page-test-token-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// startPage starts the Server with the real web edge (aisdk.Handler: POST
// /api/chat, the /v1 session lists) over a bridge running the mock,
// listing agents, and a headless Chromium to drive its page; it returns
// the server's URL and the browser.
func startPage(t *testing.T, agents sandbox.Agents) (string, *pagetest.Browser) {
	t.Helper()
	bin := pagetest.Chromium(t)
	wb := webtest.StartBridge(t)
	s, stderr := newServer(t, Options{Token: pageToken, Connector: wb.Connect, Agents: agents, StateDir: t.TempDir()})
	srv := start(t, s, stderr)
	return srv.URL(), pagetest.NewBrowser(t, bin)
}

// TestPage_inChromium_realChat drives the page in headless Chromium on
// the real web edge: open it with its token, prompt and see the answer
// stream, approve an edit and see its diff and the plan, save a
// screenshot, reopen the session from the list, cancel a turn and prompt
// again; see a notice and a compaction, and the compaction again in the
// reopened session; see a subagent folded under its tool call, approve its
// edit there, and see it again in the reopened session.
func TestPage_inChromium_realChat(t *testing.T) {
	url, b := startPage(t, mockAgents)
	ex := pagetest.ExercisePage(t, b, url, pageToken)
	if !ex.DiffWhileAsking {
		t.Log("NOTE: the edit's diff did not show while it asked for approval (the stream's approval request carries no diff)")
	}
	pagetest.NoticeAndCompaction(t, b)
	pagetest.Subagent(t, b)
	b.CheckClean(pageToken)
}

// TestPage_inChromium_layout checks the page's layout at a laptop's, a
// wide screen's and a phone's width, on a server where two agents are not
// installed and say why at length (as doctor's reasons do): nothing
// scrolls sideways, the agent picker stays narrow, and the sessions list
// can be reached at every width.
func TestPage_inChromium_layout(t *testing.T) {
	url, b := startPage(t, func(context.Context) []sandbox.AgentStatus {
		return []sandbox.AgentStatus{
			{ID: "mock", Title: "Mock agent (offline)", Installed: true, CredentialsAvailable: true},
			{ID: "codex", Title: "Codex", Problem: "no codex on PATH, nor in /home/someone/.local/share/acpbridge/tools/codex/node_modules/.bin; looked for OPENAI_API_KEY and CODEX_API_KEY; run: npm install -g @openai/codex@0.169.0"},
			{ID: "claude", Title: "Claude Code", Problem: "no claude on PATH; run: npm install -g @anthropic-ai/claude-code"},
		}
	})
	pagetest.CheckLayout(t, b, url, pageToken)
	b.CheckClean(pageToken)
}

// mockAgents is the bridge's agents as the server lists them.
func mockAgents(context.Context) []sandbox.AgentStatus {
	return []sandbox.AgentStatus{{ID: "mock", Title: "Mock agent (offline)", Installed: true, CredentialsAvailable: true}}
}
