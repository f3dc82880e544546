package editortest

import (
	"fmt"
	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/coder/acp-go-sdk"
)

// FirstSession is a backend on a new user's machine: no catalog kept and
// no server running, only the agent's own config, for
// CheckFirstSession and CheckFirstSessionFails.
type FirstSession struct {
	// Backend is a new backend that runs the agent executable at path,
	// with its catalogs kept (none yet) in catalogs and its logs to log.
	Backend func(path, catalogs string, log *slog.Logger) agent.Backend
	Real    string        // the agent's executable
	Serve   string        // the argument that makes it a server (serve, app-server)
	Dir     func() string // a new working directory
	// Model is the model the agent's config names, which the first
	// session/new offers.
	Model string
	// Listed reports whether opts are made of the server's catalog, not
	// the config's: they offer more models, or efforts, say.
	Listed func(opts []acp.SessionConfigOption) bool
}

// Gate is an agent executable that runs the real one, except that as a
// server it waits until Open is called, or fails at once after Fail.
type Gate struct {
	Path      string // the script to run as the agent
	open      string // made by Open
	fail      string // made by Fail, removed by Open
	failCause string // what a failing server prints
}

// NewGate writes a Gate for the executable real, serve being the argument
// that makes it a server.
func NewGate(t *testing.T, real, serve string) *Gate {
	t.Helper()
	dir := t.TempDir()
	g := &Gate{Path: filepath.Join(dir, "agent"), open: filepath.Join(dir, "open"), fail: filepath.Join(dir, "fail"),
		failCause: "the gated agent refuses to start its server"}
	script := fmt.Sprintf(`#!/bin/sh
case " $* " in *" %s "*)
	until [ -e %q ]; do
		if [ -e %q ]; then echo %q >&2; exit 3; fi
		sleep 0.02
	done;;
esac
exec %q "$@"
`, serve, g.open, g.fail, g.failCause, real)
	if err := os.WriteFile(g.Path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return g
}

// Open lets the server start.
func (g *Gate) Open(t *testing.T) {
	t.Helper()
	os.Remove(g.fail)
	if err := os.WriteFile(g.open, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Fail makes the server fail to start.
func (g *Gate) Fail(t *testing.T) {
	t.Helper()
	if err := os.WriteFile(g.fail, nil, 0o600); err != nil {
		t.Fatal(err)
	}
}

// CheckFirstSession checks a new user's first session: session/new
// answers while the agent's server cannot have started (it is held at a
// gate), offering the model the agent's config names and no catalog kept
// yet; once the server may start, the first prompt runs, the session
// offers the models the server lists (a config_option_update), and the
// catalog is kept.
func CheckFirstSession(t *testing.T, c FirstSession) {
	t.Helper()
	gate, catalogs := NewGate(t, c.Real, c.Serve), t.TempDir()
	e := StartEditor(t, c.Backend(gate.Path, catalogs, slog.New(slog.DiscardHandler)), t.TempDir(), bridge.PersistAuto)
	resp := e.NewSessionResponse(c.Dir())
	model := modelOption(resp.ConfigOptions)
	if model == nil || string(model.CurrentValue) != c.Model || !slices.Contains(acptest.Choices(resp.ConfigOptions)[agent.ConfigModel], c.Model) {
		t.Fatalf("session/new with the server held back offers the model option %+v; want the config's %s", model, c.Model)
	}
	if !slices.Contains(acptest.Choices(resp.ConfigOptions)[agent.ConfigMode], modeOf(resp.ConfigOptions)) {
		t.Errorf("session/new offers no mode, or a current mode it does not offer: %+v", resp.ConfigOptions)
	}
	if c.Listed(resp.ConfigOptions) {
		t.Fatalf("session/new with the server held back offers the server's catalog: %+v", resp.ConfigOptions)
	}
	if files, _ := filepath.Glob(filepath.Join(catalogs, "*.json")); len(files) != 0 {
		t.Fatalf("a catalog kept before the server started: %v", files)
	}
	gate.Open(t)
	if _, err := e.Prompt(resp.SessionId, "Say hello"); err != nil {
		t.Fatalf("the first prompt: %v", err)
	}
	e.WaitFor(func(u acp.SessionUpdate) bool {
		return u.ConfigOptionUpdate != nil && c.Listed(u.ConfigOptionUpdate.ConfigOptions)
	})
	e.Stop()
	if files, _ := filepath.Glob(filepath.Join(catalogs, "*.json")); len(files) != 1 {
		t.Errorf("catalogs kept after the server listed its models: %v; want one", files)
	}
}

// CheckFirstSessionFails checks a new user's first session whose server
// fails to start: session/new answers from the config; the first prompt
// fails with the server's own words, which the log has too; once the
// server can start, the next prompt runs in the same session.
func CheckFirstSessionFails(t *testing.T, c FirstSession) {
	t.Helper()
	gate, logs := NewGate(t, c.Real, c.Serve), &syncbuf.Buffer{}
	gate.Fail(t)
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e := StartEditor(t, c.Backend(gate.Path, t.TempDir(), log), t.TempDir(), bridge.PersistAuto)
	resp := e.NewSessionResponse(c.Dir())
	if model := modelOption(resp.ConfigOptions); model == nil || string(model.CurrentValue) != c.Model {
		t.Fatalf("session/new with a server that can't start offers the model option %+v; want the config's %s", model, c.Model)
	}
	_, err := e.Prompt(resp.SessionId, "Say hello")
	if err == nil || !strings.Contains(err.Error(), gate.failCause) {
		t.Fatalf("the first prompt, the server failing to start: %v; want an error saying %q", err, gate.failCause)
	}
	if !strings.Contains(logs.String(), gate.failCause) {
		t.Errorf("the log does not say why the server did not start:\n%s", logs.String())
	}
	gate.Open(t)
	if _, err := e.Prompt(resp.SessionId, "Say hello"); err != nil {
		t.Fatalf("the next prompt, the server able to start: %v", err)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, "agent: ") {
		t.Errorf("the agent did not answer the next prompt:%s", got)
	}
}

// modelOption is the model option of opts, or nil.
func modelOption(opts []acp.SessionConfigOption) *acp.SessionConfigOptionSelect {
	for _, o := range opts {
		if o.Select != nil && string(o.Select.Id) == agent.ConfigModel {
			return o.Select
		}
	}
	return nil
}

// modeOf is the current mode of opts, or "".
func modeOf(opts []acp.SessionConfigOption) string {
	for _, o := range opts {
		if o.Select != nil && string(o.Select.Id) == agent.ConfigMode {
			return string(o.Select.CurrentValue)
		}
	}
	return ""
}
