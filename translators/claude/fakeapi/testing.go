package fakeapi

import (
	"os"
	"path/filepath"
	"testing"
)

// ClaudeBin finds the real CLI for a test: $CLAUDE_BIN, else
// .tools/claude/node_modules/.bin/claude under the repository root. It
// skips the test when there is none, or fails it with
// ACPBRIDGE_REQUIRE_E2E=1.
func ClaudeBin(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED: real Claude CLI tests do not run with -short")
	}
	if p := os.Getenv("CLAUDE_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("env CLAUDE_BIN=%s: %v", p, err)
		}
		return p
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
	p := filepath.Join(dir, ".tools", "claude", "node_modules", ".bin", "claude")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	if os.Getenv("ACPBRIDGE_REQUIRE_E2E") == "1" {
		t.Fatalf("the Claude CLI is not installed at %s and ACPBRIDGE_REQUIRE_E2E=1: run scripts/install-tools.sh (or set CLAUDE_BIN)", p)
	}
	t.Skip("SKIPPED: the Claude CLI is not installed; run scripts/install-tools.sh or set CLAUDE_BIN")
	return ""
}
