package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/channel"
)

// EnvVar overrides where the codex executable is.
const EnvVar = "ACPBRIDGE_CODEX"

// Options configures the backend; ExtraArgs go after `app-server`.
type Options = agentkit.Options

// Backend runs Codex threads on one shared app-server.
type Backend struct {
	agentkit.CLI

	shared   agentkit.Shared[*server]
	sessions agentkit.Registry[*session] // by thread id
	children agentkit.Registry[*session] // the session each spawned agent's thread is a child of, by thread id
	models   agentkit.Lazy[[]modelDoc]   // model/list
	spare    agentkit.Spare[spareThread] // a thread started by Warm, by directory
	warming  agentkit.Tasks              // Warm's; Close waits for them
	fallback agentkit.Fallback           // the shared app-server could not be had
	limits   limitNotices                // the account's rate limits told
}

// spareThread is a thread started ahead of need in the bridge's directory,
// with no options of its own, for the first new session there.
type spareThread struct {
	srv *server
	res threadResult
}

// spareTTL is how long a spare thread waits for a session to take it.
// Codex writes nothing for a thread without turns, so one nobody takes
// costs nothing once the server stops.
const spareTTL = 10 * time.Minute

var _ agent.Backend = (*Backend)(nil)

// New returns the Codex backend.
func New(opts Options) *Backend {
	b := &Backend{CLI: agentkit.NewCLI("codex", EnvVar, opts)}
	b.shared.Start, b.shared.Gone = b.start, b.gone
	return b
}

// Info: codex takes images and embedded context, and thread/resume
// returns the thread's history.
// It forks: a session/fork starts its thread with thread/fork, a copy of the
// parent's thread that leaves the parent as it was.
func (b *Backend) Info() agent.Info {
	info := b.Describe("Codex", acp.McpCapabilities{Http: true}, b)
	info.Caps.Forks = true
	info.Caps.Directories = true                                             // writable roots
	info.Caps.SystemPrompt = agent.PromptModes{Append: true, Override: true} // developer, base instructions
	info.Caps.Warm = b.Warm
	return info
}

// Open offers the models the server listed, or, until it has, those it
// listed last time (kept on disk, Options.Catalogs), or, with neither,
// the model codex's config names (configModels): a new user's first
// session/new answers at once too, if the config names one. It starts the thread (or resumes
// opts.NativeID, or forks opts.ForkOf) in the background, where a session
// opened on models not the server's checks them against the server's
// (listed by Warm, or here by the first session), telling the client if
// they differ. A session that restores options it recorded waits for the
// server's models instead when there are none kept, which may be all that
// offers them.
func (b *Backend) Open(ctx context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	if err := b.Check(); err != nil {
		return nil, err
	}
	if _, err := mcpConfig(opts.MCPServers); err != nil {
		return nil, err
	}
	docs, provisional, err := b.sessionModels(ctx, len(opts.Config) == 0)
	if err != nil {
		return nil, err
	}
	s := newSession(ctx, b, docs, opts, ev)
	s.tasks.Go(func() { s.connect(provisional) })
	return s, nil
}

// sessionModels are the models a new session offers: the server's; or
// those it listed last time (kept on disk); or, if fromConfig, the one
// codex's config names, if it names one; or else the server's once it has
// listed them.
// provisional says they are not the server's.
func (b *Backend) sessionModels(ctx context.Context, fromConfig bool) (docs []modelDoc, provisional bool, err error) {
	if docs, ok := b.models.Peek(); ok {
		return docs, false, nil
	}
	if agentkit.LoadCatalog(b.catalogFile(), &docs) {
		return docs, true, nil
	}
	if fromConfig {
		if docs := configModels(b.Env(), b.serverArgs()); docs != nil {
			return docs, true, nil
		}
	}
	if err := b.catalog(ctx); err != nil {
		return nil, false, err
	}
	return b.modelDocs(), false, nil
}

