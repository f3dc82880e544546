package acphttp

import (
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// TestV2_realAgents runs the real, pinned claude, codex and opencode CLIs
// on their fake model APIs behind the bridge, driven by the TS SDK
// 2.4.0's experimental v2 client (sdkclient.RunV2) over stdio (the edge
// acpbridge serves there) and over /acp (Streamable HTTP):
// a turn whose command the agent asks permission for (requires_action
// while it waits), a slow turn cancelled, session/list, a resume
// replaying from the start, close and delete, every message checked
// against v2's schema. It skips loudly when a CLI or the SDK is missing,
// and fails instead under ACPBRIDGE_REQUIRE_E2E=1.
func TestV2_realAgents(t *testing.T) {
	for _, name := range []string{"claude", "codex", "opencode"} {
		t.Run(name, func(t *testing.T) {
			a := servetest.RealAgents[name]
			want := sdkclient.V2Want{Asked: "made", OwnHistory: name == "codex", CancelTool: true}
			t.Run("stdio", func(t *testing.T) {
				m := sdkclient.ManagerOn(t, a.Backend(t), servetest.Logger())
				r := sdkclient.RunV2(t, sdkclient.V2{Serve: sdkclient.StdioV2(m, servetest.Logger()), Env: a.V2, CancelTool: true})
				sdkclient.CheckV2(t, r, want)
			})
			s := newACPServer(t, core.Limits{}, servetest.BridgeConnectorOn(t, a.Backend(t)))
			for _, mode := range []string{"http"} { // WebSocket is the same to an agent: the mock's test runs it
				t.Run(mode, func(t *testing.T) {
					r := sdkclient.RunV2(t, sdkclient.V2{Transport: mode, URL: s.URL + "/acp", Env: a.V2, CancelTool: true})
					sdkclient.CheckV2(t, r, want)
				})
			}
		})
	}
}
