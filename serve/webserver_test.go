package serve

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
)

// webServer is the web edges mounted on an httptest server (127.0.0.1).
type webServer struct {
	*httptest.Server
	chat    *ChatHandler
	agui    *AGUIHandler
	reg     *core.Registry
	stopped sync.Once
}

// startWebServer serves a ChatHandler and an AGUIHandler on wb, with
// their maps in stateDir ("" for none); they stop at the end of the test
// if not before, and before the bridge.
func startWebServer(t testing.TB, wb *webtest.Bridge, stateDir string) *webServer {
	t.Helper()
	return startWebServerWith(t, wb, web.Options{StateDir: stateDir})
}

// startWebServerWith is startWebServer with options (a cwd, the logger
// and, as acpbridge serve shares one among its edges, a Registry are
// filled in).
func startWebServerWith(t testing.TB, wb *webtest.Bridge, o web.Options) *webServer {
	t.Helper()
	if o.Cwd == "" {
		o.Cwd = t.TempDir()
	}
	o.Logger = webtest.Logger()
	if o.Registry == nil {
		o.Registry = core.NewRegistry(core.Limits{}, webtest.Logger())
	}
	chat := NewChatHandler(wb.Connect, o)
	agui := NewAGUIHandler(wb.Connect, o)
	mux := http.NewServeMux()
	for _, p := range ChatPatterns {
		mux.Handle(p, chat)
	}
	mux.Handle(AGUIPattern, agui)
	ws := &webServer{Server: httptest.NewServer(mux), chat: chat, agui: agui, reg: o.Registry}
	t.Cleanup(ws.stop)
	return ws
}

// stop closes the server, the registry's connections and the handlers
// (once), in the order acpbridge serve does.
func (ws *webServer) stop() {
	ws.stopped.Do(func() {
		ws.Close()
		ws.reg.CloseAll(context.Background())
		ws.chat.Close()
		ws.agui.Close()
	})
}
