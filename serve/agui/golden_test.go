package agui

import (
	"fmt"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/golden"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// The AG-UI events of each golden turn (testdata; -update rewrites
// them).
func TestAGUIRun_golden(t *testing.T) {
	golden.Txtar(t, "testdata/*.txtar", "acp.jsonl", func(t *testing.T, in []byte) []golden.Section {
		got := webtest.RenderTurn(t, in, newRun("s1"), func(n int, state any) any {
			return segment{threadID: "thread1", runID: fmt.Sprintf("run%d", n), state: state}
		})
		return []golden.Section{{Name: "events.jsonl", Data: got}}
	})
}
