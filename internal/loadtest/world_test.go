package loadtest

import (
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/claude"
	"github.com/acpbridge/acpbridge/translators/claude/fakeapi"
	"github.com/acpbridge/acpbridge/translators/codex"
	"github.com/acpbridge/acpbridge/translators/codex/fakeresponses"
	"github.com/acpbridge/acpbridge/translators/opencode"
	"github.com/acpbridge/acpbridge/translators/opencode/fakechat"
)

// world is the real agent CLIs, each on its fake model with a home of its
// own, which bridges (and restarted ones) share.
type world struct {
	claude   *fakeapi.Server
	codex    *fakeresponses.Server
	opencode *fakechat.Server // nil unless asked for
	backends func() []agent.Backend
}

// newWorld sets up claude and codex, and opencode if withOpencode; it
// skips loudly when a CLI is missing.
func newWorld(t *testing.T, withOpencode bool) *world {
	claudeBin, codexBin := fakeapi.ClaudeBin(t), fakeresponses.CodexBin(t)
	w := &world{claude: fakeapi.New(fakeapi.Directives()), codex: fakeresponses.New(fakeresponses.Directives())}
	t.Cleanup(w.claude.Close)
	t.Cleanup(w.codex.Close)
	claudeHome := t.TempDir()
	xhome, xcodexHome := fakeresponses.Home(t, w.codex.URL, fakeresponses.HomeOptions{})
	var opencodeBin, ohome string
	if withOpencode {
		opencodeBin = fakechat.OpencodeBin(t)
		w.opencode = fakechat.New(fakechat.Directives())
		t.Cleanup(w.opencode.Close)
		ohome = fakechat.Home(t, w.opencode.URL)
	}
	w.backends = func() []agent.Backend {
		bs := []agent.Backend{
			claude.New(claude.Options{Path: claudeBin, Env: fakeapi.Env(w.claude.URL, claudeHome), ExtraArgs: []string{"--setting-sources", ""}}),
			codex.New(codex.Options{Path: codexBin, Env: fakeresponses.Env(xhome, xcodexHome)})}
		if withOpencode {
			bs = append(bs, opencode.New(opencode.Options{Path: opencodeBin, Env: fakechat.Env(ohome, fakechat.ConfigPath(ohome))}))
		}
		return bs
	}
	return w
}
