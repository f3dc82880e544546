package agentkit

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/coder/acp-go-sdk"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
)

// Options configures a backend that runs an agent's CLI. The zero value
// finds the CLI on PATH.
type Options struct {
	Path      string   // the executable; "" means $ACPBRIDGE_<AGENT>, else the CLI on PATH
	Env       []string // added to the bridge's environment for the CLI
	ExtraArgs []string // added to the CLI's arguments
	Logger    *slog.Logger
	// Shared, if not 0, has a backend whose agent is a server (codex
	// app-server, opencode serve) run it as a daemon shared by every
	// bridge of the user with the same executable, arguments and
	// environment, kept this long after the last of them has gone; one
	// that runs a process per session (claude) has its spare processes
	// kept by such a daemon (SharedSpares).
	Shared time.Duration
	// Catalogs, if not "", is the directory where a backend keeps the
	// last catalog of models and options its server gave, per
	// configuration, so that a session/new answers before the server
	// has started (see CatalogFile).
	Catalogs string
	// Retries is how many retries of a failed model request an agent may
	// report in one turn before the bridge gives up on the turn with the
	// provider's error; 0 means DefaultRetries.
	Retries int
}

// DefaultRetries is Options.Retries' default: enough to ride out a
// provider's brief trouble, few enough that an unreachable one fails the
// turn in minutes rather than never (codex, offline, retries about once a
// minute and never ends the turn by itself).
const DefaultRetries = 4

// CLI is what a backend that runs an agent's CLI keeps: its options,
// where the executable is and its logger.
type CLI struct {
	opts Options
	exe  Executable
	log  *slog.Logger
}

// NewCLI returns the CLI of agent name (also its executable's usual name),
// overridden by the variable env.
func NewCLI(name, env string, opts Options) CLI {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return CLI{opts: opts, exe: Executable{Name: name, Env: env, Path: opts.Path}, log: log.With("agent", name)}
}

// Shared is Options.Shared.
func (c CLI) Shared() time.Duration { return c.opts.Shared }

// Retries is Options.Retries, or DefaultRetries.
func (c CLI) Retries() int { return cmp.Or(c.opts.Retries, DefaultRetries) }

// stableEnv is env sorted, without what differs between two launches of
// the same program in the same place (PWD, OLDPWD, SHLVL, _) and what
// only the bridge reads about its daemons (ACPBRIDGE_DAEMONS,
// ACPBRIDGE_SHARED, ACPBRIDGE_MAX_DAEMONS): what keys a shared server, which runs everything
// with the environment of the bridge that started it, and the catalog
// kept of it.
func stableEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "PWD", "OLDPWD", "SHLVL", "_", "ACPBRIDGE_DAEMONS", "ACPBRIDGE_SHARED", "ACPBRIDGE_MAX_DAEMONS":
		default:
			out = append(out, kv)
		}
	}
	slices.Sort(out)
	return out
}

// Find returns the executable's path; see Executable.Find.
func (c CLI) Find() (string, error) { return c.exe.Find() }

// Check reports whether the executable can be found.
func (c CLI) Check() error {
	_, err := c.exe.Find()
	return err
}

// Command is the CLI run with args in env, for a person at a terminal: the
// caller connects its stdio. Backends give their agent's own login this way
// (agent.Caps.LoginCmd).
func (c CLI) Command(env []string, args ...string) (*exec.Cmd, error) {
	path, err := c.Find()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = env
	return cmd, nil
}

// Version runs the CLI with --version (stdin closed, within 15 s) and
// returns the first line it prints; extra is added to its environment.
func (c CLI) Version(ctx context.Context, extra ...string) (string, error) {
	path, err := c.Find()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = append(c.Env(), extra...)
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s --version: %w", path, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return first, nil
}

