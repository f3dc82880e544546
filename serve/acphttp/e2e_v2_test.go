package acphttp

import (
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// TestACPHandler_v2TypeScriptSDK drives /acp with the TS SDK 2.4.0's
// experimental v2 client over its own Streamable HTTP and WebSocket
// clients (sdkclient.RunV2), against the real bridge (ServeConn, the mock
// agent): a client whose initialize asks for protocol 2 gets v2, as on
// stdio. A turn with a permission ask, a cancelled turn, a resume
// replaying from the start, list, close and delete, every message checked
// against v2's schema.
func TestACPHandler_v2TypeScriptSDK(t *testing.T) {
	s := newACPServer(t, core.Limits{}, servetest.BridgeConnector(t))
	for _, mode := range []string{"http", "ws"} {
		t.Run(mode, func(t *testing.T) {
			r := sdkclient.RunV2(t, sdkclient.V2{Transport: mode, URL: s.URL + "/acp", CancelAsk: true, CancelTool: true})
			sdkclient.CheckV2(t, r, sdkclient.V2Want{Asked: "mock.txt", Diff: "mock.txt", CancelAsk: true, CancelTool: true,
				Turn: []string{"agent_thought_chunk", "state_update:requires_action state_update:running"}})
		})
	}
	settle(t, s, 0)
}
