package opencode

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// OpenCode takes the agent (mode), the model and its variant (effort) with
// each prompt, so all three are NextTurn options.

// catalog is what the server offers: its primary agents (the modes) and
// its providers' models.
type catalog struct {
	agents       []agent.ConfigValue
	defaultAgent string
	models       []modelInfo
	defaultModel string // "provider/model"
}

// modelInfo is one model of a provider.
type modelInfo struct {
	ref      string // "provider/model"
	name     string
	context  int
	variants []string
}

// keptCatalog is a catalog as it is kept on disk (agentkit.SaveCatalog).
type keptCatalog struct {
	Agents       []agent.ConfigValue `json:"agents"`
	DefaultAgent string              `json:"defaultAgent"`
	Models       []keptModel         `json:"models"`
	DefaultModel string              `json:"defaultModel"`
}

// keptModel is a modelInfo as it is kept on disk.
type keptModel struct {
	Ref      string   `json:"ref"`
	Name     string   `json:"name"`
	Context  int      `json:"context,omitempty"`
	Variants []string `json:"variants,omitempty"`
}

// kept is c as it is kept on disk.
func (c *catalog) kept() keptCatalog {
	k := keptCatalog{Agents: c.agents, DefaultAgent: c.defaultAgent, DefaultModel: c.defaultModel}
	for _, m := range c.models {
		k.Models = append(k.Models, keptModel{Ref: m.ref, Name: m.name, Context: m.context, Variants: m.variants})
	}
	return k
}

// catalog is the catalog k keeps.
func (k keptCatalog) catalog() *catalog {
	c := &catalog{agents: k.Agents, defaultAgent: k.DefaultAgent, defaultModel: k.DefaultModel}
	for _, m := range k.Models {
		c.models = append(c.models, modelInfo{ref: m.Ref, name: m.Name, context: m.Context, variants: m.Variants})
	}
	return c
}

// same reports whether c and d offer the same.
func (c *catalog) same(d *catalog) bool {
	a, _ := json.Marshal(c.kept())
	b, _ := json.Marshal(d.kept())
	return bytes.Equal(a, b)
}

// readCatalog asks the server for its agents, providers and configured
// model. The first calls for dir bootstrap its instance and load its
// providers: ctx bounds them (the server's start), not callTimeout.
func readCatalog(ctx context.Context, srv *server, dir string) (*catalog, error) {
	var agents []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Mode        string `json:"mode"`
		Hidden      bool   `json:"hidden"`
	}
	if err := srv.callLong(ctx, http.MethodGet, "/agent", dir, nil, &agents); err != nil {
		return nil, err
	}
	var providers struct {
		Providers []struct {
			ID     string `json:"id"`
			Name   string `json:"name"`
			Models map[string]struct {
				ID    string `json:"id"`
				Name  string `json:"name"`
				Limit struct {
					Context int `json:"context"`
				} `json:"limit"`
				Variants map[string]any `json:"variants"`
			} `json:"models"`
		} `json:"providers"`
		Default map[string]string `json:"default"`
	}
	if err := srv.callLong(ctx, http.MethodGet, "/config/providers", dir, nil, &providers); err != nil {
		return nil, err
	}
	srv.loaded(dir)
	var cfg struct {
		Model        string `json:"model"`
		DefaultAgent string `json:"default_agent"`
	}
	if err := srv.callLong(ctx, http.MethodGet, "/config", dir, nil, &cfg); err != nil {
		return nil, err
	}
	cat := &catalog{defaultModel: cfg.Model, defaultAgent: cfg.DefaultAgent}
	for _, a := range agents {
		if (a.Mode == "primary" || a.Mode == "all") && !a.Hidden {
			cat.agents = append(cat.agents, agent.ConfigValue{Value: a.Name, Name: a.Name, Description: a.Description})
		}
	}
	for _, p := range providers.Providers {
		for id, m := range p.Models {
			mi := modelInfo{ref: p.ID + "/" + id, name: m.Name + " (" + p.Name + ")", context: m.Limit.Context}
			for v := range m.Variants {
				mi.variants = append(mi.variants, v)
			}
			sortEfforts(mi.variants)
			cat.models = append(cat.models, mi)
		}
		if cat.defaultModel == "" && providers.Default[p.ID] != "" {
			cat.defaultModel = p.ID + "/" + providers.Default[p.ID]
		}
	}
	sort.Slice(cat.models, func(i, j int) bool { return cat.models[i].ref < cat.models[j].ref })
	if cat.defaultAgent == "" && len(cat.agents) > 0 {
		cat.defaultAgent = cat.agents[0].Value
		if slices.ContainsFunc(cat.agents, func(c agent.ConfigValue) bool { return c.Value == "build" }) {
			cat.defaultAgent = "build"
		}
	}
	if len(cat.agents) == 0 {
		return nil, fmt.Errorf("opencode offers no primary agent")
	}
	return cat, nil
}

// effortOrder sorts the usual variant names from least to most effort.
var effortOrder = []string{"minimal", "low", "medium", "high", "xhigh", "max"}

func sortEfforts(vs []string) {
	rank := func(v string) int {
		if i := slices.Index(effortOrder, v); i >= 0 {
			return i
		}
		return len(effortOrder)
	}
	sort.Slice(vs, func(i, j int) bool {
		if ri, rj := rank(vs[i]), rank(vs[j]); ri != rj {
			return ri < rj
		}
		return vs[i] < vs[j]
	})
}

// options are a session's config options from the catalog.
func (c *catalog) options() []agent.ConfigOption {
	opts := []agent.ConfigOption{{ID: agent.ConfigMode, Name: "Mode", Category: acp.SessionConfigOptionCategoryMode,
		Current: c.defaultAgent, Choices: c.agents, NextTurn: true}}
	if len(c.models) == 0 {
		return opts
	}
	model := agent.ConfigOption{ID: agent.ConfigModel, Name: "Model", Category: acp.SessionConfigOptionCategoryModel,
		Current: c.defaultModel, NextTurn: true}
	var efforts []string
	for _, m := range c.models {
		model.Choices = append(model.Choices, agent.ConfigValue{Value: m.ref, Name: m.name})
		for _, v := range m.variants {
			if !slices.Contains(efforts, v) {
				efforts = append(efforts, v)
			}
		}
	}
	sortEfforts(efforts)
	opts = append(opts, model)
	if len(efforts) > 0 {
		opts = append(opts, agentkit.EffortOption("The model's own default", true, efforts...))
	}
	return opts
}

// contextOf is a model's context window, or 0 if unknown.
func (c *catalog) contextOf(ref string) int {
	for _, m := range c.models {
		if m.ref == ref {
			return m.context
		}
	}
	return 0
}
