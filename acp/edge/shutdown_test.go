package edge

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
)

// Serve stopping (its ctx done) while stdin ends at the same moment reads
// why stdin ended only once the guard has said it (a data race before).
func TestServe_stopsAsStdinEnds(t *testing.T) {
	for range 20 {
		inR, inW := io.Pipe()
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{&orderBackend{}}, Default: "order", Persist: bridge.PersistNever, Logger: testLogger()})
		if err != nil {
			t.Fatal(err)
		}
		go func() { done <- NewServer(m, "test", testLogger()).Serve(ctx, inR, io.Discard) }()
		cancel()
		inW.CloseWithError(errors.New("stdin broke"))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
