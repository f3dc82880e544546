package serve

import (
	"net/http"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
	"github.com/acpbridge/acpbridge/serve/web"
)

// chatServer is the chat edge on an httptest server.
type chatServer struct {
	*webtest.Server
	chat *ChatHandler
}

// startChatServer serves a ChatHandler on wb, its map in stateDir ("" for
// none); it stops at the end of the test if not before, and before the
// bridge.
func startChatServer(t testing.TB, wb *webtest.Bridge, stateDir string) *chatServer {
	t.Helper()
	return startChatServerWith(t, wb, web.Options{StateDir: stateDir})
}

// startChatServerWith is startChatServer with options.
func startChatServerWith(t testing.TB, wb *webtest.Bridge, o web.Options) *chatServer {
	t.Helper()
	s := &chatServer{}
	s.Server = webtest.Serve(t, o, func(o web.Options, mux *http.ServeMux) func() {
		s.chat = NewChatHandler(wb.Connect, o)
		for _, p := range ChatPatterns {
			mux.Handle(p, s.chat)
		}
		return s.chat.Close
	})
	return s
}
