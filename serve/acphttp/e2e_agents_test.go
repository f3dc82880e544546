package acphttp

import (
	"slices"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// The tests in this file run the real, pinned claude and codex CLIs
// (scripts/install-tools.sh) against their fake model APIs, behind /acp,
// driven by the ACP TypeScript SDK's own clients over Streamable HTTP and
// WebSocket (testdata/acpclient.mjs): a turn whose command the agent asks
// permission for, a cancelled turn, session/list, and a second connection
// that loads the session after the first ended and prompts it. They skip
// loudly when a CLI or the SDK is missing, and fail instead under
// ACPBRIDGE_REQUIRE_E2E=1.

func TestACPHandler_typeScriptSDK_realAgents(t *testing.T) {
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			a := servetest.RealAgents[name]
			b := a.Backend(t)
			node, dir := sdkScript(t)
			s := newACPServer(t, core.Limits{}, servetest.BridgeConnectorOn(t, b))
			for _, mode := range []string{"http", "ws"} {
				t.Run(mode, func(t *testing.T) {
					checkRealRun(t, runSDK(t, node, dir, mode, s.URL+"/acp", a.Env...))
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
