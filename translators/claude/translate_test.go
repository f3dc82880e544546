package claude

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/golden"
)

// TestTranslator_golden feeds each file's claude.jsonl through a fresh
// Translator and compares what comes out with acp.jsonl.
func TestTranslator_golden(t *testing.T) {
	golden.Txtar(t, "testdata/golden/*.txtar", "claude.jsonl", func(t *testing.T, in []byte) []golden.Section {
		return []golden.Section{{Name: "acp.jsonl", Data: translateAll(t, in)}}
	})
}

// TestTranslator_recorded does the same for the streams the project
// records itself: testdata/recorded/X.jsonl in, X.acp expected.
func TestTranslator_recorded(t *testing.T) {
	golden.Pairs(t, "testdata/recorded/*.jsonl", ".acp", func(t *testing.T, in []byte) string {
		return translateAll(t, withoutControl(in))
	})
}

// withoutControl drops control messages, which the session handles.
func withoutControl(in []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		if !bytes.Contains(l[:min(len(l), 40)], []byte(`"type":"control_`)) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// translateAll renders what a session would see: each update, and for
// each result line a summary of the turn's end.
func translateAll(t *testing.T, in []byte) string {
	tr := NewTranslator("/home/dev/project")
	return golden.Transcript(t, in, func(line []byte) (golden.Step, error) {
		out, err := tr.Translate(line)
		return golden.Step{Updates: out.Updates, Note: notes(out)}, err
	})
}

// notes is what else a line meant: the mode, a line skipped, the turn's
// end.
func notes(out Output) map[string]any {
	n := map[string]any{}
	if out.Child != "" {
		n["child"] = out.Child // the updates above are this subagent's
	}
	if out.Mode != "" {
		n["mode"] = out.Mode
	}
	if out.Skipped != "" {
		n["skipped"] = out.Skipped
	}
	if r := out.Result; r != nil {
		n["result"] = map[string]any{"stopReason": r.StopReason, "err": r.Err,
			"auth": r.AuthRequired, "aborted": r.Aborted, "context": r.Context, "window": r.Window, "cost": r.CostUSD}
	}
	return n
}

// FuzzTranslate: no input makes the translator panic, and whatever updates
// it returns can be encoded.
func FuzzTranslate(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*.txtar")
	for _, file := range files {
		for _, l := range bytes.Split(golden.Read(file, "claude.jsonl"), []byte("\n")) {
			if len(l) < 4096 {
				f.Add(l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		tr := NewTranslator("/w")
		for range 2 { // twice: the second sighting of a tool_use takes another path
			out, err := tr.Translate(line)
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

// A rate_limit_event near a limit is a warning notice, at one an error
// notice; one that is allowed says nothing.
func TestTranslator_rateLimit(t *testing.T) {
	for _, c := range []struct{ status, want string }{
		{"allowed", ""},
		{"allowed_warning", `{"description":"five hour; resets 2026-12-07T12:00:00Z","sessionUpdate":"notice","severity":"warning","title":"Claude Code is near its usage limit"}`},
		{"rejected", `{"description":"five hour; resets 2026-12-07T12:00:00Z","sessionUpdate":"notice","severity":"error","title":"Claude Code reached its usage limit"}`},
	} {
		line := `{"type":"rate_limit_event","rate_limit_info":{"status":"` + c.status + `","resetsAt":1796644800,"rateLimitType":"five_hour"},"session_id":"s"}`
		out, err := NewTranslator("/w").Translate([]byte(line))
		got := ""
		for _, u := range out.Updates {
			b, _ := json.Marshal(u)
			got += string(b)
		}
		if err != nil || got != c.want {
			t.Errorf("%s: %s, %v\nwant %s", c.status, got, err, c.want)
		}
	}
}
