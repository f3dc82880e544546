package codex

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/golden"
)

// TestTranslator_golden feeds each file's codex.jsonl through a fresh
// Translator and compares what comes out with acp.jsonl.
func TestTranslator_golden(t *testing.T) {
	golden.Txtar(t, "testdata/golden/*.txtar", "codex.jsonl", func(t *testing.T, in []byte) []golden.Section {
		return []golden.Section{{Name: "acp.jsonl", Data: translateAll(t, in)}}
	})
}

// TestTranslator_recorded does the same for the streams the project
// records itself: testdata/recorded/X.jsonl in, X.acp expected.
func TestTranslator_recorded(t *testing.T) {
	golden.Pairs(t, "testdata/recorded/*.jsonl", ".acp", func(t *testing.T, in []byte) string {
		return translateAll(t, notificationsOf(in))
	})
}

// notificationsOf keeps the notifications of a recorded server stream.
func notificationsOf(in []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(l, &m) == nil && m.Method != "" && m.ID == nil {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// notification is one line of a golden input.
type notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func translateAll(t *testing.T, in []byte) string {
	tr := NewTranslator("/home/dev/project")
	return golden.Transcript(t, in, func(line []byte) (golden.Step, error) {
		var n notification
		if err := json.Unmarshal(line, &n); err != nil {
			return golden.Step{}, err
		}
		out, err := tr.Translate(n.Method, n.Params)
		note := map[string]any{}
		if out.End != nil || out.Err != "" {
			note["end"], note["err"] = out.End, out.Err
		}
		if out.Child != "" && len(out.ChildUpdates) > 0 { // the child session's updates, after the session's
			note["child"], note["updates"] = out.Child, out.ChildUpdates
		}
		if len(out.Spawned) > 0 {
			note["spawned"] = out.Spawned
		}
		return golden.Step{Updates: out.Updates, Note: note}, err
	})
}

// FuzzTranslate: nothing makes the translator panic, and whatever updates
// it returns encode.
func FuzzTranslate(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*.txtar")
	for _, file := range files {
		for _, l := range bytes.Split(golden.Read(file, "codex.jsonl"), []byte("\n")) {
			var n notification
			if json.Unmarshal(l, &n) == nil {
				f.Add(n.Method, []byte(n.Params))
			}
		}
	}
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		tr := NewTranslator("/w")
		for range 2 {
			out, err := tr.Translate(method, params)
			if err != nil {
				return
			}
			for _, u := range out.Updates {
				if _, err := json.Marshal(u); err != nil {
					t.Fatalf("update does not encode: %v", err)
				}
			}
		}
	})
}
