package main

import (
	"os"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
)

// TestMain leaves nothing of codex's sandbox in /tmp.
func TestMain(m *testing.M) { os.Exit(fakeresponses.Run(m)) }
