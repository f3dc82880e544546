package fakeresponses

import (
	"os"
	"testing"
)

// TestMain leaves nothing of codex's sandbox in /tmp.
func TestMain(m *testing.M) { os.Exit(Run(m)) }
