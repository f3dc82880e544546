package edge

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/pairorder"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
)

// TestOrder_stress sends bursts of prompt pairs to the mock over in-memory
// pipes, on one CPU beside two hogs, and counts the pairs that ran or were
// answered out of order, or whose second turn streamed before the first
// response. It runs only when ACPBRIDGE_ORDER_STRESS is set,
// to "sessions,pairs,rounds" (each round sends pairs pairs for each
// session at once), e.g. 10,15,20 for 3000 pairs; scripts/order-stress.sh
// runs it and the same stress against the built binary.
func TestOrder_stress(t *testing.T) {
	spec := os.Getenv("ACPBRIDGE_ORDER_STRESS")
	if spec == "" {
		t.Skip("ACPBRIDGE_ORDER_STRESS is not set")
	}
	var cfg pairorder.Config
	if _, err := fmt.Sscanf(spec, "%d,%d,%d", &cfg.Sessions, &cfg.Pairs, &cfg.Rounds); err != nil {
		t.Fatalf("ACPBRIDGE_ORDER_STRESS=%q: want sessions,pairs,rounds: %v", spec, err)
	}
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{mock.New()}, Default: "mock",
		Store: st, Persist: bridge.PersistAuto, Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	defer pairorder.Hog(2)()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- NewServer(m, "test", testLogger()).Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	res, err := pairorder.Run(inW, outR, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Errorf("serve: %v", err)
	}
	t.Log(res)
	if res.OutOfOrder > 0 || res.Failed > 0 {
		t.Errorf("%v", res)
	}
}
