package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/acp/edgev2"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/serve"
	"github.com/spf13/pflag"
)

// ServeCommand serves the bridge's sessions over HTTP: `acpbridge serve
// [acpbridge's flags] [--listen ADDR] [--no-token] [--allow-host H]...
// [--allow-origin O]...`.
const ServeCommand = "serve"

// tokenEnv, if set, is the token acpbridge serve wants; else it makes one.
const tokenEnv = "ACPBRIDGE_TOKEN"

// managerStopTimeout bounds the sessions' shutdown once the HTTP server
// has stopped (at most serve.ShutdownTimeout), so that acpbridge serve
// exits within 5 s of SIGTERM.
const managerStopTimeout = 2500 * time.Millisecond

// versionTTL is how long GET /v1/agents reuses an agent's --version: each
// run starts the agent's CLI.
const versionTTL = 5 * time.Minute

// serveOptions are the flags acpbridge serve adds to acpbridge's own.
type serveOptions struct {
	listen       string
	noToken      bool
	allowHosts   []string
	allowOrigins []string
}

const serveUsage = `acpbridge serve serves the bridge's sessions over HTTP, for remote editors,
web apps and sandbox-agent's clients: ACP at /acp (Streamable HTTP and
WebSocket) and sandbox-agent's API under /v1. Every request carries
Authorization: Bearer TOKEN, the token being $ACPBRIDGE_TOKEN if set (at
least 64 characters), else one made at start, printed once and saved in the
state directory's serve.token.
It listens on loopback only unless --listen says otherwise: reach it from
another machine through an SSH tunnel (ssh -L 2468:127.0.0.1:2468 box), or a
reverse proxy that does TLS. Once ready it prints one line on stderr,
"acpbridge: serving on http://HOST:PORT", and writes serve.json ({"url",
"pid"}) to the state directory; SIGINT or SIGTERM stops it.

Usage: acpbridge serve [--listen 127.0.0.1:2468] [--no-token] [--allow-host HOST]...
                       [--allow-origin ORIGIN]... [--agent NAME] [--agents FILE]
                       [--state-dir DIR] [--persist auto|always|never] [--idle-timeout 30m]
                       [--max-agents 8] [--log-level debug|info|warn|error] [-- ACP-AGENT ARGS...]

`

// serveFlags are acpbridge's flags and serve's own.
func serveFlags(stderr io.Writer) (*pflag.FlagSet, *options, *serveOptions) {
	fs, o := flags(stderr)
	so := &serveOptions{}
	fs.StringVar(&so.listen, "listen", serve.DefaultListen, "address to listen on, HOST:PORT (port 0: a free one); a non-loopback one needs the token")
	fs.BoolVar(&so.noToken, "no-token", false, "serve without a token (refused unless --listen is a loopback address)")
	fs.StringArrayVar(&so.allowHosts, "allow-host", nil, "also accept requests whose Host is this: NAME (any port) or NAME:PORT, e.g. the name a reverse proxy or a tunnel uses (repeatable)")
	fs.StringArrayVar(&so.allowOrigins, "allow-origin", nil, "let web pages of this origin (SCHEME://HOST[:PORT]) call the server, with CORS (repeatable)")
	fs.MarkHidden("login")
	return fs, o, so
}

// serve is acpbridge serve; it returns the exit code.
func (c *cli) serve(args []string) int {
	fs, o, so := serveFlags(c.stderr)
	if err := parse(fs, o, args); err != nil {
		fmt.Fprintf(c.stderr, "acpbridge serve: %v\n", err)
		return 2
	}
	if c.helpOrVersion(fs, o, serveUsage) {
		return 0
	}
	if o.login {
		fmt.Fprintf(c.stderr, "acpbridge serve: --login runs in a terminal, without serve: acpbridge --agent %s --login\n", o.agent)
		return 2
	}
	if err := c.serveSessions(o, so); err != nil {
		fmt.Fprintf(c.stderr, "acpbridge serve: %v\n", err)
		return 1
	}
	return 0
}

