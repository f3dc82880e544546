package servetest

import (
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/acp/edgev2"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/translators/mock"
)

// BridgeConnector is the binary's Connector: edge.Server.ServeConn on one
// Manager of the mock agent, persisting into a temporary directory.
func BridgeConnector(t *testing.T) core.Connector {
	t.Helper()
	return BridgeConnectorOn(t, mock.New())
}

// BridgeConnectorOn is BridgeConnector for backend b.
func BridgeConnectorOn(t *testing.T, b agent.Backend) core.Connector {
	t.Helper()
	m, connect := Bridge(t, t.TempDir(), b)
	t.Cleanup(func() { // after the server's connections are closed (cleanups run last first)
		if err := m.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return connect
}

// Bridge is a Manager of backend b persisting into dir, and the
// Connector that serves it as acpbridge serve does
// (edge.Server.ServeConn, v2 for a client that asks for it). Shutting it down is the caller's.
func Bridge(t testing.TB, dir string, b agent.Backend) (*bridge.Manager, core.Connector) {
	t.Helper()
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAuto, Logger: Logger(), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	s := edge.NewServer(m, "test", Logger())
	s.ServeV2(edgev2.New(s, m, "test", Logger()).Serve)
	return m, s.ServeConn
}
