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
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := mock.New()
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAlways, Logger: testLogger(t), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// serve runs the stdio edge with v2 on r and w, as acpbridge does.
func serve(ctx context.Context, m *bridge.Manager, r io.Reader, w io.Writer) error {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := edge.NewServer(m, "test", log)
	s.ServeV2(edgev2.New(s, m, "test", log).Serve)
	return s.Serve(ctx, r, w)
}

// TestV2_typeScriptSDK drives the bridge over stdio with the TS SDK
// 2.4.0's experimental v2 client (sdkclient.RunV2).
func TestV2_typeScriptSDK(t *testing.T) {
	m := manager(t, t.TempDir())
	defer m.Shutdown()
	r := sdkclient.RunV2(t, sdkclient.V2{Serve: func(ctx context.Context, in io.Reader, out io.Writer) error { return serve(ctx, m, in, out) }})
	sdkclient.CheckV2(t, r, sdkclient.V2Want{Asked: "mock.txt",
		Turn: []string{"agent_thought_chunk", "state_update:requires_action state_update:running"}})
}
