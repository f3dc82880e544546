package opencode

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
)

// A new user's first session/new finds neither the server's catalog nor
// one kept on disk, and the server takes seconds to start (its database
// made, its providers loaded). What OpenCode's own config files say is
// known at once: the configured model, the models of configured
// providers, the agents they add to OpenCode's built-in modes. The
// session offers that catalog until the server's is read.

// builtinAgents are OpenCode's own primary agents (the modes), which a
// config may disable but every server otherwise offers.
var builtinAgents = []agent.ConfigValue{
	{Value: "build", Name: "build", Description: "The default agent. Executes tools based on configured permissions."},
	{Value: "plan", Name: "plan", Description: "Plan mode. Disallows all edit tools."},
}

// fileConfig is what the bridge reads of an OpenCode config file.
type fileConfig struct {
	Model        string                  `json:"model"`
	DefaultAgent string                  `json:"default_agent"`
	Agent        map[string]agentConfig  `json:"agent"`
	Provider     map[string]providerConf `json:"provider"`
}

// agentConfig is an agent a config file adds or changes.
type agentConfig struct {
	Description string `json:"description"`
	Mode        string `json:"mode"`
	Hidden      bool   `json:"hidden"`
	Disable     bool   `json:"disable"`
}

// providerConf is a provider a config file sets up, with its models.
type providerConf struct {
	Name   string `json:"name"`
	Models map[string]struct {
		Name  string `json:"name"`
		Limit struct {
			Context int `json:"context"`
		} `json:"limit"`
	} `json:"models"`
}

// configCatalog is the catalog OpenCode's config files for dir promise,
// in env: its built-in modes and the agents the files add, the model they
// name and those of the providers they set up; nil if they name no model
// (OpenCode then picks one of its providers', which only the server says:
// a session/new that offered no model would have the client show none).
func configCatalog(env []string, dir string) *catalog {
	cfg := readConfigs(append(configFiles(env), projectConfigFiles(dir)...), agentkit.EnvValue(env, "OPENCODE_CONFIG_CONTENT"))
	cat := &catalog{defaultAgent: cfg.DefaultAgent}
	cat.agents = configAgents(cfg.Agent)
	if !slices.ContainsFunc(cat.agents, func(a agent.ConfigValue) bool { return a.Value == cat.defaultAgent }) && len(cat.agents) > 0 {
		cat.defaultAgent = cat.agents[0].Value
	}
	if cfg.Model == "" {
		return nil
	}
	cat.defaultModel = cfg.Model
	cat.models = configModels(cfg.Provider)
	if !slices.ContainsFunc(cat.models, func(m modelInfo) bool { return m.ref == cfg.Model }) {
		cat.models = append(cat.models, modelInfo{ref: cfg.Model, name: cfg.Model})
	}
	sort.Slice(cat.models, func(i, j int) bool { return cat.models[i].ref < cat.models[j].ref })
	return cat
}

// configAgents are the primary agents: the built-in ones the config does
// not disable, and those it adds, by name.
func configAgents(agents map[string]agentConfig) []agent.ConfigValue {
	var out []agent.ConfigValue
	for _, a := range builtinAgents {
		if c, ok := agents[a.Value]; ok && c.Description != "" {
			a.Description = c.Description
		}
		if c := agents[a.Value]; !c.Disable && !c.Hidden {
			out = append(out, a)
		}
	}
	var added []agent.ConfigValue
	for name, c := range agents {
		builtin := slices.ContainsFunc(builtinAgents, func(a agent.ConfigValue) bool { return a.Value == name })
		if !builtin && (c.Mode == "primary" || c.Mode == "all") && !c.Disable && !c.Hidden {
			added = append(added, agent.ConfigValue{Value: name, Name: name, Description: c.Description})
		}
	}
	sort.Slice(added, func(i, j int) bool { return added[i].Value < added[j].Value })
	return append(out, added...)
}

// configModels are the models of the configured providers, named as the
// server names them.
func configModels(providers map[string]providerConf) []modelInfo {
	var out []modelInfo
	for id, p := range providers {
		for mid, m := range p.Models {
			name := m.Name
			if name == "" {
				name = mid
			}
			if p.Name != "" {
				name += " (" + p.Name + ")"
			}
			out = append(out, modelInfo{ref: id + "/" + mid, name: name, context: m.Limit.Context})
		}
	}
	return out
}

// readConfigs merges the config files, in order (a later one's values
// win), then content, the config given inline. A file that is missing or
// can't be parsed is skipped: the server's catalog corrects what it
// leaves out.
func readConfigs(files []string, content string) fileConfig {
	var merged fileConfig
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			mergeConfig(&merged, b)
		}
	}
	if content != "" {
		mergeConfig(&merged, []byte(content))
	}
	return merged
}

// mergeConfig merges the config file b (JSON with comments) into into.
func mergeConfig(into *fileConfig, b []byte) {
	var c fileConfig
	if json.Unmarshal(stripJSONC(b), &c) != nil {
		return
	}
	if c.Model != "" {
		into.Model = c.Model
	}
	if c.DefaultAgent != "" {
		into.DefaultAgent = c.DefaultAgent
	}
	if into.Agent == nil {
		into.Agent = map[string]agentConfig{}
	}
	for name, a := range c.Agent {
		into.Agent[name] = a
	}
	if into.Provider == nil {
		into.Provider = map[string]providerConf{}
	}
	for id, p := range c.Provider {
		into.Provider[id] = p
	}
}

// projectConfigFiles are the config files of the project in dir, as
// OpenCode finds them: opencode.json and opencode.jsonc in dir and each
// directory above it up to the repository's root (the one with .git), the
// outermost first.
func projectConfigFiles(dir string) []string {
	if dir == "" {
		return nil
	}
	var dirs []string
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		dirs = append(dirs, d)
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil || filepath.Dir(d) == d {
			break
		}
	}
	var files []string
	for _, d := range slices.Backward(dirs) {
		files = append(files, filepath.Join(d, "opencode.json"), filepath.Join(d, "opencode.jsonc"))
	}
	return files
}

// stripJSONC is b, JSON with comments and trailing commas (OpenCode's
// config format), as plain JSON: the comments and the commas before a
// closing bracket blanked out, strings left as they are.
func stripJSONC(b []byte) []byte {
	out := slices.Clone(b)
	for i := 0; i < len(out); i++ {
		switch {
		case out[i] == '"':
			i = stringEnd(out, i)
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '/':
			for ; i < len(out) && out[i] != '\n'; i++ {
				out[i] = ' '
			}
		case out[i] == '/' && i+1 < len(out) && out[i+1] == '*':
			end := i + 2
			for end < len(out) && !(out[end] == '*' && end+1 < len(out) && out[end+1] == '/') {
				end++
			}
			for ; i < len(out) && i <= end+1; i++ {
				out[i] = ' '
			}
			i--
		case out[i] == ',' && closesNext(out, i+1):
			out[i] = ' '
		}
	}
	return out
}

// stringEnd is the index of the quote that ends the string starting at
// b[start], or the last index if it does not end.
func stringEnd(b []byte, start int) int {
	for i := start + 1; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return len(b) - 1
}

// closesNext reports whether the next thing in b from i, past white space
// and comments, closes an object or an array.
func closesNext(b []byte, i int) bool {
	for i < len(b) {
		switch {
		case b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r':
			i++
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			i += 2
			for i+1 < len(b) && !(b[i] == '*' && b[i+1] == '/') {
				i++
			}
			i += 2
		default:
			return b[i] == '}' || b[i] == ']'
		}
	}
	return false
}
