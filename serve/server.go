package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/serve/acphttp"
	"github.com/acpbridge/acpbridge/serve/agui"
	"github.com/acpbridge/acpbridge/serve/aisdk"
	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/page"
	"github.com/acpbridge/acpbridge/serve/sandbox"
	"github.com/acpbridge/acpbridge/serve/web"
)

// DefaultListen is where acpbridge serve listens unless told otherwise:
// loopback only, on sandbox-agent's port.
const DefaultListen = "127.0.0.1:2468"

// ShutdownTimeout bounds how long Run, once its ctx is done, waits for the
// requests still running after every client connection was closed; what
// is left then is closed under them.
const ShutdownTimeout = 2 * time.Second

// The limits against hostile clients. No WriteTimeout: an SSE stream or a
// WebSocket lasts as long as its client stays.
const (
	// readHeaderTimeout closes a connection that has not sent a whole
	// request's headers in this time (a half-open or trickling one).
	readHeaderTimeout = 10 * time.Second
	// idleTimeout closes a keep-alive connection with no request this long.
	idleTimeout = 60 * time.Second
	// maxHeaderBytes answers a request with larger headers 431.
	maxHeaderBytes = 64 << 10
	// maxConns is how many connections are served at once; more wait in
	// the kernel's backlog (capListener).
	maxConns = 1024
)

// Connector serves one ACP client connection of the edges: the binary's
// is acp.Server.ServeConn (core.Connector has the contract).
type Connector = core.Connector

// AgentStatus is one agent this bridge runs, as sandbox-agent's GET
// /v1/agents reports it (sandbox.AgentStatus).
type AgentStatus = sandbox.AgentStatus

// Agents lists the agents the bridge runs, its default first.
type Agents = sandbox.Agents

// Options configures a Server. Every field may be left zero but Connector,
// which the edges need to serve anything.
type Options struct {
	// Listen is the address to listen on, host:port; "" is DefaultListen.
	// Port 0 picks a free port: the serving line and serve.json say which.
	Listen string
	// Token is the bearer token every request must carry
	// (Authorization: Bearer TOKEN). "" has New make one (32 random bytes,
	// hex), which Run writes to StateDir/serve.token and prints once.
	Token string
	// NoToken serves without a token; New refuses it unless Listen is a
	// loopback address.
	NoToken bool
	// AllowHosts are Host headers accepted besides the listen address and
	// localhost, 127.0.0.1 and [::1] on its port (anything else is
	// refused, against DNS rebinding): "name:port" is that Host exactly,
	// "name" (or "[v6addr]") that name on any port.
	AllowHosts []string
	// AllowOrigins are the browser origins (scheme://host[:port]) that may
	// call the server besides its own, with CORS headers; a request from
	// any other origin is refused.
	AllowOrigins []string
	// StateDir gets serve.json ({"url", "pid"}, for clients on this machine
	// to find the server) and, for a token New made, serve.token: both
	// mode 0600, removed when Run returns. "": neither is written.
	StateDir string
	// Logger logs refused requests (at debug level) and shutdown; nil
	// discards.
	Logger *slog.Logger
	// Stderr gets the serving line and a token New made; nil is os.Stderr.
	Stderr io.Writer
	// Connector serves each client connection of the edges
	// (acp.Server.ServeConn).
	Connector Connector
	// Agents lists the agents for sandbox-agent's GET /v1/agents.
	Agents Agents
	// Sandbox tunes sandbox-agent's API (its Agents and Logger are the
	// Server's); the zero value has its defaults.
	Sandbox sandbox.Options
}

// Server is acpbridge serve's HTTP server: New listens, Run serves until
// its ctx is done.
type Server struct {
	opts      Options
	log       *slog.Logger
	stderr    io.Writer
	ln        net.Listener
	guard     *guard
	http      *http.Server
	mux       *http.ServeMux
	url       string
	token     string // "" with NoToken
	generated bool   // New made the token: Run saves and prints it
	// closers end the client connections each edge keeps (its registry's
	// closeAll), at shutdown; mount adds them.
	closers []func()
}

