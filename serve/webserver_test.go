package serve

import (
	"net/http"
	"testing"

	"github.com/acpbridge/acpbridge/serve/agui"
	"github.com/acpbridge/acpbridge/serve/aisdk"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
)

// startWebServer serves both web edges on wb, as acpbridge serve does
// (one Registry), with their maps in stateDir ("" for none); they stop at
// the end of the test if not before, and before the bridge.
func startWebServer(t testing.TB, wb *webtest.Bridge, stateDir string) *webtest.Server {
	t.Helper()
	return webtest.Serve(t, web.Options{StateDir: stateDir}, chatEdge(wb), aguiEdge(wb))
}

// chatEdge is the AI SDK's chat edge on wb.
func chatEdge(wb *webtest.Bridge) webtest.Edge {
	return func(o web.Options, mux *http.ServeMux) func() {
		h := aisdk.NewHandler(wb.Connect, o)
		for _, p := range aisdk.Patterns {
			mux.Handle(p, h)
		}
		return h.Close
	}
}

// aguiEdge is the AG-UI edge on wb.
func aguiEdge(wb *webtest.Bridge) webtest.Edge {
	return func(o web.Options, mux *http.ServeMux) func() {
		h := agui.NewHandler(wb.Connect, o)
		mux.Handle(agui.Pattern, h)
		return h.Close
	}
}
