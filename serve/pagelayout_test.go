package serve

import (
	"context"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/pagetest"
	"github.com/acpbridge/acpbridge/serve/sandbox"
)

// TestPage_inChromium_layout checks the page's layout at a laptop's, a
// wide screen's and a phone's width, on a server where two agents are not
// installed and say why at length (as doctor's reasons do): nothing
// scrolls sideways, the agent picker stays narrow, and the sessions list
// can be reached at every width.
func TestPage_inChromium_layout(t *testing.T) {
	bin := pagetest.Chromium(t)
	wb := startWebBridge(t)
	const token = "layout-test-token-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	agents := func(context.Context) []sandbox.AgentStatus {
		return []sandbox.AgentStatus{
			{ID: "mock", Title: "Mock agent (offline)", Installed: true, CredentialsAvailable: true},
			{ID: "codex", Title: "Codex", Problem: "no codex on PATH, nor in /home/someone/.local/share/acpbridge/tools/codex/node_modules/.bin; looked for OPENAI_API_KEY and CODEX_API_KEY; run: npm install -g @openai/codex@0.169.0"},
			{ID: "claude", Title: "Claude Code", Problem: "no claude on PATH; run: npm install -g @anthropic-ai/claude-code"},
		}
	}
	s, stderr := newServer(t, Options{Token: token, Connector: wb.connect, Agents: agents, StateDir: t.TempDir()})
	srv := start(t, s, stderr)
	b := pagetest.NewBrowser(t, bin)
	pagetest.CheckLayout(t, b, srv.URL(), token)
	b.CheckClean(token)
}