// catalogFile is where the models of this configuration are kept.
func (b *Backend) catalogFile() string {
	path, err := b.Find()
	if err != nil {
		return ""
	}
	env := b.Env()
	return b.CatalogFile(path, b.serverArgs(), env, agentkit.Contents(filepath.Join(codexHome(env), "config.toml")))
}

// Warm starts the server in the background, then asks for its models and,
// at once, starts a spare thread in the bridge's directory: the first
// session/new finds the options, and its first turn a thread.
func (b *Backend) Warm(dir string) {
	if err := b.Check(); err != nil {
		return
	}
	b.warming.Go(func() {
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		srv, err := b.shared.Get(ctx)
		if err == nil && dir != "" {
			b.spare.Make(dir, spareTTL, func() (spareThread, error) { return b.startSpare(srv, dir) },
				func(sp spareThread) { b.release(sp.srv, sp.res.Thread.ID) })
		}
		if err == nil {
			err = b.catalog(ctx)
		}
		if err != nil {
			b.Log().Debug("warming codex up", "err", err)
		}
	})
}

// startSpare starts a thread in dir with codex's own defaults, as a new
// session with no options of its own would.
func (b *Backend) startSpare(srv *server, dir string) (spareThread, error) {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var res threadResult
	err := srv.call(ctx, "thread/start", map[string]any{"cwd": dir}, &res)
	return spareThread{srv: srv, res: res}, err
}

// release tells a shared server that this bridge is done with a thread
// (thread/unsubscribe), which codex 0.169 then unloads within a minute
// (measured: between 30 and 60 s): the server outlives the bridge, and
// would otherwise keep every thread it opened (about 1 MB each). A server
// of the bridge's own goes with it.
func (b *Backend) release(srv *server, thread string) {
	if b.Shared() == 0 || srv == nil || thread == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	var res struct {
		Status string `json:"status"`
	}
	err := srv.call(ctx, "thread/unsubscribe", map[string]any{"threadId": thread}, &res)
	b.Log().Debug("codex thread/unsubscribe", "thread", thread, "status", res.Status, "err", err)
}

// releaseTimeout bounds a thread/unsubscribe at a session's close.
const releaseTimeout = 2 * time.Second

// catalog starts the server if needed and asks it for its models, once
// per bridge. A server that does not start is an error; a model list it
// can't give is not (the session then has no model options).
func (b *Backend) catalog(ctx context.Context) error {
	_, err := b.models.Get(func() ([]modelDoc, error) {
		ctx, cancel := context.WithTimeout(ctx, startTimeout)
		defer cancel()
		srv, err := b.shared.Get(ctx)
		if err != nil {
			return nil, err
		}
		var res struct {
			Data []modelDoc `json:"data"`
		}
		if err := srv.call(ctx, "model/list", map[string]any{}, &res); err != nil {
			b.Log().Warn("listing codex models", "err", err)
			return nil, nil
		}
		b.SaveCatalog(b.catalogFile(), res.Data)
		return res.Data, nil
	})
	return err
}

func (b *Backend) modelDocs() []modelDoc {
	docs, _ := b.models.Peek()
	return docs
}

// Close stops the server.
func (b *Backend) Close() error {
	b.shared.Close()
	if !b.warming.Wait(closeWait) {
		b.Log().Warn("codex was still warming up as the backend closed")
	}
	b.spare.Close() // after Warm, which may have made one
	return nil
}

// closeWait bounds Close's waits for the goroutines of a session or of
// Warm: they end with their context or the server, so it is a guard.
const closeWait = 5 * time.Second

// server is a running app-server and its JSON-RPC client.
type server struct {
	l   agentkit.Link
	cli *jrpc2.Client
}

