package opencode

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
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

	shared   agentkit.Shared[*server]
	sessions agentkit.Registry[*session] // by OpenCode session id
	children agentkit.Registry[*session] // by the id of a child session (a subagent's) of theirs
	cat      agentkit.Lazy[*catalog]     // agents and models
	warming  agentkit.Tasks              // Warm's; Close waits for them
	fallback agentkit.Fallback           // the shared server could not be had
	linger   time.Duration               // how long an unused instance is kept (the constant linger)
}

var _ agent.Backend = (*Backend)(nil)

// New returns the OpenCode backend.
func New(opts Options) *Backend {
	b := &Backend{CLI: agentkit.NewCLI("opencode", EnvVar, opts), linger: linger}
	b.shared.Start, b.shared.Gone = b.start, b.gone
	return b
}

// Info: OpenCode takes images and embedded context, and local and remote
// MCP servers.
// It forks: a session/fork forks the parent's OpenCode session (POST
// /session/{id}/fork), which stays as it was.
func (b *Backend) Info() agent.Info {
	info := b.Describe("OpenCode", acp.McpCapabilities{Http: true, Sse: true}, b)
	info.Caps.Forks = true
	info.Caps.Directories = true                             // external_directory rules
	info.Caps.SystemPrompt = agent.PromptModes{Append: true} // each prompt's system
	info.Caps.Warm = b.Warm
	return info
}

// Open offers the server's catalog, or, until it has been read, the one
// it gave last time (kept on disk, Options.Catalogs), or, with neither,
// the one OpenCode's config files promise if they name a model
// (configCatalog): a new user's first session/new answers at once too. It creates, forks
// (opts.ForkOf) or checks the OpenCode session in the background, where
// a session opened on a catalog not the server's checks it against the
// server's once read (started by Warm, or here by the first session),
// telling the client if it differs. A session that restores options it
// recorded waits for the server's catalog instead when there is no
// catalog kept, which may be all that offers them.
func (b *Backend) Open(ctx context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	if err := b.Check(); err != nil {
		return nil, err
	}
	if b.shared.Closed() {
		return nil, fmt.Errorf("%w: the opencode backend is closed", agent.ErrAgentUnavailable)
	}
	mcp, err := mcpConfig(opts.MCPServers)
	if err != nil {
		return nil, err
	}
	cat, provisional, err := b.sessionCatalog(ctx, opts.Cwd, len(opts.Config) == 0)
	if err != nil {
		return nil, err
	}
	s := newSession(ctx, b, cat, opts, mcp, ev)
	s.tasks.Go(func() { s.connect(provisional) })
	return s, nil
}

// sessionCatalog is the catalog a new session in dir offers: the
// server's; or the one it gave last time (kept on disk,
// Options.Catalogs); or, if fromConfig, the one OpenCode's config files
// promise, if they name a model; or else the server's once it is read for
// dir. provisional says it is not the server's.
func (b *Backend) sessionCatalog(ctx context.Context, dir string, fromConfig bool) (cat *catalog, provisional bool, err error) {
	if cat, ok := b.cat.Peek(); ok {
		return cat, false, nil
	}
	var k keptCatalog
	if agentkit.LoadCatalog(b.catalogFile(), &k) {
		return k.catalog(), true, nil
	}
	if fromConfig {
		if cat := configCatalog(b.Env(), dir); cat != nil {
			return cat, true, nil
		}
	}
	cat, err = b.catalog(ctx, dir)
	return cat, false, err
}

// catalogFile is where the catalog of this configuration is kept. Like
// the bridge, which reads its catalog once, for its first directory, it
// leaves out what a project's own config may add.
func (b *Backend) catalogFile() string {
	path, err := b.Find()
	if err != nil {
		return ""
	}
	env := b.Env()
	return b.CatalogFile(path, serveArgs(b.Args()), env, agentkit.Contents(configFiles(env)...))
}

// Warm starts the server and reads its catalog for the bridge's
// directory in the background.
func (b *Backend) Warm(dir string) {
	if b.Check() != nil {
		return
	}
	if dir == "" {
		dir, _ = os.Getwd()
	}
	b.warming.Go(func() {
		if _, err := b.catalog(context.Background(), dir); err != nil {
			b.Log().Debug("warming opencode up", "err", err)
		}
	})
}

