package agui

import (
	"net/http"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
)

// startServer serves a Handler on wb, its map in stateDir (""
// for none); it stops at the end of the test if not before, and before
// the bridge.
func startServer(t testing.TB, wb *webtest.Bridge, stateDir string) *webtest.Server {
	t.Helper()
	return webtest.Serve(t, web.Options{StateDir: stateDir}, func(o web.Options, mux *http.ServeMux) func() {
		h := NewHandler(wb.Connect, o)
		mux.Handle(Pattern, h)
		return h.Close
	})
}
