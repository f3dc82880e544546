package serve

import (
	"slices"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/servetest"
	"github.com/acpbridge/acpbridge/serve/sandbox"
)

// The real claude and codex CLIs on their fake model APIs
// (servetest.RealAgents) behind the whole server's /v1.

// sandbox-agent's SDK, unchanged, on the real claude and codex behind
// /v1: createSession for the agent, a prompt streamed to onEvent whose
// command the SDK's onPermissionRequest allows, list_models, listSessions,
// resumeSession from a second client, session/load, destroySession.
func TestSandboxHandler_sdk_realAgents(t *testing.T) {
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			a := servetest.RealAgents[name]
			b := a.Backend(t)
			node, dir := sandboxScript(t)
			r, _ := startSandboxServerOn(t, sandbox.Options{}, b)
			run := runSandboxSDK(t, node, dir, r, a.Sandbox...)
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