// LoginFrom is a Login from an environment variable or a file that holds
// credentials; how says how to log in when there are none.
func LoginFrom(env []string, vars []string, files []string, how string) agent.Login {
	set := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	for _, v := range vars {
		if set[v] != "" {
			return agent.Login{OK: true, Detail: v + " is set"}
		}
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && fi.Size() > 0 {
			return agent.Login{OK: true, Detail: "credentials in " + f}
		}
	}
	return agent.Login{Detail: "no key found (" + strings.Join(append(vars, files...), ", ") + "): " + how}
}

// EnvValue is the value of name in an environment list (the last wins).
func EnvValue(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == name {
			v = val
		}
	}
	return v
}

// HomeOf is the home directory an environment list names, else the
// user's.
func HomeOf(env []string) string {
	if h := EnvValue(env, "HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

// Auth is a backend's credentials check and its CLI's own login; one
// whose CLI can log out without a terminal is also a Logout.
type Auth interface {
	Login() agent.Login
	LoginCmd() (*exec.Cmd, error)
}

// Logout is a backend whose CLI has a logout that needs no terminal.
type Logout interface {
	LogoutCmd() (*exec.Cmd, error)
}

// Describe is the Info of a backend whose agent, like every CLI agent the
// bridge drives, takes text, images and embedded context; mcp is which MCP
// transports besides stdio it takes. Its Caps declare Check and Version
// (the CLI's --version, told not to look for updates) and auth's login
// (and logout); the backend adds the rest of its capabilities.
func (c CLI) Describe(title string, mcp acp.McpCapabilities, auth Auth) agent.Info {
	caps := agent.Caps{Check: c.Check, Version: c.quietVersion, Login: auth.Login, LoginCmd: auth.LoginCmd}
	if l, ok := auth.(Logout); ok {
		caps.LogoutCmd = l.LogoutCmd
	}
	return agent.Info{Name: c.exe.Name, Title: title, MCP: mcp,
		Prompt: acp.PromptCapabilities{Image: true, EmbeddedContext: true},
		Caps:   caps}
}

// noUpdateCheck is the CLIs' own switches that keep --version from
// looking for updates (claude, amp and opencode), so that it answers at
// once and offline.
var noUpdateCheck = []string{"DISABLE_AUTOUPDATER=1", "AMP_SKIP_UPDATE_CHECK=1", "OPENCODE_DISABLE_AUTOUPDATE=1"}

func (c CLI) quietVersion(ctx context.Context) (string, error) {
	return c.Version(ctx, noUpdateCheck...)
}

// Log is the backend's logger.
func (c CLI) Log() *slog.Logger { return c.log }

// Args is the command line: the bridge's args, then Options.ExtraArgs.
func (c CLI) Args(args ...string) []string {
	return append(args, c.opts.ExtraArgs...)
}

// Env is the environment for the CLI: the bridge's without its secrets
// (proc.Secrets) and the variables named in drop, plus Options.Env.
func (c CLI) Env(drop ...string) []string {
	var env []string
	for _, kv := range proc.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(drop, name) {
			env = append(env, kv)
		}
	}
	return append(env, c.opts.Env...)
}

// Executable is where an agent's CLI is: Path if set, else the
// ACPBRIDGE_<AGENT> variable (Env), else Name on PATH.
type Executable struct {
	Name string // "claude", "codex", ...
	Env  string // "ACPBRIDGE_CLAUDE", ...
	Path string // set by the backend's options; wins over the rest
}

// Find returns the executable's path, or an error that wraps
// agent.ErrAgentUnavailable and says how to make it available. On Windows
// exec.LookPath tries PATHEXT's extensions (.com, .exe, .bat, .cmd by
// default), so Name finds npm's claude.cmd shims as well as an .exe, and
// a Path or override variable may leave the extension out.
func (e Executable) Find() (string, error) {
	var p string
	var err error
	if e.Path != "" {
		p, err = exec.LookPath(e.Path)
	} else {
		p, err = proc.LookPath(e.Name, e.Env)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, err)
	}
	return p, nil
}
