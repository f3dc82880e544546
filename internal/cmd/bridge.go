package cmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/acp/edgev2"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/spf13/pflag"
)

type options struct {
	agent, stateDir, persist, logLevel string
	idleTimeout, shared                time.Duration
	maxAgents, retries                 int
	agentsFile                         string
	command                            []string // after --: the ACP agent of --agent acp
	version, help, login               bool
	sharedAsked                        bool // --shared was given
}

// bridge is acpbridge itself, without a command: ACP on stdin/stdout, or
// with --login the agent's own login; it returns the exit code.
func (c *cli) bridge(args []string) int {
	fs, opts := flags(c.stderr)
	if err := parse(fs, opts, args); err != nil {
		fmt.Fprintf(c.stderr, "acpbridge: %v\n", err)
		return 2
	}
	if c.helpOrVersion(fs, opts, usage(commands())) {
		return 0
	}
	if opts.login {
		return c.login(opts)
	}
	if err := c.serveStdio(opts); err != nil {
		fmt.Fprintf(c.stderr, "acpbridge: %v\n", err)
		return 1
	}
	return 0
}

// helpOrVersion prints what --help (usage, then the flags) or --version
// asks for, and says whether one did.
func (c *cli) helpOrVersion(fs *pflag.FlagSet, o *options, usage string) bool {
	switch {
	case o.help:
		fs.SetOutput(c.stdout)
		fmt.Fprint(c.stdout, usage)
		fs.PrintDefaults()
		return true
	case o.version:
		fmt.Fprintf(c.stdout, "acpbridge %s\n", c.version)
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

// bridgeUsage is the bridge's own lines in acpbridge --help.
const bridgeUsage = `acpbridge [--agent NAME] [--agents FILE] [--state-dir DIR] [--persist auto|always|never]
          [--idle-timeout 30m] [--max-agents 8] [--shared 10m|0] [--log-level debug|info|warn|error]
          [--version] [--help] [-- ACP-AGENT ARGS...]
acpbridge --agent NAME --login       runs the agent's own login in this terminal`

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
func (c *cli) serveStdio(o *options) error {
	st, err := c.setUp(o)
	if err != nil {
		return err
	}
	m, log, cfg := st.m, st.log, st.cfg
	// A client that closes the bridge's stdout must not kill it with SIGPIPE
	// before the transcripts are synced: with SIGPIPE notified, a write to a
	// closed pipe fails with EPIPE instead, and the bridge shuts down.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Debug("serving", "agent", o.agent, "persist", cfg.Persist, "state", stateDirOf(cfg))
	s := edge.NewServer(m, c.version, log)
	offerLogins(s, o)
	s.ServeV2(edgev2.New(s, m, c.version, log).Serve) // a client asking for protocol 2 gets ACP v2 (draft)
	return s.Serve(ctx, c.stdin, c.stdout)
}

// setup is what both ways of serving sessions (stdio, HTTP) start from:
// the logger, the configuration with every backend, and the Manager of
// the sessions, its agents supervised.
type setup struct {
	log *slog.Logger
	cfg bridge.Config
	all []agent.Backend
	m   *bridge.Manager
}

// setUp makes the logger, reads the configuration, has the agents
// supervised and starts the Manager.
func (c *cli) setUp(o *options) (setup, error) {
	log, err := logger(o.logLevel, c.stderr)
	if err != nil {
		return setup{}, err
	}
	cfg, all, err := config(o, log)
	if err != nil {
		return setup{}, err
	}
	supervise(log)
	m, err := bridge.NewManager(cfg)
	if err != nil {
		return setup{}, err
	}
	return setup{log: log, cfg: cfg, all: all, m: m}, nil
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
