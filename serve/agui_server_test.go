package serve

import (
	"net/http"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
)

// startAGUIServer serves an AGUIHandler on wb, its map in stateDir (""
// for none); it stops at the end of the test if not before, and before
// the bridge.
func startAGUIServer(t testing.TB, wb *webtest.Bridge, stateDir string) *webtest.Server {
	t.Helper()
	return webtest.Serve(t, web.Options{StateDir: stateDir}, func(o web.Options, mux *http.ServeMux) func() {
		h := NewAGUIHandler(wb.Connect, o)
		mux.Handle(AGUIPattern, h)
		return h.Close
	})
}
