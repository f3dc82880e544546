package agui

import (
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// AG-UI's own client (HttpAgent, with its schema enforcement and
// verifyEvents) runs a turn with thoughts, a tool call and a plan; an
// interrupt resumed with an option, and one resumed cancelled; a failing
// turn; and the thread reopened with a MESSAGES_SNAPSHOT.
func TestAGUIE2E_httpAgent(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	webtest.RunScript(t, webtest.AGUI, "agui.mjs", ws.URL)
}
