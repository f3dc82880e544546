package golden

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
)

// Step is what a translator made of one input line: the updates a client
// would see, and a note of what else the line meant to the session (its
// end, an error, an id), nil or empty if nothing.
type Step struct {
	Updates []acp.SessionUpdate
	Note    map[string]any
}

// Transcript renders a translator's output for an input of one message per
// line, the form every agent's golden files share: each update as a JSON
// line, then the note, if any, as a {"#": note} line. translate is called
// once per line, in order; an error fails the test.
func Transcript(t *testing.T, in []byte, translate func(line []byte) (Step, error)) string {
	t.Helper()
	var b strings.Builder
	for i, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		step, err := translate(line)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, u := range step.Updates {
			writeLine(t, &b, u)
		}
		if len(step.Note) > 0 {
			writeLine(t, &b, map[string]any{"#": step.Note})
		}
	}
	return b.String()
}

func writeLine(t *testing.T, b *strings.Builder, v any) {
	j, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	b.Write(j)
	b.WriteByte('\n')
}
