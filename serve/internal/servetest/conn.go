package servetest

import (
	"context"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

func NewRegistry(t *testing.T, l core.Limits) *core.Registry {
	t.Helper()
	reg := core.NewRegistry(l, Logger())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := reg.CloseAll(ctx); err != nil {
			t.Error(err)
		}
	})
	return reg
}

func Next(t *testing.T, l *core.Lease) core.Msg {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	m, err := l.Next(ctx)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	return m
}

// WaitFor polls ok for up to 10 s.
func WaitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !ok(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
