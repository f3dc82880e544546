package acpagent

import (
	"io"
	"log/slog"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
)

// Zed's claude-agent-acp behind the bridge, the bridge served to the TS
// SDK 2.4.0's experimental v2 client (sdkclient.RunV2) over stdio: the
// downstream speaks v1, the client v2. A turn whose command claude asks
// permission for, a slow turn cancelled, a tool call cancelled while its
// ask waits, list, a resume replaying the adapter's own history (under
// --persist auto, the adapter loading its session), close and delete,
// every message checked against v2's schema.
func TestE2E_v2ClaudeAgentACP(t *testing.T) {
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	m := sdkclient.ManagerOn(t, claudeAdapter(t, srv, looseDir(t)), log)
	r := sdkclient.RunV2(t, sdkclient.V2{Serve: sdkclient.StdioV2(m, log), CancelTool: true,
		Env: []string{"ACP_V2_PROMPT=run: touch made.txt && echo made"}})
	sdkclient.CheckV2(t, r, sdkclient.V2Want{Asked: "made", CancelTool: true, OwnHistory: true})
}
