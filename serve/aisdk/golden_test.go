package aisdk

import (
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/golden"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// The AI SDK chunks of each golden turn (testdata; -update rewrites
// them).
func TestUIStream_golden(t *testing.T) {
	golden.Txtar(t, "testdata/*.txtar", "acp.jsonl", func(t *testing.T, in []byte) []golden.Section {
		got := webtest.RenderTurn(t, in, newUIStream("s1", "msg1"), func(int, any) any { return nil })
		return []golden.Section{{Name: "chunks.jsonl", Data: got}}
	})
}
