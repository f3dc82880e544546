package main

import (
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/mock"
)

type named struct {
	bridge.Backend
	name string
}

func (n named) Info() bridge.Info { return bridge.Info{Name: n.name} }

func TestAutoAgent(t *testing.T) {
	b := func(names ...string) []bridge.Backend {
		var out []bridge.Backend
		for _, n := range names {
			out = append(out, named{mock.New(), n})
		}
		return out
	}
	for _, tc := range []struct {
		runs []bridge.Backend
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