// catalog starts the server if needed and reads its agents and models,
// once per bridge.
func (b *Backend) catalog(ctx context.Context, dir string) (*catalog, error) {
	return b.cat.Get(func() (*catalog, error) {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		srv, err := b.shared.Get(ctx)
		if err != nil {
			return nil, err
		}
		// The bridge keeps using dir's instance, which it reads the
		// catalog in (typically its sessions' directory), until it ends.
		if err := srv.enter(ctx, dir); err != nil {
			return nil, err
		}
		cat, err := readCatalog(ctx, srv, dir)
		if err == nil {
			b.SaveCatalog(b.catalogFile(), cat.kept())
		}
		return cat, err
	})
}

// start starts `opencode serve`.
func (b *Backend) start(ctx context.Context) (*server, error) {
	path, err := b.Find()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	l, base, password, err := b.serve(ctx, path)
	if err != nil {
		return nil, err
	}
	srv, err := newServer(ctx, l, base, password, b.Log(), b.dispatch, b.broadcast)
	if err != nil {
		return nil, err
	}
	srv.linger = b.linger
	b.Log().Debug("opencode serve ready", "pid", l.Pid(), "url", base, "shared", b.Shared() > 0)
	return srv, nil
}

// serve takes a lease on the shared opencode serve, or starts one of the
// bridge's own: when not shared, or when the shared one can't be had
// (saying so once). Either asks of every agent what the sessions' rules
// ask (serverEnv), a subagent's too.
func (b *Backend) serve(ctx context.Context, path string) (agentkit.Link, *url.URL, string, error) {
	env := serverEnv(b.Env(), b.Log())
	if b.Shared() > 0 {
		l, base, password, err := b.attend(ctx, path, b.Args(), env)
		if err == nil || ctx.Err() != nil {
			return l, base, password, err
		}
		b.fallback.Warn(b.Log(), "opencode serve", err)
	}
	return startServer(ctx, path, b.Args(), env)
}

// gone ends the turns running on a server that died; the next prompt
// starts another.
func (b *Backend) gone(srv *server, err error) {
	b.Log().Warn("opencode serve exited", "err", err)
	for _, s := range b.sessions.All() {
		s.serverGone(srv, err)
	}
}

// dispatch routes an event to its session: the session's own, or one of
// a child session of it (a subagent's), which its session.created names
// the parent of.
func (b *Backend) dispatch(_ string, ev Event) {
	d, err := Decode(ev)
	if err != nil {
		b.Log().Warn("skipping an opencode event", "type", ev.Type, "err", err)
		return
	}
	id := d.SessionID()
	if id == "" {
		return
	}
	if s, ok := b.owner(id); ok {
		s.notify(d)
		return
	}
	if s, ok := b.owner(d.ParentID()); ok && s.adopt(id) {
		b.children.Add(id, s)
		s.notify(d)
	}
}

// owner is the session whose events, or whose child's, those of OpenCode's
// session id are.
func (b *Backend) owner(id string) (*session, bool) {
	if id == "" {
		return nil, false
	}
	if s, ok := b.sessions.Get(id); ok {
		return s, true
	}
	return b.children.Get(id)
}

// broadcast hands an event to every session in dir.
func (b *Backend) broadcast(dir string, ev Event) {
	for _, s := range b.sessions.All() {
		if s.dir == dir {
			s.notify(Decoded{Event: ev})
		}
	}
}

// Close stops the server.
func (b *Backend) Close() error {
	b.shared.Close()
	if !b.warming.Wait(closeWait) {
		b.Log().Warn("opencode was still warming up as the backend closed")
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

// LoginCmd is OpenCode's own login, `opencode auth login` (it asks which
// provider).
func (b *Backend) LoginCmd() (*exec.Cmd, error) { return b.Command(b.Env(), "auth", "login") }

// Login tells whether OpenCode has credentials: a provider key in its
// environment, or the logins `opencode auth login` keeps.
func (b *Backend) Login() agent.Login {
	env := b.Env()
	data := agentkit.EnvValue(env, "XDG_DATA_HOME")
	if data == "" {
		data = filepath.Join(agentkit.HomeOf(env), ".local", "share")
	}
	return agentkit.LoginFrom(env, []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENROUTER_API_KEY", "GEMINI_API_KEY"},
		[]string{filepath.Join(data, "opencode", "auth.json")},
		"run `opencode auth login`, or set your provider's API key (a provider in opencode.json may need neither)")
}
