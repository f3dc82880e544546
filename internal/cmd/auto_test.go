package cmd

import (
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/mock"
)

type named struct {
	agent.Backend
	name string
}

func (n named) Info() agent.Info { return agent.Info{Name: n.name} }

func TestAutoAgent(t *testing.T) {
	b := func(names ...string) []agent.Backend {
		var out []agent.Backend
		for _, n := range names {
			out = append(out, named{mock.New(), n})
		}
		return out
	}
	for _, tc := range []struct {
		runs []agent.Backend
		want string
	}{
		{b("mock", "amp", "codex"), "codex"},
		{b("claude", "codex", "mock"), "claude"},
		{b("mock"), "mock"},
		{nil, "mock"},
	} {
		if got := autoAgent(tc.runs); got != tc.want {
			t.Errorf("autoAgent = %s, want %s", got, tc.want)
		}
	}
}
