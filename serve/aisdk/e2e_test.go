package aisdk

import (
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// The AI SDK's own stream parser, chunk schema and message reader accept
// every chunk of a turn with thoughts, a tool call and a plan, of an edit
// approved and one denied (each continued in the next request), and of a
// failing turn; its validateUIMessages accepts the replayed messages.
func TestChatE2E_aiSDKReadsEveryStream(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	webtest.RunScript(t, webtest.AISDK, "aisdk_stream.mjs", ws.URL)
}

// Whole exchanges through the AI SDK's chat core (AbstractChat with
// DefaultChatTransport): an approval answered with addToolApprovalResponse
// ends with the edit's output in the message; a stop cancels the turn; a
// chat reopened from the session list under its session id goes on.
func TestChatE2E_abstractChat(t *testing.T) {
	ws := startServer(t, webtest.StartBridge(t), "")
	webtest.RunScript(t, webtest.AISDK, "aisdk_chat.mjs", ws.URL)
}
