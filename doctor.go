package main

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
)

// DoctorCommand is the subcommand that says which agents this machine can
// run: `acpbridge doctor [--agent NAME] [--state-dir DIR] [--agents FILE]`.
const DoctorCommand = "doctor"

// doctor checks each agent (its executable and version, its credentials),
// the state directory, and prints the editor snippet for this machine. It
// returns 1 if the default agent can't run here.
func doctor(o *options, stdout io.Writer) int {
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
	caps := b.Info().Caps
	if caps.Check != nil {
		if err := caps.Check(); err != nil {
			return check{lines: []string{err.Error()}}
		}
	}
	c := check{ok: true}
	if caps.Version != nil {
		ver, err := caps.Version(ctx)
		if err != nil {
			c.lines = append(c.lines, "version: "+err.Error())
		} else {
			c.lines = append(c.lines, "version: "+ver)
		}
	}
	if caps.Login != nil {
		login := caps.Login()
		c.lines = append(c.lines, "login: "+login.Detail)
		c.ok = login.OK || !login.Required
		if !login.OK {
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
