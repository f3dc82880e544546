package serve

import (
	"net/http"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/servetest"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// The real claude and codex CLIs on their fake models (as the /acp tests
// run them, servetest.RealAgents) through each web edge with its own client library:
// a command the agent asks permission for, approved, its output and the
// answer in the rest of the turn; every chunk or event passes the
// library's checks.
func TestWebE2E_realAgents(t *testing.T) {
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			a := servetest.RealAgents[name]
			wb := &webtest.Bridge{Connect: servetest.BridgeConnectorOn(t, a.Backend(t))}
			ws := startWebServer(t, wb, "")
			env := []string{"WEB_PROMPT=" + webtest.EnvOf(a.Env, "ACP_E2E_PROMPT"), "WEB_MODE=" + webtest.EnvOf(a.Env, "ACP_E2E_MODE")}
			t.Run("aisdk", func(t *testing.T) {
				webtest.RunScript(t, webtest.AISDK, "real.mjs", ws.URL, append(env, "WEB_EDGE=aisdk")...)
			})
			t.Run("agui", func(t *testing.T) {
				webtest.RunScript(t, webtest.AGUI, "real.mjs", ws.URL, append(env, "WEB_EDGE=agui")...)
			})
		})
	}
}

// Behind acpbridge serve's own Server (its token, Host and Origin guard,
// its shutdown), as its routes mount the edges: the AI SDK's chat
// core and AG-UI's HttpAgent run their exchanges with the token, and a
// request without it is refused.
func TestWebE2E_behindTheServer(t *testing.T) {
	wb := webtest.StartBridge(t)
	s, stderr := newServer(t, Options{Connector: wb.Connect, StateDir: t.TempDir()})
	r := start(t, s, stderr)

	resp, _ := r.do(t, "GET", "/v1/sessions", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/sessions without the token: %d, want 401", resp.StatusCode)
	}
	webtest.RunScript(t, webtest.AISDK, "aisdk_chat.mjs", r.URL(), "WEB_TOKEN="+r.Token())
	webtest.RunScript(t, webtest.AGUI, "agui.mjs", r.URL(), "WEB_TOKEN="+r.Token())
	if err := r.stop(); err != nil {
		t.Errorf("the server's shutdown: %v", err)
	}
}
