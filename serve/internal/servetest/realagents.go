package servetest

import (
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/fakechat"
	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/translators/claude"
	"github.com/acpbridge/acpbridge/translators/codex"
	"github.com/acpbridge/acpbridge/translators/opencode"
)

// The real, pinned claude, codex and opencode CLIs (scripts/install-tools.sh) on
// their fake model APIs, for the end-to-end tests of every edge; a test
// skips loudly when a CLI is missing, and fails under
// ACPBRIDGE_REQUIRE_E2E=1.

// RealAgent is one agent CLI on its fake, and what to ask it.
type RealAgent struct {
	Backend func(t *testing.T) agent.Backend
	Env     []string // for acpclient.mjs: ACP_E2E_PROMPT, ACP_E2E_MODE
	Sandbox []string // for sandboxclient.mjs: SANDBOX_E2E_AGENT, _PROMPT, _MODE
	V2      []string // for sdkclient.RunV2: ACP_V2_PROMPT, ACP_V2_MODE
}

var RealAgents = map[string]RealAgent{
	"claude": {
		Backend: func(t *testing.T) agent.Backend {
			bin := fakemessages.ClaudeBin(t)
			srv := fakemessages.New(fakemessages.Directives())
			t.Cleanup(srv.Close)
			return claude.New(claude.Options{Path: bin, Env: fakemessages.Env(srv.URL, t.TempDir()), ExtraArgs: []string{"--setting-sources", ""}})
		},
		Env:     []string{"ACP_E2E_PROMPT=run: touch made.txt && echo made"},
		Sandbox: []string{"SANDBOX_E2E_AGENT=claude", "SANDBOX_E2E_PROMPT=run: touch made.txt && echo made"},
		V2:      []string{"ACP_V2_PROMPT=run: touch made.txt && echo made"},
	},
	"codex": {
		Backend: func(t *testing.T) agent.Backend {
			bin := fakeresponses.CodexBin(t)
			srv := fakeresponses.New(fakeresponses.Directives())
			t.Cleanup(srv.Close)
			home, codexHome := fakeresponses.Home(t, srv.URL, fakeresponses.HomeOptions{})
			return codex.New(codex.Options{Path: bin, Env: fakeresponses.Env(home, codexHome)})
		},
		Env:     []string{"ACP_E2E_PROMPT=run: mkdir -p made && echo made", "ACP_E2E_MODE=ask"},
		Sandbox: []string{"SANDBOX_E2E_AGENT=codex", "SANDBOX_E2E_PROMPT=run: mkdir -p made && echo made", "SANDBOX_E2E_MODE=ask"},
		V2:      []string{"ACP_V2_PROMPT=run: mkdir -p made && echo made", "ACP_V2_MODE=ask"},
	},
	"opencode": {
		Backend: func(t *testing.T) agent.Backend {
			bin := fakechat.OpencodeBin(t)
			srv := fakechat.New(fakechat.Directives())
			t.Cleanup(srv.Close)
			home := fakechat.Home(t, srv.URL)
			return opencode.New(opencode.Options{Path: bin, Env: fakechat.Env(home, fakechat.ConfigPath(home))})
		},
		Env: []string{"ACP_E2E_PROMPT=run: touch made.txt && echo made"},
		V2:  []string{"ACP_V2_PROMPT=run: touch made.txt && echo made"},
	},
}
