package edgev2_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/acp/edgev2"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// manager is a Manager of the mock agent persisting into dir.
func manager(t *testing.T, dir string) *bridge.Manager {
	t.Helper()
	return managerOn(t, dir, mock.New())
}

// managerOn is a Manager of b persisting into dir.
func managerOn(t *testing.T, dir string, b agent.Backend) *bridge.Manager {
	t.Helper()
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAlways, Logger: testLogger(t), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// serve runs the stdio edge with v2 on r and w, as acpbridge does.
func serve(ctx context.Context, m *bridge.Manager, r io.Reader, w io.Writer) error {
	return serveWith(ctx, m, r, w, nil)
}

// serveWith is serve offering login (when not nil), as acpbridge does on
// stdio.
func serveWith(ctx context.Context, m *bridge.Manager, r io.Reader, w io.Writer, login *edge.Login) error {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := edge.NewServer(m, "test", log)
	if login != nil {
		s.SetLogin(*login)
	}
	s.ServeV2(edgev2.New(s, m, "test", log).Serve)
	return s.Serve(ctx, r, w)
}

// TestV2_typeScriptSDK drives the bridge over stdio with the TS SDK
// 2.4.0's experimental v2 client (sdkclient.RunV2), the mock agent having
// a login (and logout) of its own, as the real agents do: auth/login and
// auth/logout run onto v1's authenticate and logout.
func TestV2_typeScriptSDK(t *testing.T) {
	b := &withLogin{Backend: mock.New()}
	b.loggedIn.Store(true)
	m := managerOn(t, t.TempDir(), b)
	defer m.Shutdown()
	r := sdkclient.RunV2(t, sdkclient.V2{CancelAsk: true, CancelTool: true, Background: true, Serve: func(ctx context.Context, in io.Reader, out io.Writer) error {
		return serveWith(ctx, m, in, out, &testLogin)
	}})
	if b.loggedOut.Load() != 1 {
		t.Errorf("auth/logout ran the agent's logout %d times, want once", b.loggedOut.Load())
	}
	sdkclient.CheckV2(t, r, sdkclient.V2Want{Asked: "mock.txt", Diff: "mock.txt", Auth: true, CancelAsk: true, CancelTool: true, Background: true,
		Turn: []string{"agent_thought_chunk", "state_update:requires_action state_update:running"}})
}
