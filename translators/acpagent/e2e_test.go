package acpagent

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	"github.com/coder/acp-go-sdk"
)

// The tests in this file put the real ACP adapters behind the bridge —
// Zed's claude-agent-acp (0.100.0) and the ACP org's codex-acp (2.6.0),
// installed by scripts/install-tools.sh — each running the pinned CLI
// against the fake model servers the suite already has. They skip loudly
// when an adapter or CLI is missing, and fail instead under
// ACPBRIDGE_REQUIRE_E2E=1.

func adapter(t *testing.T, name, env, rel string) string {
	return toolbin.Find(t, name, env, func(root string) string { return filepath.Join(root, ".tools", rel) })
}

// claudeAdapter is a backend on claude-agent-acp running the real claude
// on a fake Messages API, with its home in home.
func claudeAdapter(t *testing.T, srv *fakemessages.Server, home string) *Backend {
	bin := adapter(t, "claude-agent-acp", "CLAUDE_AGENT_ACP_BIN", "claude-agent-acp/node_modules/.bin/claude-agent-acp")
	claude := fakemessages.ClaudeBin(t)
	env := map[string]string{"CLAUDE_CODE_EXECUTABLE": claude}
	for _, kv := range fakemessages.Env(srv.URL, home) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	b := New(Spec{Name: "claude-agent-acp", Command: bin, Env: env})
	t.Cleanup(func() { b.Close() })
	return b
}

func TestE2E_claudeAgentACP(t *testing.T) {
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	home, state, cwd := looseDir(t), t.TempDir(), t.TempDir()
	e := editortest.StartEditor(t, claudeAdapter(t, srv, home), state, bridge.PersistAuto)
	id := e.NewSession(cwd)

	r, err := e.Prompt(id, "Say hello")
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("text turn: %+v, %v", r, err)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, fakemessages.AnswerTextPrefix+"Say hello") {
		t.Errorf("text turn:%s", got)
	}

	e.Client.Option = "kind:allow_once"
	if _, err := e.Prompt(id, "run: touch made.txt && echo made"); err != nil {
		t.Fatal(err)
	}
	got := e.Client.Conversation()
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err != nil || e.Client.Asked() != 1 || !strings.Contains(got, " execute completed ") {
		t.Errorf("bash with permission (%d asks, file %v):%s", e.Client.Asked(), err, got)
	}
	e.Stop()

	// A restarted bridge replays its transcript, and the adapter loads the
	// session (its own replay hidden): the model sees the earlier turns.
	e2 := editortest.StartEditor(t, claudeAdapter(t, srv, home), state, bridge.PersistAuto)
	e2.Load(id, cwd)
	replay := e2.Client.Conversation()
	if strings.Count(replay, fakemessages.AnswerTextPrefix+"Say hello") != 1 {
		t.Errorf("replay after the restart:%s", replay)
	}
	if _, err := e2.Prompt(id, "Say again"); err != nil {
		t.Fatal(err)
	}
	if !srv.Carries("Say again", "Say hello") {
		t.Errorf("the model's request after the load does not carry the earlier turn")
	}
}

// looseDir is a temporary directory for an agent's home: the agent's own
// children may still write there for a moment after it was stopped, so it
// is removed with a few tries rather than by t.TempDir's one.
func looseDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "acpagent-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for range 20 {
			if os.RemoveAll(dir) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	return dir
}

// codexAdapter is a backend on codex-acp running the pinned codex on the
// fake Responses API.
func codexAdapter(t *testing.T, srv *fakeresponses.Server, home, codexHome string) *Backend {
	bin := adapter(t, "codex-acp", "CODEX_ACP_BIN", "codex-acp/node_modules/.bin/codex-acp")
	env := map[string]string{"CODEX_PATH": fakeresponses.CodexBin(t), "NO_BROWSER": "1"}
	for _, kv := range fakeresponses.Env(home, codexHome) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	b := New(Spec{Name: "codex-acp", Command: bin, Env: env})
	t.Cleanup(func() { b.Close() })
	return b
}

func TestE2E_codexACP(t *testing.T) {
	srv := fakeresponses.New(fakeresponses.Directives())
	t.Cleanup(srv.Close)
	home, codexHome := fakeresponses.Home(t, srv.URL, fakeresponses.HomeOptions{})
	state, cwd := t.TempDir(), t.TempDir()
	e := editortest.StartEditor(t, codexAdapter(t, srv, home, codexHome), state, bridge.PersistAuto)
	id := e.NewSession(cwd)
	r, err := e.Prompt(id, "Say hello")
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("text turn: %+v, %v", r, err)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, "agent: ") {
		t.Errorf("text turn:%s", got)
	}
	e.Stop()

	e2 := editortest.StartEditor(t, codexAdapter(t, srv, home, codexHome), state, bridge.PersistAuto)
	e2.Load(id, cwd)
	if replay := e2.Client.Conversation(); strings.Count(replay, "user: Say hello") != 1 {
		t.Errorf("replay after the restart:%s", replay)
	}
	if _, err := e2.Prompt(id, "Say again"); err != nil {
		t.Fatal(err)
	}
}
