package cmd

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/acpagent"
)

// agentServer is one entry of an agents file, in the shape of Zed's
// agent_servers: {"NAME": {"command": …, "args": [...], "env": {...}}}.
// Other keys ("type": "custom", …) are ignored.
type agentServer struct {
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
}

// builtinAgents are the agents acpbridge drives itself, and "acp", the
// downstream given after --.
var builtinAgents = []string{"claude", "codex", "opencode", "amp", "mock", "acp"}

// agentsFile is --agents, else $XDG_CONFIG_HOME/acpbridge/agents.json;
// explicit tells whether it must exist.
func agentsFile(flag string) (path string, explicit bool) {
	if flag != "" {
		return flag, true
	}
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" || !filepath.IsAbs(dir) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", false
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "acpbridge", "agents.json"), false
}

// downstreams reads the named ACP agents of the agents file, and the one
// given after -- (as "acp"), as backends.
func downstreams(o *options, log *slog.Logger) ([]agent.Backend, error) {
	var out []agent.Backend
	if len(o.command) > 0 {
		out = append(out, acpagent.New(acpagent.Spec{Name: "acp", Title: "ACP agent (" + filepath.Base(o.command[0]) + ")",
			Command: o.command[0], Args: o.command[1:], Logger: log}))
	}
	path, explicit := agentsFile(o.agentsFile)
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) && !explicit {
		return out, nil
	}
	if err != nil {
		return nil, fmt.Errorf("--agents: %w", err)
	}
	var servers map[string]agentServer
	if err := json.Unmarshal(data, &servers); err != nil {
		return nil, fmt.Errorf("%s: want {\"NAME\": {\"command\": …, \"args\": […], \"env\": {…}}}: %w", path, err)
	}
	names := make([]string, 0, len(servers))
	for name := range servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		s := servers[name]
		switch {
		case slices.Contains(builtinAgents, name):
			return nil, fmt.Errorf("%s: %q is a built-in agent's name; give the ACP agent another", path, name)
		case s.Command == "":
			return nil, fmt.Errorf("%s: agent %q has no command", path, name)
		}
		out = append(out, acpagent.New(acpagent.Spec{Name: name, Command: s.Command, Args: s.Args, Env: s.Env, Logger: log}))
	}
	return out, nil
}
