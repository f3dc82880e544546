package aisdk

import (
	"net/http"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
)

// server is the chat edge on an httptest server.
type server struct {
	*webtest.Server
	chat *Handler
}

// startServer serves a Handler on wb, its map in stateDir ("" for
// none); it stops at the end of the test if not before, and before the
// bridge.
func startServer(t testing.TB, wb *webtest.Bridge, stateDir string) *server {
	t.Helper()
	return startServerWith(t, wb, web.Options{StateDir: stateDir})
}

// startServerWith is startServer with options.
func startServerWith(t testing.TB, wb *webtest.Bridge, o web.Options) *server {
	t.Helper()
	s := &server{}
	s.Server = webtest.Serve(t, o, func(o web.Options, mux *http.ServeMux) func() {
		s.chat = NewHandler(wb.Connect, o)
		for _, p := range Patterns {
			mux.Handle(p, s.chat)
		}
		return s.chat.Close
	})
	return s
}
