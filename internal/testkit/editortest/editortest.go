package editortest

import (
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editor"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// The editor harness (package editor), under the names backend tests use.
type (
	Editor = editor.Editor
	Client = editor.Client
	Write  = editor.Write
)

// WithPrompt is a turn's updates as a replay shows them: the prompt first.
func WithPrompt(prompt string, us []acp.SessionUpdate) string { return editor.WithPrompt(prompt, us) }

// StartEditor starts a bridge running b (persisting into state with mode)
// and an initialized client for it. The bridge stops at the end of the test.
func StartEditor(t testing.TB, b agent.Backend, state string, mode bridge.PersistMode) *Editor {
	t.Helper()
	return StartEditorOffering(t, b, state, mode, acp.ClientCapabilities{})
}

// StartEditorOffering is StartEditor for an editor that offers caps (its
// file system is Client.Files, its terminals make-believe).
func StartEditorOffering(t testing.TB, b agent.Backend, state string, mode bridge.PersistMode, caps acp.ClientCapabilities) *Editor {
	t.Helper()
	return StartEditorWith(t, []agent.Backend{b}, state, mode, caps)
}

// StartEditorWith is StartEditorOffering for a bridge running several
// backends; the first is the default.
func StartEditorWith(t testing.TB, bs []agent.Backend, state string, mode bridge.PersistMode, caps acp.ClientCapabilities) *Editor {
	t.Helper()
	return startEditor(t, bs, state, mode, caps, "")
}

// StartEditorIn is StartEditor for a bridge started in directory cwd, as
// an editor starts it in the project: its agent warms up a session there
// at initialize.
func StartEditorIn(t testing.TB, b agent.Backend, state string, mode bridge.PersistMode, cwd string) *Editor {
	t.Helper()
	return startEditor(t, []agent.Backend{b}, state, mode, acp.ClientCapabilities{}, cwd)
}

func startEditor(t testing.TB, bs []agent.Backend, state string, mode bridge.PersistMode, caps acp.ClientCapabilities, cwd string) *Editor {
	t.Helper()
	st, err := persist.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := bridge.NewManager(bridge.Config{Backends: bs, Default: bs[0].Info().Name, Store: st,
		Persist: mode, Logger: log, CancelGrace: 10 * time.Second, Cwd: cwd})
	if err != nil {
		t.Fatal(err)
	}
	e := editor.Connect(t, edge.NewServer(m, "test", log).Serve)
	e.Initialize(caps)
	return e
}
