package opencode

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// EnvVar overrides where the opencode executable is.
const EnvVar = "ACPBRIDGE_OPENCODE"

// Options configures the backend; ExtraArgs go after `serve` and the
// bridge's own flags.
type Options = agentkit.Options

// Backend runs OpenCode sessions on one shared `opencode serve`.
type Backend struct {
	agentkit.CLI

	startMu sync.Mutex // serialises starting the server
	catMu   sync.Mutex // serialises reading the catalog

	mu       sync.Mutex          // protects the fields below
	srv      *server             // the running server, or nil
	closing  bool                // Close was called
	sessions map[string]*session // by OpenCode session id
	cat      *catalog            // agents and models, once read
}

var _ bridge.Backend = (*Backend)(nil)

// New returns the OpenCode backend.
func New(opts Options) *Backend {
	return &Backend{CLI: agentkit.NewCLI("opencode", EnvVar, opts), sessions: map[string]*session{}}
}

// Info: OpenCode takes images and embedded context, and local and remote
// MCP servers.
func (b *Backend) Info() bridge.Info {
	return bridge.Info{
		Name:   "opencode",
		Title:  "OpenCode",
		Prompt: acp.PromptCapabilities{Image: true, EmbeddedContext: true},
		MCP:    acp.McpCapabilities{Http: true, Sse: true},
	}
}

// Open waits for the server and its catalog (started by Warm, or here by
// the first session), so that the session's options are complete, then
// creates or checks the OpenCode session in the background.
func (b *Backend) Open(ctx context.Context, opts bridge.OpenOptions, ev bridge.Events) (bridge.Native, error) {
	if err := b.Check(); err != nil {
		return nil, err
	}
	mcp, err := mcpConfig(opts.MCPServers)
	if err != nil {
		return nil, err
	}
	cat, err := b.catalog(ctx, opts.Cwd)
	if err != nil {
		return nil, err
	}
	s := newSession(ctx, b, cat, opts, mcp, ev)
	go s.connect()
	return s, nil
}

// Warm starts the server and reads its catalog for the bridge's
// directory in the background.
func (b *Backend) Warm() {
	if b.Check() != nil {
		return
	}
	dir, err := os.Getwd()
	if err != nil {
		return
	}
	go func() {
		if _, err := b.catalog(context.Background(), dir); err != nil {
			b.Log().Debug("warming opencode up", "err", err)
		}
	}()
}

// catalog starts the server if needed and reads its agents and models,
// once per bridge.
func (b *Backend) catalog(ctx context.Context, dir string) (*catalog, error) {
	b.catMu.Lock()
	defer b.catMu.Unlock()
	b.mu.Lock()
	cat := b.cat
	b.mu.Unlock()
	if cat != nil {
		return cat, nil
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	srv, err := b.server(ctx)
	if err != nil {
		return nil, err
	}
	cat, err = readCatalog(ctx, srv, dir)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.cat = cat
	b.mu.Unlock()
	return cat, nil
}

// server returns the running server, starting one if there is none.
func (b *Backend) server(ctx context.Context) (*server, error) {
	b.startMu.Lock()
	defer b.startMu.Unlock()
	b.mu.Lock()
	srv, closing := b.srv, b.closing
	b.mu.Unlock()
	if closing {
		return nil, fmt.Errorf("%w: the opencode backend is closed", bridge.ErrAgentUnavailable)
	}
	if srv != nil && srv.alive() {
		return srv, nil
	}
	path, err := b.Find()
	if err != nil {
		return nil, err
	}
	srv, err = startServer(ctx, path, b.Args(), b.Env(), b.Log(), b.dispatch)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	closing = b.closing
	if !closing {
		b.srv = srv
	}
	b.mu.Unlock()
	if closing { // Close ran while it started: leave nothing behind
		srv.stop()
		return nil, fmt.Errorf("%w: the opencode backend is closed", bridge.ErrAgentUnavailable)
	}
	b.Log().Debug("opencode serve started", "pid", srv.p.Pid(), "url", srv.base)
	go b.watch(srv)
	return srv, nil
}

// watch waits for the server to exit and ends the turns running on it;
// the next prompt starts another.
func (b *Backend) watch(srv *server) {
	<-srv.p.Done()
	err := srv.p.Exited()
	b.mu.Lock()
	if b.srv == srv {
		b.srv = nil
	}
	closing := b.closing
	var ss []*session
	for _, s := range b.sessions {
		ss = append(ss, s)
	}
	b.mu.Unlock()
	srv.stop()
	if closing {
		return
	}
	b.Log().Warn("opencode serve exited", "err", err)
	for _, s := range ss {
		s.serverGone(srv, err)
	}
}

// dispatch routes an event to its session.
func (b *Backend) dispatch(_ string, ev Event) {
	id := sessionOf(ev)
	if id == "" {
		return
	}
	b.mu.Lock()
	s := b.sessions[id]
	b.mu.Unlock()
	if s != nil {
		s.notify(ev)
	}
}

func (b *Backend) register(id string, s *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sessions[id] = s
}

func (b *Backend) unregister(id string, s *session) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.sessions[id] == s {
		delete(b.sessions, id)
	}
}

// Close stops the server.
func (b *Backend) Close() error {
	b.mu.Lock()
	srv := b.srv
	b.srv, b.closing = nil, true
	b.mu.Unlock()
	if srv != nil {
		srv.stop()
	}
	return nil
}

// mcpConfig turns the client's MCP servers into OpenCode's: local ones
// run a command, remote ones are a URL (streamable HTTP or SSE).
func mcpConfig(servers []acp.McpServer) (map[string]any, error) {
	ms, err := agentkit.MCPServers("opencode", servers, agentkit.MCPStdio, agentkit.MCPHTTP, agentkit.MCPSSE)
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	cfg := map[string]any{}
	for _, m := range ms {
		if m.Transport == agentkit.MCPStdio {
			cfg[m.Name] = map[string]any{"type": "local", "command": append([]string{m.Command}, m.Args...), "environment": m.Env}
		} else {
			cfg[m.Name] = map[string]any{"type": "remote", "url": m.URL, "headers": m.Headers}
		}
	}
	return cfg, nil
}
