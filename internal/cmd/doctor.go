package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/translators/codex"
	"github.com/spf13/pflag"
)

// DoctorCommand is the subcommand that says which agents this machine can
// run: `acpbridge doctor [--agent NAME] [--state-dir DIR] [--agents FILE]`.
const DoctorCommand = "doctor"

// doctor is the doctor subcommand; it returns the exit status.
func (c *cli) doctor(args []string) int {
	fs, opts := flags(c.stderr)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintf(c.stderr, "acpbridge doctor: %v\n", err)
		return 2
	}
	if opts.help {
		c.cmd.help(c.stdout)
		fmt.Fprintln(c.stdout)
		doctorFlags(fs, c.stdout)
		return 0
	}
	return diagnose(opts, c.stdout)
}

// doctorFlags prints the flags doctor reads, of acpbridge's that it
// accepts (fs).
func doctorFlags(fs *pflag.FlagSet, w io.Writer) {
	shown := pflag.NewFlagSet("doctor", pflag.ContinueOnError)
	for _, name := range []string{"agent", "agents", "state-dir", "help"} {
		shown.AddFlag(fs.Lookup(name))
	}
	shown.SetOutput(w)
	shown.PrintDefaults()
}

// diagnose checks each agent (its executable and version, its credentials),
// the state directory, and prints the editor snippet for this machine. It
// returns 1 if the default agent can't run here.
func diagnose(o *options, stdout io.Writer) int {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	named, err := downstreams(o, log)
	if err != nil {
		fmt.Fprintf(stdout, "agents file: %v\n", err)
	}
	ctx := context.Background()
	all := append(backends(codex.Options{Logger: log}), named...)
	code := 0
	if err := knownAgent(o.agent, all); err != nil {
		fmt.Fprintf(stdout, "--  %v\n\n", err)
		code = 1
	}
	var runs []string
	for _, b := range all {
		name := b.Info().Name
		c := checkBackend(ctx, b)
		mark := "ok  "
		if !c.ok {
			mark = "--  "
			if name == o.agent {
				code = 1
			}
		} else {
			runs = append(runs, name)
		}
		fmt.Fprintf(stdout, "%s%s%s\n", mark, name, c.note)
		for _, l := range c.lines {
			fmt.Fprintf(stdout, "      %s\n", l)
		}
	}
	fmt.Fprintln(stdout)
	if dir, err := stateDir(o.stateDir); err != nil {
		fmt.Fprintf(stdout, "--  state directory: %v\n", err)
	} else if err := writable(dir); err != nil {
		fmt.Fprintf(stdout, "--  state directory %s: %v (session/load still replays from it; --state-dir picks another)\n", dir, err)
	} else {
		fmt.Fprintf(stdout, "ok  state directory %s (writable)\n", dir)
	}
	fmt.Fprintln(stdout)
	listDaemons(stdout, daemon.Root(nil))
	fmt.Fprintln(stdout)
	snippet(stdout, runs)
	if code != 0 {
		fmt.Fprintf(stdout, "\nThe default agent (--agent %s) can't run here: see above.\n", o.agent)
	}
	return code
}

// check is what can be told of an agent without starting it: whether it
// can run, a note for its status line, and the details.
type check struct {
	ok    bool
	note  string
	lines []string
}

// checkBackend checks an agent without starting it.
func checkBackend(ctx context.Context, b agent.Backend) check {
	return inspect(ctx, b, agentVersion).check()
}

// inspection is what can be told of an agent without starting it (doctor
// prints it; acpbridge serve's GET /v1/agents reports it).
type inspection struct {
	unavailable error  // why it can't run here (Caps.Check); nil if it can
	hasVersion  bool   // it tells a version (Caps.Version)
	version     string // its CLI's --version
	versionErr  error
	login       *agent.Login // nil: it needs no login the bridge can see
}

// inspect checks an agent without starting it; version runs its
// --version (agentVersion, or a cache of it).
func inspect(ctx context.Context, b agent.Backend, version func(context.Context, agent.Backend) (string, error)) inspection {
	caps := b.Info().Caps
	var in inspection
	if caps.Login != nil { // a key in the environment counts before the agent is installed
		login := caps.Login()
		in.login = &login
	}
	if caps.Check != nil {
		if in.unavailable = caps.Check(); in.unavailable != nil {
			return in
		}
	}
	if in.hasVersion = caps.Version != nil; in.hasVersion {
		in.version, in.versionErr = version(ctx, b)
	}
	return in
}

// agentVersion runs b's --version (Caps.Version, which b has).
func agentVersion(ctx context.Context, b agent.Backend) (string, error) {
	return b.Info().Caps.Version(ctx)
}

// credentials is whether the agent has what it needs to log in: a login
// found, or none needed.
func (in inspection) credentials() bool { return in.login == nil || in.login.OK }

// check is the inspection as doctor shows it.
func (in inspection) check() check {
	if in.unavailable != nil {
		return check{lines: []string{in.unavailable.Error()}}
	}
	c := check{ok: true}
	switch {
	case in.versionErr != nil:
		c.lines = append(c.lines, "version: "+in.versionErr.Error())
	case in.hasVersion:
		c.lines = append(c.lines, "version: "+in.version)
	}
	if in.login != nil {
		c.lines = append(c.lines, "login: "+in.login.Detail)
		c.ok = in.login.OK || !in.login.Required
		if !in.login.OK {
			c.note = " (no credentials found; see login below)"
		}
	}
	return c
}

// writable checks that dir can be written (making it if need be).
func writable(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".doctor-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// snippet prints Zed's agent_servers entries for the agents that can run.
func snippet(w io.Writer, agents []string) {
	self, err := os.Executable()
	if err != nil {
		self = "acpbridge"
	}
	self, _ = filepath.Abs(self)
	servers := map[string]any{}
	for _, a := range agents {
		servers[a+" (acpbridge)"] = map[string]any{"type": "custom", "command": self, "args": []string{"--agent", a}}
	}
	b, _ := json.MarshalIndent(map[string]any{"agent_servers": servers}, "", "  ")
	fmt.Fprintf(w, "For Zed's settings.json (the agents that can run here):\n%s\n", b)
}
