package serve

import (
	"slices"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/translators/claude"
	"github.com/acpbridge/acpbridge/translators/codex"
)

// The tests in this file run the real, pinned claude and codex CLIs
// (scripts/install-tools.sh) against their fake model APIs, behind /acp,
// driven by the ACP TypeScript SDK's own clients over Streamable HTTP and
// WebSocket (testdata/acpclient.mjs): a turn whose command the agent asks
// permission for, a cancelled turn, session/list, and a second connection
// that loads the session after the first ended and prompts it. They skip
// loudly when a CLI or the SDK is missing, and fail instead under
// ACPBRIDGE_REQUIRE_E2E=1.

// realAgent is one agent CLI on its fake, and what to ask it.
type realAgent struct {
	backend func(t *testing.T) agent.Backend
	env     []string // for acpclient.mjs: ACP_E2E_PROMPT, ACP_E2E_MODE
	sandbox []string // for sandboxclient.mjs: SANDBOX_E2E_AGENT, _PROMPT, _MODE
}

var realAgents = map[string]realAgent{
	"claude": {
		backend: func(t *testing.T) agent.Backend {
			bin := fakemessages.ClaudeBin(t)
			srv := fakemessages.New(fakemessages.Directives())
			t.Cleanup(srv.Close)
			return claude.New(claude.Options{Path: bin, Env: fakemessages.Env(srv.URL, t.TempDir()), ExtraArgs: []string{"--setting-sources", ""}})
		},
		env:     []string{"ACP_E2E_PROMPT=run: touch made.txt && echo made"},
		sandbox: []string{"SANDBOX_E2E_AGENT=claude", "SANDBOX_E2E_PROMPT=run: touch made.txt && echo made"},
	},
	"codex": {
		backend: func(t *testing.T) agent.Backend {
			bin := fakeresponses.CodexBin(t)
			srv := fakeresponses.New(fakeresponses.Directives())
			t.Cleanup(srv.Close)
			home, codexHome := fakeresponses.Home(t, srv.URL, fakeresponses.HomeOptions{})
			return codex.New(codex.Options{Path: bin, Env: fakeresponses.Env(home, codexHome)})
		},
		env:     []string{"ACP_E2E_PROMPT=run: mkdir -p made && echo made", "ACP_E2E_MODE=ask"},
		sandbox: []string{"SANDBOX_E2E_AGENT=codex", "SANDBOX_E2E_PROMPT=run: mkdir -p made && echo made", "SANDBOX_E2E_MODE=ask"},
	},
}

func TestACPHandler_typeScriptSDK_realAgents(t *testing.T) {
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			a := realAgents[name]
			b := a.backend(t)
			node, dir := sdkScript(t)
			s := newACPServer(t, Limits{}, bridgeConnectorOn(t, b))
			for _, mode := range []string{"http", "ws"} {
				t.Run(mode, func(t *testing.T) {
					checkRealRun(t, runSDK(t, node, dir, mode, s.URL+"/acp", a.env...))
				})
			}
		})
	}
}

func checkRealRun(t *testing.T, run sdkRun) {
	t.Helper()
	if run.Agent != "acpbridge" || run.SessionID == "" {
		t.Errorf("agent %q, session %q", run.Agent, run.SessionID)
	}
	if run.First != "end_turn" || run.Second != "cancelled" || run.Third != "end_turn" {
		t.Errorf("stop reasons %q, %q (cancelled), %q; want end_turn, cancelled, end_turn", run.First, run.Second, run.Third)
	}
	if len(run.Asks) != 1 || !strings.Contains(run.Asks[0], "made") {
		t.Errorf("permission asks %q, want the command's", run.Asks)
	}
	for _, kind := range []string{"tool_call", "tool_call_update", "agent_message_chunk"} {
		if !slices.Contains(run.Kinds, kind) {
			t.Errorf("updates %v lack %s", run.Kinds, kind)
		}
	}
	if !slices.Contains(run.Listed, run.SessionID) || !slices.Contains(run.Listed, run.Other) {
		t.Errorf("session/list %v lacks %s or %s", run.Listed, run.SessionID, run.Other)
	}
	if !strings.Contains(run.Replayed, "run: ") {
		t.Errorf("the load replayed the prompts %q", run.Replayed)
	}
	if !strings.Contains(run.ThirdAnswer, "hello again") {
		t.Errorf("the loaded session's answer %q", run.ThirdAnswer)
	}
}

// sandbox-agent's SDK, unchanged, on the real claude and codex behind
// /v1: createSession for the agent, a prompt streamed to onEvent whose
// command the SDK's onPermissionRequest allows, list_models, listSessions,
// resumeSession from a second client, session/load, destroySession.
func TestSandboxHandler_sdk_realAgents(t *testing.T) {
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			a := realAgents[name]
			b := a.backend(t)
			node, dir := sandboxScript(t)
			r, _ := startSandboxServerOn(t, SandboxOptions{}, b)
			run := runSandboxSDK(t, node, dir, r, a.sandbox...)
			checkRealSandboxRun(t, name, run)
		})
	}
}

func checkRealSandboxRun(t *testing.T, name string, run sandboxRun) {
	t.Helper()
	if !slices.Equal(run.Agents, []string{name}) || run.Health != "ok" || run.SessionID == "" || run.AgentSessionID == "" {
		t.Errorf("agents %v, health %q, session %q (agent session %q)", run.Agents, run.Health, run.SessionID, run.AgentSessionID)
	}
	if len(run.Asks) == 0 || !strings.Contains(run.Asks[0].Title, "made") || run.RespondError != "" {
		t.Errorf("permission asks %+v (respondPermission: %q), want the command's", run.Asks, run.RespondError)
	}
	if run.First != "end_turn" || run.Again != "end_turn" || run.AfterLoad != "end_turn" {
		t.Errorf("stop reasons %q, %q (resumed), %q (loaded); want end_turn", run.First, run.Again, run.AfterLoad)
	}
	for _, kind := range []string{"tool_call", "tool_call_update", "agent_message_chunk"} {
		if !slices.Contains(run.Kinds, kind) {
			t.Errorf("events %v lack %s", run.Kinds, kind)
		}
	}
	if len(run.Models) == 0 || !slices.Contains(run.Listed, run.SessionID) {
		t.Errorf("list_models %v; listSessions %v lacks %s", run.Models, run.Listed, run.SessionID)
	}
	// The SDK's resumeSession pastes the history (its first prompt's run:
	// directive too) into the next prompt, which the fake model acts on
	// first: the resumed turn answers, whatever it says.
	if run.AgainAnswer == "" || !slices.Contains(run.BridgeListed, run.AgentSessionID) || !run.Destroyed {
		t.Errorf("resumed answer %q; session/list %v; destroyed %v", run.AgainAnswer, run.BridgeListed, run.Destroyed)
	}
}
