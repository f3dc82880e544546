// Command acpbridge is an ACP agent that an editor launches: it speaks the
// Agent Client Protocol on stdin/stdout and drives a coding agent behind
// it, keeping its own transcript of every session.
//
// The data path is: stdin → acp (the edge) → bridge (sessions, turns,
// transcripts) → translators/<agent> → the agent, and back.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/acp"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/amp"
	"github.com/acpbridge/acpbridge/translators/claude"
	"github.com/acpbridge/acpbridge/translators/codex"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/acpbridge/acpbridge/translators/opencode"
	"github.com/spf13/pflag"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// backends returns the agents this build drives, in config-option order.
// o.Shared, if not 0, has codex and opencode run their servers as daemons
// shared between bridges, and claude's spare processes kept by one (see
// --shared); o.Retries bounds a provider's retries in a turn (--retries).
func backends(o codex.Options) []agent.Backend {
	amps := amp.CLIOptions{Logger: o.Logger, Retries: o.Retries}
	return []agent.Backend{claude.New(o), codex.New(o), opencode.New(o), amp.New(amp.Options{CLIOptions: amps}), mock.New()}
}

// AutoAgent picks the default agent among those this machine can run:
// the first of autoOrder found, else the mock (so that a client that
// installed acpbridge alone, from the ACP Registry say, gets an agent
// that answers and an agent option listing what can run).
const AutoAgent = "auto"

var autoOrder = []string{"claude", "codex", "opencode", "amp"}

func autoAgent(runs []agent.Backend) string {
	for _, name := range autoOrder {
		for _, b := range runs {
			if b.Info().Name == name {
				return name
			}
		}
	}
	return "mock"
}

// runnable keeps the backends that can run here; the agent config option
// lists only those. why says what is missing for the others.
func runnable(bs []agent.Backend) (ok []agent.Backend, why map[string]error) {
	why = map[string]error{}
	for _, b := range bs {
		if check := b.Info().Caps.Check; check != nil {
			if err := check(); err != nil {
				why[b.Info().Name] = err
				continue
			}
		}
		ok = append(ok, b)
	}
	return ok, why
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

type options struct {
	agent, stateDir, persist, logLevel string
	idleTimeout, shared                time.Duration
	maxAgents, retries                 int
	agentsFile                         string
	command                            []string // after --: the ACP agent of --agent acp
	version, help, login               bool
	sharedAsked                        bool // --shared was given
}

// run is the whole program; it returns the exit code.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == amp.DelegateCommand {
		return amp.RunDelegate(stdin, stderr) // Amp runs this as its permission hook
	}
	if len(args) > 0 && args[0] == proc.SuperviseCommand {
		return proc.Supervise(args[1:]) // the bridge runs its agents under this
	}
	if len(args) > 0 && args[0] == daemon.Command {
		return daemon.Keep(args[1:]) // keeps a server shared between bridges (--shared)
	}
	if len(args) > 0 && args[0] == daemon.SparesCommand {
		supervise(slog.New(slog.NewTextHandler(stderr, nil)))
		return daemon.ServeSpares(args[1:]) // keeps spare agent processes for bridges (--shared)
	}
	if len(args) > 0 && args[0] == DaemonsCommand {
		return daemons(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == DoctorCommand {
		fs, opts := flags(stderr)
		if err := fs.Parse(args[1:]); err != nil {
			fmt.Fprintf(stderr, "acpbridge doctor: %v\n", err)
			return 2
		}
		return doctor(opts, stdout)
	}
	if len(args) > 0 && args[0] == ServeCommand {
		return serveHTTP(args[1:], stdout, stderr)
	}
	fs, opts := flags(stderr)
	if err := parse(fs, opts, args); err != nil {
		fmt.Fprintf(stderr, "acpbridge: %v\n", err)
		return 2
	}
	if helpOrVersion(fs, opts, usage, stdout) {
		return 0
	}
	if opts.login {
		return login(opts, stdin, stdout, stderr)
	}
	if err := serveStdio(opts, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "acpbridge: %v\n", err)
		return 1
	}
	return 0
}

// helpOrVersion prints what --help (usage, then the flags) or --version
// asks for, and says whether one did.
func helpOrVersion(fs *pflag.FlagSet, o *options, usage string, stdout io.Writer) bool {
	switch {
	case o.help:
		fs.SetOutput(stdout)
		fmt.Fprint(stdout, usage)
		fs.PrintDefaults()
		return true
	case o.version:
		fmt.Fprintf(stdout, "acpbridge %s\n", version)
		return true
	}
	return false
}

