package serve

import (
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
)

// bridgeConnector is the binary's Connector: acp.Server.ServeConn on one
// Manager of the mock agent, persisting into a temporary directory.
func bridgeConnector(t *testing.T) Connector {
	t.Helper()
	return bridgeConnectorOn(t, mock.New())
}

// bridgeConnectorOn is bridgeConnector for backend b.
func bridgeConnectorOn(t *testing.T, b agent.Backend) Connector {
	t.Helper()
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAuto, Logger: testLogger(), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after the server's connections are closed (cleanups run last first)
		if err := m.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return acp.NewServer(m, "test", testLogger()).ServeConn
}
