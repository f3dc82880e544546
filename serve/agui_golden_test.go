package serve

import (
	"fmt"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/golden"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// The AG-UI events of each golden turn (testdata/agui; -update rewrites
// them).
func TestAGUIRun_golden(t *testing.T) {
	golden.Txtar(t, "testdata/agui/*.txtar", "acp.jsonl", func(t *testing.T, in []byte) []golden.Section {
		got := webtest.RenderTurn(t, in, newAGUIRun("s1"), func(n int, state any) any {
			return aguiSegment{threadID: "thread1", runID: fmt.Sprintf("run%d", n), state: state}
		})
		return []golden.Section{{Name: "events.jsonl", Data: got}}
	})
}