// parse parses args into fs; what follows -- is the ACP agent's command
// (o.command), and nothing else may be left over.
func parse(fs *pflag.FlagSet, o *options, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.sharedAsked = fs.Changed("shared")
	if dash := fs.ArgsLenAtDash(); dash >= 0 {
		o.command = fs.Args()[dash:]
	}
	if len(fs.Args()) > len(o.command) {
		return fmt.Errorf("unexpected arguments %q (an ACP agent's command goes after --)", fs.Args())
	}
	return nil
}

const usage = `acpbridge is an ACP agent: an editor (or any ACP client) runs it and speaks
the Agent Client Protocol on its stdin/stdout. Logs go to stderr.

Usage: acpbridge doctor [--agent NAME]   says which agents this machine can run
       acpbridge daemons [stop]         lists (or stops) the daemons the bridges share
       acpbridge [--agent NAME] [--agents FILE] [--state-dir DIR] [--persist auto|always|never]
                 [--idle-timeout 30m] [--max-agents 8] [--shared 10m|0] [--log-level debug|info|warn|error]
                 [--version] [--help] [-- ACP-AGENT ARGS...]
       acpbridge --agent NAME --login       runs the agent's own login in this terminal
       acpbridge serve [the flags above] [--listen 127.0.0.1:2468] [--no-token]
                 [--allow-host HOST]... [--allow-origin ORIGIN]...
                                            serves the sessions over HTTP (acpbridge serve --help)

With --agent acp, everything after -- is the command of an agent that speaks
ACP itself, which acpbridge then serves with its transcripts.

`

func flags(stderr io.Writer) (*pflag.FlagSet, *options) {
	o := &options{}
	fs := pflag.NewFlagSet("acpbridge", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.agent, "agent", "mock", "agent for new sessions: "+strings.Join(builtinAgents, ", ")+", a name from the agents file, or auto (the first of claude, codex, opencode, amp installed here, else mock)")
	fs.StringVar(&o.agentsFile, "agents", "", "ACP agents by name, as Zed's agent_servers (default $XDG_CONFIG_HOME/acpbridge/agents.json)")
	fs.StringVar(&o.stateDir, "state-dir", "", "where transcripts live (env ACPBRIDGE_STATE_DIR; default $XDG_STATE_HOME/acpbridge or ~/.local/state/acpbridge; on Windows %LOCALAPPDATA%\\acpbridge)")
	fs.StringVar(&o.persist, "persist", "auto", "which transcripts to keep: auto, always or never (see README)")
	fs.StringVar(&o.logLevel, "log-level", "info", "stderr log level: debug, info, warn or error")
	fs.DurationVar(&o.idleTimeout, "idle-timeout", 30*time.Minute, "stop a session's agent after this long without a turn (0: never); its next prompt starts it again")
	fs.IntVar(&o.retries, "retries", 4, "give up on a turn after its agent retried a failing model provider this many times (codex)")
	fs.IntVar(&o.maxAgents, "max-agents", 8, "at most this many sessions' agents run; the least recently used idle ones are stopped (0: no cap)")
	fs.DurationVar(&o.shared, "shared", DefaultShared, "run codex app-server and opencode serve as daemons shared by every acpbridge of this user, and keep a spare claude started in one, kept this long after the last bridge leaves; 0 (or $"+SharedEnv+"=0): every bridge runs its own (see README)")
	fs.Lookup("shared").NoOptDefVal = DefaultShared.String()
	fs.BoolVar(&o.login, "login", false, "run --agent's own login (claude auth login, codex login …) in this terminal, then exit")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVarP(&o.help, "help", "h", false, "print this help and exit")
	// Some ACP clients (acp-go-sdk's example/gemini) append this flag.
	fs.Bool("experimental-acp", false, "accepted and ignored")
	fs.MarkHidden("experimental-acp")
	return fs, o
}

// serveStdio is acpbridge itself: ACP with one client on stdin/stdout.
func serveStdio(o *options, stdin io.Reader, stdout, stderr io.Writer) error {
	log, err := logger(o.logLevel, stderr)
	if err != nil {
		return err
	}
	cfg, _, err := config(o, log)
	if err != nil {
		return err
	}
	supervise(log)
	m, err := bridge.NewManager(cfg)
	if err != nil {
		return err
	}
	// A client that closes the bridge's stdout must not kill it with SIGPIPE
	// before the transcripts are synced: with SIGPIPE notified, a write to a
	// closed pipe fails with EPIPE instead, and the bridge shuts down.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Debug("serving", "agent", o.agent, "persist", cfg.Persist, "state", stateDirOf(cfg))
	s := acp.NewServer(m, version, log)
	offerLogins(s, o)
	return s.Serve(ctx, stdin, stdout)
}