// serveSessions serves one Manager's sessions over HTTP, every client
// connection on one edge.Server, until SIGINT or SIGTERM; then it closes the
// connections, cancels the turns and shuts the Manager down.
func (c *cli) serveSessions(o *options, so *serveOptions) error {
	dir, err := stateDir(o.stateDir)
	if err != nil {
		return err
	}
	st, err := c.setUp(o)
	if err != nil {
		return err
	}
	m, log, cfg, all := st.m, st.log, st.cfg, st.all
	s := edge.NewServer(m, c.version, log)            // no terminal logins: the clients are not at this machine's terminal
	s.ServeV2(edgev2.New(s, m, c.version, log).Serve) // a client asking for protocol 2 gets ACP v2 (draft)
	srv, err := serve.New(serve.Options{Listen: so.listen, Token: os.Getenv(tokenEnv), NoToken: so.noToken,
		AllowHosts: so.allowHosts, AllowOrigins: so.allowOrigins, StateDir: dir, Logger: log, Stderr: c.stderr,
		Connector: s.ServeConn, Agents: agentLister(all, cfg.Default)})
	if err != nil {
		return errors.Join(err, m.Shutdown())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Debug("serving", "agent", o.agent, "persist", cfg.Persist, "state", stateDirOf(cfg), "url", srv.URL())
	err = srv.Run(ctx)
	return errors.Join(err, stopManager(m, log))
}

// stopManager cancels the running turns and shuts m down (transcripts
// synced, agents stopped), waiting at most managerStopTimeout. Past it,
// acpbridge exits with Shutdown still running, and the agents' supervisor
// (Linux) stops what is left with it.
func stopManager(m *bridge.Manager, log *slog.Logger) error {
	m.CancelAll()
	done := make(chan error, 1)
	go func() { done <- m.Shutdown() }()
	select {
	case err := <-done:
		return err
	case <-time.After(managerStopTimeout):
		log.Warn("sessions still stopping; exiting without them", "timeout", managerStopTimeout)
		return fmt.Errorf("the sessions did not stop within %v", managerStopTimeout)
	}
}

// agentLister lists every agent this bridge knows, the default first, as
// doctor checks them (inspect), for GET /v1/agents.
func agentLister(all []agent.Backend, def string) serve.Agents {
	ordered := make([]agent.Backend, 0, len(all))
	for _, b := range all {
		if b.Info().Name == def {
			ordered = append([]agent.Backend{b}, ordered...)
		} else {
			ordered = append(ordered, b)
		}
	}
	versions := &versionCache{got: map[string]cachedVersion{}}
	return func(ctx context.Context) []serve.AgentStatus {
		out := make([]serve.AgentStatus, len(ordered))
		var wg sync.WaitGroup
		for i, b := range ordered {
			wg.Go(func() { out[i] = agentStatus(b.Info(), inspect(ctx, b, versions.get)) })
		}
		wg.Wait()
		return out
	}
}

// agentStatus is an inspection as the HTTP edge reports it.
func agentStatus(info agent.Info, in inspection) serve.AgentStatus {
	st := serve.AgentStatus{ID: info.Name, Title: info.Title, Installed: in.unavailable == nil,
		Version: in.version, CredentialsAvailable: in.credentials()}
	if in.unavailable != nil {
		st.Problem = in.unavailable.Error()
	}
	return st
}

// versionCache keeps each agent's --version for versionTTL.
type versionCache struct {
	mu  sync.Mutex
	got map[string]cachedVersion // by agent name
}

type cachedVersion struct {
	version string
	err     error
	at      time.Time
}

// get is b's --version, from the cache while it is fresh.
func (c *versionCache) get(ctx context.Context, b agent.Backend) (string, error) {
	name := b.Info().Name
	c.mu.Lock()
	v, ok := c.got[name]
	c.mu.Unlock()
	if ok && time.Since(v.at) < versionTTL {
		return v.version, v.err
	}
	ver, err := agentVersion(ctx, b)
	if ctx.Err() == nil { // a client that went away says nothing of the agent
		c.mu.Lock()
		c.got[name] = cachedVersion{ver, err, time.Now()}
		c.mu.Unlock()
	}
	return ver, err
}