// start runs `codex app-server` (serverArgs), or connects to the shared
// one, and does the handshake.
func (b *Backend) start(ctx context.Context) (*server, error) {
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	path, err := b.Find()
	if err != nil {
		return nil, err
	}
	l, ch, err := b.open(ctx, path, b.serverArgs())
	if err != nil {
		return nil, err
	}
	ch = versionless(ch, b.notify, func(line []byte) {
		b.Log().Warn("codex printed a line that is not JSON-RPC; skipping it", "line", agentkit.Truncate(line, 200))
	})
	cli := jrpc2.NewClient(ch, &jrpc2.ClientOptions{OnCallback: b.callback})
	srv := &server{l: l, cli: cli}
	if err := srv.call(ctx, "initialize", initParams(), nil); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("codex app-server did not start: %w", err)
	}
	if err := cli.Notify(ctx, "initialized", nil); err != nil {
		srv.Stop()
		return nil, fmt.Errorf("codex app-server did not start: %w", err)
	}
	b.Log().Debug("codex app-server ready", "shared", b.Shared() > 0)
	return srv, nil
}

// initParams are initialize's: the client, and the experimental API
// (turn/start's collaborationMode is experimental).
func initParams() map[string]any {
	return map[string]any{"clientInfo": map[string]any{"name": "acpbridge", "title": "acpbridge", "version": "0.1"},
		"capabilities": map[string]any{"experimentalApi": true}}
}

// serverArgs is the app-server's command line, with the plan tool on, so
// that turns can report plans.
func (b *Backend) serverArgs() []string {
	return b.Args("app-server", "-c", "tools.update_plan={enabled=true}")
}

// open connects to the shared app-server, or starts one on stdio: when
// not shared, or when the shared one can't be had (saying so once).
func (b *Backend) open(ctx context.Context, path string, args []string) (agentkit.Link, channel.Channel, error) {
	if b.Shared() > 0 {
		l, ch, err := b.attend(ctx, path, args)
		if err == nil || ctx.Err() != nil {
			return l, ch, err
		}
		b.fallback.Warn(b.Log(), "codex app-server", err)
	}
	p, err := proc.Start(proc.Spec{Path: path, Args: args, Env: b.Env()})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, err)
	}
	return p, channel.Line(p.Stdout, p.Stdin), nil
}

// call makes a request; if the server died meanwhile, its exit (status
// and stderr) is the better error: jrpc2 may lose a reply at EOF.
func (srv *server) call(ctx context.Context, method string, params, result any) error {
	var err error
	if result == nil {
		_, err = srv.cli.Call(ctx, method, params)
	} else {
		err = srv.cli.CallResult(ctx, method, params, result)
	}
	if err == nil {
		return nil
	}
	var rpcErr *jrpc2.Error
	if !errors.As(err, &rpcErr) && ctx.Err() == nil {
		// The connection failed under a live request: jrpc2 fails calls as
		// soon as stdout ends, before the process is reaped.
		select {
		case <-srv.l.Done():
		case <-time.After(exitWait):
		}
	}
	select {
	case <-srv.l.Done():
		return srv.l.Exited()
	default:
	}
	return fmt.Errorf("codex %s: %w", method, err)
}

// exitWait is how long a call that lost its connection waits for the
// server's exit, whose status and stderr say more.
const exitWait = 2 * time.Second

// Stop stops the server and its client.
func (srv *server) Stop() {
	srv.l.Stop()
	srv.cli.Close()
}

// Done is closed once the server has exited.
func (srv *server) Done() <-chan struct{} { return srv.l.Done() }

// Exited is how the server exited, with its stderr.
func (srv *server) Exited() error { return srv.l.Exited() }

// gone tells every session that the server died.
func (b *Backend) gone(srv *server, err error) {
	b.Log().Warn("codex app-server exited", "err", err)
	for _, s := range b.sessions.All() {
		s.serverGone(srv, err)
	}
}

// notify routes a notification to its thread's session (a spawned
// agent's thread's is the session it is a child of). The account's
// rate limits, for no thread, are told to every session when one is near
// or reached.
func (b *Backend) notify(method string, params json.RawMessage) {
	if method == "account/rateLimits/updated" {
		if u, ok := b.limits.notice(params); ok {
			for _, s := range b.sessions.All() {
				s.say(u)
			}
		}
		return
	}
	if s := b.session(params); s != nil {
		s.notify(method, params)
	}
}

