package webtest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
	"github.com/acpbridge/acpbridge/serve/web"
)

// Server is web edges mounted on an httptest server (127.0.0.1), on one
// Registry, as acpbridge serve mounts them.
type Server struct {
	*httptest.Server
	Reg     *core.Registry
	closers []func()
	stopped sync.Once
}

// An Edge mounts a web edge made with o on mux and returns what ends it.
type Edge func(o web.Options, mux *http.ServeMux) (close func())

// Serve mounts edges made with o (its cwd, logger and Registry filled in
// if not set); they stop at the end of the test if not before, and before
// the bridge, whose cleanup was registered first.
func Serve(t testing.TB, o web.Options, edges ...Edge) *Server {
	t.Helper()
	if o.Cwd == "" {
		o.Cwd = t.TempDir()
	}
	o.Logger = servetest.Logger()
	if o.Registry == nil {
		o.Registry = core.NewRegistry(core.Limits{}, servetest.Logger())
	}
	mux := http.NewServeMux()
	s := &Server{Reg: o.Registry}
	for _, e := range edges {
		s.closers = append(s.closers, e(o, mux))
	}
	s.Server = httptest.NewServer(mux)
	t.Cleanup(s.Stop)
	return s
}

// Stop closes the server, the registry's connections and the edges
// (once), in the order acpbridge serve does.
func (s *Server) Stop() {
	s.stopped.Do(func() {
		s.Close()
		s.Reg.CloseAll(context.Background())
		for _, c := range s.closers {
			c()
		}
	})
}
