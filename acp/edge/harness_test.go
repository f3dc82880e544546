package edge

import (
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editor"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/coder/acp-go-sdk"
)

// harness is the editor harness (package editor) connected to a bridge
// served by this package's Server.
type harness struct {
	*editor.Editor
	dir string // the state directory, if any
}

// start runs a bridge on the mock agent persisting into dir ("" for
// --persist never).
func start(t *testing.T, dir string) *harness {
	t.Helper()
	return startOn(t, dir, mock.New(), nil)
}

// startOn runs a bridge on backend b (the default agent), offering logins
// when login is not nil. The client is not yet initialized.
func startOn(t *testing.T, dir string, b agent.Backend, login *Login) *harness {
	t.Helper()
	cfg := bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Persist: bridge.PersistNever, Logger: testLogger(), CancelGrace: 2 * time.Second}
	if dir != "" {
		st, err := persist.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store, cfg.Persist = st, bridge.PersistAuto
	}
	m, err := bridge.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(m, "test", testLogger())
	if login != nil {
		s.SetLogin(*login)
	}
	h := &harness{Editor: editor.Connect(t, s.Serve), dir: dir}
	h.CS.SetLogger(testLogger())
	return h
}

func testLogger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("ACPBRIDGE_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

// wantCode checks that err is a JSON-RPC error with code.
func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != code {
		t.Errorf("%s: error %v, want code %d", what, err, code)
	}
}

// view is the conversation a client would show (see acptest).
var view = acptest.Conversation
