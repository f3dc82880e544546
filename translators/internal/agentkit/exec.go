package agentkit

import (
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/proc"
)

// Options configures a backend that runs an agent's CLI. The zero value
// finds the CLI on PATH.
type Options struct {
	Path      string   // the executable; "" means $ACPBRIDGE_<AGENT>, else the CLI on PATH
	Env       []string // added to the bridge's environment for the CLI
	ExtraArgs []string // added to the CLI's arguments
	Logger    *slog.Logger
}

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

// Find returns the executable's path; see Executable.Find.
func (c CLI) Find() (string, error) { return c.exe.Find() }

// Check reports whether the executable can be found.
func (c CLI) Check() error {
	_, err := c.exe.Find()
	return err
}

// Log is the backend's logger.
func (c CLI) Log() *slog.Logger { return c.log }

// Args is the command line: the bridge's args, then Options.ExtraArgs.
func (c CLI) Args(args ...string) []string {
	return append(args, c.opts.ExtraArgs...)
}

// Env is the environment for the CLI: the bridge's without the variables
// named in drop, plus Options.Env.
func (c CLI) Env(drop ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
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
// bridge.ErrAgentUnavailable and says how to make it available.
func (e Executable) Find() (string, error) {
	var p string
	var err error
	if e.Path != "" {
		p, err = exec.LookPath(e.Path)
	} else {
		p, err = proc.LookPath(e.Name, e.Env)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %v", bridge.ErrAgentUnavailable, err)
	}
	return p, nil
}