// callback routes a server request (an approval) to its thread's session.
func (b *Backend) callback(ctx context.Context, req *jrpc2.Request) (any, error) {
	raw := json.RawMessage(req.ParamString())
	s := b.session(raw)
	if s == nil {
		return nil, jrpc2.Errorf(jrpc2.InvalidParams, "acpbridge has no session for this thread")
	}
	return s.request(ctx, req.Method(), raw)
}

func (b *Backend) session(raw json.RawMessage) *session {
	var p struct {
		ThreadID string `json:"threadId"`
	}
	if json.Unmarshal(raw, &p) != nil || p.ThreadID == "" {
		return nil
	}
	if s, ok := b.sessions.Get(p.ThreadID); ok {
		return s
	}
	s, _ := b.children.Get(p.ThreadID)
	return s
}

// versionless adds the "jsonrpc":"2.0" that
// codex leaves out (and jrpc2 insists on) to every record received,
// removing it from every record sent.
//
// It also takes the notifications out of the stream and hands them to
// notify itself, in order, on the reading goroutine: jrpc2 runs its
// notification callback on goroutines that do not keep the order, and a
// message's deltas must. Responses and server requests go on to jrpc2,
// after every notification received before them has been handled. A line
// that is not a JSON object is handed to skip and dropped: jrpc2 would
// shut the connection down over it.
func versionless(ch channel.Channel, notify func(method string, params json.RawMessage), skip func(line []byte)) channel.Channel {
	return versionlessChannel{Channel: ch, notify: notify, skip: skip}
}

type versionlessChannel struct {
	channel.Channel
	notify func(method string, params json.RawMessage)
	skip   func(line []byte)
}

var versionField = []byte(`"jsonrpc":"2.0",`)

func (c versionlessChannel) Send(rec []byte) error {
	return c.Channel.Send(bytes.Replace(rec, versionField, nil, 1))
}

func (c versionlessChannel) Recv() ([]byte, error) {
	for {
		rec, err := c.Channel.Recv()
		if err != nil {
			return rec, err
		}
		// Only top-level members count: params and results may hold a
		// "jsonrpc" key of their own (a tool's arguments, say).
		var top map[string]json.RawMessage
		if json.Unmarshal(rec, &top) != nil || top == nil {
			if c.skip != nil && len(bytes.TrimSpace(rec)) > 0 {
				c.skip(rec)
			}
			continue
		}
		if c.notification(top) {
			continue
		}
		if _, ok := top["jsonrpc"]; ok {
			return rec, nil
		}
		return append(append([]byte{'{'}, versionField...), bytes.TrimLeft(rec, " \t")[1:]...), nil
	}
}

// notification dispatches a record that is a notification: a method and
// no id.
func (c versionlessChannel) notification(top map[string]json.RawMessage) bool {
	var method string
	if _, call := top["id"]; call || c.notify == nil || json.Unmarshal(top["method"], &method) != nil || method == "" {
		return false
	}
	c.notify(method, top["params"])
	return true
}

// LoginCmd is Codex's own login, `codex login`.
func (b *Backend) LoginCmd() (*exec.Cmd, error) { return b.Command(b.Env(), "login") }

// LogoutCmd is codex's own logout, which needs no terminal.
func (b *Backend) LogoutCmd() (*exec.Cmd, error) { return b.Command(b.Env(), "logout") }

// Login tells whether codex has credentials: an API key in its
// environment, or the login `codex login` keeps in CODEX_HOME.
func (b *Backend) Login() agent.Login {
	env := b.Env()
	return agentkit.LoginFrom(env, []string{"OPENAI_API_KEY", "CODEX_API_KEY"}, []string{filepath.Join(codexHome(env), "auth.json")},
		"run `codex login`, or set OPENAI_API_KEY (a provider in config.toml may need neither)")
}

// codexHome is where codex keeps its login and config.toml, by the
// environment env: $CODEX_HOME, else ~/.codex.
func codexHome(env []string) string {
	if home := agentkit.EnvValue(env, "CODEX_HOME"); home != "" {
		return home
	}
	return filepath.Join(agentkit.HomeOf(env), ".codex")
}
