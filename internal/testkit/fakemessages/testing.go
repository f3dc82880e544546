package fakemessages

import (
	"path/filepath"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
)

// ClaudeBin finds the real CLI for a test: $CLAUDE_BIN, else
// .tools/claude/node_modules/.bin/claude under the repository root. It
// skips the test when there is none, or fails it with
// ACPBRIDGE_REQUIRE_E2E=1.
func ClaudeBin(t testing.TB) string {
	t.Helper()
	return toolbin.Find(t, "claude", "CLAUDE_BIN", func(root string) string {
		return filepath.Join(root, ".tools", "claude", "node_modules", ".bin", "claude")
	})
}
