package cmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/amp"
	"github.com/acpbridge/acpbridge/translators/claude"
	"github.com/acpbridge/acpbridge/translators/codex"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/acpbridge/acpbridge/translators/opencode"
)

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