// New checks o and listens on o.Listen; nothing is served until Run,
// which the caller must call (it closes the listener).
func New(o Options) (*Server, error) {
	s := &Server{opts: o, log: o.Logger, stderr: o.Stderr}
	if s.opts.Listen == "" {
		s.opts.Listen = DefaultListen
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.stderr == nil {
		s.stderr = os.Stderr
	}
	if err := s.setToken(); err != nil {
		return nil, err
	}
	g, err := s.listen()
	if err != nil {
		return nil, err
	}
	s.mux = http.NewServeMux()
	g.next, s.guard = s.mux, g
	s.routes()
	s.http = &http.Server{
		Handler:                      g,
		ReadHeaderTimeout:            readHeaderTimeout,
		IdleTimeout:                  idleTimeout,
		MaxHeaderBytes:               maxHeaderBytes,
		DisableGeneralOptionsHandler: true, // OPTIONS * goes through the guard too
		ErrorLog:                     slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
	}
	return s, nil
}

// listen checks the addresses o names and listens; it returns the guard
// for the address it listens on.
func (s *Server) listen() (*guard, error) {
	host, _, err := net.SplitHostPort(s.opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want HOST:PORT: %w", s.opts.Listen, err)
	}
	if s.opts.NoToken && !loopbackName(host) {
		return nil, fmt.Errorf("--no-token: %s is not a loopback address; serving without a token is only for 127.0.0.1, [::1] or localhost", s.opts.Listen)
	}
	g, err := newGuard(s.opts, s.token, s.log)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", s.opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	addr, ok := ln.Addr().(*net.TCPAddr)
	if !ok { // a "tcp" listener's always is
		ln.Close()
		return nil, fmt.Errorf("--listen %s: not a TCP address: %v", s.opts.Listen, ln.Addr())
	}
	if s.opts.NoToken && !addr.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("--no-token: %s listens on %s, which is not loopback", s.opts.Listen, addr)
	}
	g.allowListenHosts(host, addr)
	s.ln = newCapListener(ln, maxConns)
	s.url = "http://" + addr.String()
	return g, nil
}

// URL is the server's base URL, http://HOST:PORT.
func (s *Server) URL() string { return s.url }

// Token is the bearer token requests must carry; "" with NoToken.
func (s *Server) Token() string { return s.token }

// routes mounts the edges, one line each.
func (s *Server) routes() {
	s.mount("/", page.NewHandler(http.HandlerFunc(notFound)), nil) // the chat page; 404 for any other path no edge serves
	// One registry of client connections for every edge, so that a session
	// taken over on one transport is let go on the other.
	reg := core.NewRegistry(core.Limits{}, s.log)
	closeAll := func() { reg.CloseAll(context.Background()) }
	s.mount("/acp", acphttp.NewHandler(reg, s.opts.Connector, s.log), closeAll)
	sb := s.opts.Sandbox
	sb.Agents, sb.Logger = s.opts.Agents, s.log
	s.mount("/v1/", sandbox.NewHandler(reg, s.opts.Connector, sb), nil)
	wo := web.Options{Registry: reg, StateDir: s.opts.StateDir, Logger: s.log}
	chat := aisdk.NewHandler(s.opts.Connector, wo)
	for _, p := range aisdk.Patterns {
		s.mount(p, chat, nil)
	}
	s.closers = append(s.closers, chat.Close)
	ag := agui.NewHandler(s.opts.Connector, wo)
	s.mount(agui.Pattern, ag, ag.Close)
}

// mount routes pattern to h; closeAll, if not nil, ends the client
// connections h keeps, at shutdown (and must refuse new ones from then).
func (s *Server) mount(pattern string, h http.Handler, closeAll func()) {
	s.mux.Handle(pattern, h)
	if closeAll != nil {
		s.closers = append(s.closers, closeAll)
	}
}

// notFound answers a path no edge serves.
func notFound(w http.ResponseWriter, r *http.Request) {
	refuse(w, r, http.StatusNotFound, "no such endpoint: "+r.URL.Path)
}

// Run serves until ctx is done (or the listener fails), then shuts down:
// it stops accepting, closes every client connection (mount's closeAll),
// waits up to ShutdownTimeout for the requests left and closes what is
// still open. The caller then stops the sessions' turns and agents. Run
// writes serve.json (and serve.token) first, and prints the serving line
// last, once the server is ready; it removes the files when it returns.
func (s *Server) Run(ctx context.Context) error {
	if err := s.announce(); err != nil {
		s.ln.Close()
		return err
	}
	defer s.withdraw()
	served := make(chan error, 1)
	go func() { served <- s.http.Serve(s.ln) }()
	select {
	case <-ctx.Done():
		s.log.Debug("shutting down", "cause", context.Cause(ctx))
	case err := <-served:
		s.shutdown()
		return fmt.Errorf("serving on %s: %w", s.url, err)
	}
	s.shutdown()
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving on %s: %w", s.url, err)
	}
	return nil
}

// shutdown stops accepting, ends every client connection and waits up to
// ShutdownTimeout for the handlers; then it closes what is left.
func (s *Server) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
	defer cancel()
	var closing sync.WaitGroup
	closing.Add(1)
	// Shutdown runs this once its listener is closed, so no connection
	// comes after it.
	s.http.RegisterOnShutdown(func() {
		defer closing.Done()
		for _, closeAll := range s.closers {
			closeAll()
		}
	})
	err := s.http.Shutdown(ctx)
	closing.Wait()
	if err != nil {
		s.log.Warn("requests still running at shutdown; closing their connections", "timeout", ShutdownTimeout, "err", err)
		s.http.Close()
	}
}