// supervise runs every agent process under acpbridge's supervisor, which
// leaves nothing of the agent's running when the bridge dies, even if it
// is SIGKILLed (Linux; see proc.Supervise), and has acpbridge keep the
// daemons of --shared.
func supervise(log *slog.Logger) {
	self, err := os.Executable()
	if err != nil {
		log.Warn("agents run unsupervised: can't find acpbridge's executable", "err", err)
		return
	}
	daemon.KeepWith([]string{self, daemon.Command})
	if runtime.GOOS == "linux" {
		proc.SuperviseWith([]string{self, proc.SuperviseCommand})
	}
}

// config is the bridge's configuration from the flags; all is every agent
// it knows, runnable here or not (cfg.Backends are those that run).
func config(o *options, log *slog.Logger) (cfg bridge.Config, all []agent.Backend, err error) {
	named, err := downstreams(o, log)
	if err != nil {
		return bridge.Config{}, nil, err
	}
	if o.agent == "acp" && len(o.command) == 0 {
		return bridge.Config{}, nil, fmt.Errorf("--agent acp: give the ACP agent's command after --, e.g. acpbridge --agent acp -- opencode acp")
	}
	if err := sharedTime(o, log); err != nil {
		return bridge.Config{}, nil, err
	}
	all = append(backends(codex.Options{Logger: log, Shared: o.shared, Retries: o.retries, Catalogs: catalogDir()}), named...)
	bs, missing := runnable(all)
	if o.agent == AutoAgent {
		o.agent = autoAgent(bs)
		log.Info("--agent auto: the first agent this machine can run", "agent", o.agent)
	}
	cfg = bridge.Config{Backends: bs, Default: o.agent, Persist: bridge.PersistMode(o.persist), Logger: log,
		IdleTimeout: o.idleTimeout, MaxAgents: o.maxAgents}
	cfg.Cwd, _ = os.Getwd() // editors start agents in the project's directory
	if err := missing[o.agent]; err != nil {
		return cfg, all, fmt.Errorf("--agent %s: %w", o.agent, err) // err wraps agent.ErrAgentUnavailable
	}
	if err := checkAgent(o.agent, cfg.Backends, all); err != nil {
		return cfg, all, err
	}
	switch cfg.Persist {
	case bridge.PersistNever:
		return cfg, all, nil
	case bridge.PersistAuto, bridge.PersistAlways:
	default:
		return cfg, all, fmt.Errorf("--persist %q: want auto, always or never", o.persist)
	}
	dir, err := stateDir(o.stateDir)
	if err != nil {
		return cfg, all, err
	}
	cfg.Store, err = persist.Open(dir)
	return cfg, all, err
}

func checkAgent(name string, runs, all []agent.Backend) error {
	if err := knownAgent(name, all); err != nil {
		return err
	}
	for _, b := range runs {
		if b.Info().Name == name {
			return nil
		}
	}
	return fmt.Errorf("--agent %s: %w", name, agent.ErrAgentUnavailable)
}

// knownAgent says whether name is an agent of this build or of the agents
// file (all), or one of --agent's other values (acp, auto); the error
// lists them all.
func knownAgent(name string, all []agent.Backend) error {
	names := make([]string, 0, len(all)+2)
	for _, b := range all {
		names = append(names, b.Info().Name)
	}
	if slices.Contains(names, name) || name == "acp" || name == AutoAgent {
		return nil
	}
	names = append(names, "acp (an ACP agent's command after --)", AutoAgent+" (the first installed of "+strings.Join(autoOrder, ", ")+")")
	return fmt.Errorf("--agent %q: unknown agent; choose one of %s", name, strings.Join(names, ", "))
}

// stateDir resolves --state-dir, then ACPBRIDGE_STATE_DIR, then the XDG
// state directory (on Windows %LOCALAPPDATA%\acpbridge).
func stateDir(flag string) (string, error) {
	if flag != "" {
		return filepath.Abs(flag)
	}
	if d := os.Getenv("ACPBRIDGE_STATE_DIR"); d != "" {
		return filepath.Abs(d)
	}
	if runtime.GOOS == "windows" {
		d, err := os.UserCacheDir() // %LocalAppData%
		if err != nil {
			return "", fmt.Errorf("finding the state directory (set --state-dir): %w", err)
		}
		return filepath.Join(d, "acpbridge"), nil
	}
	if d := os.Getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "acpbridge"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("finding the state directory (set --state-dir): %w", err)
	}
	return filepath.Join(home, ".local", "state", "acpbridge"), nil
}

func stateDirOf(cfg bridge.Config) string {
	if cfg.Store == nil {
		return "(none)"
	}
	return cfg.Store.Dir()
}

func logger(level string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, errors.New("--log-level: want debug, info, warn or error")
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: l})), nil
}
