package amp

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/golden"
)

// TestTranslator_golden feeds each file's amp.jsonl (amp's stdout) through
// a fresh Translator and compares what comes out with acp.jsonl.
func TestTranslator_golden(t *testing.T) {
	golden.Txtar(t, "testdata/golden/*.txtar", "amp.jsonl", func(t *testing.T, in []byte) []golden.Section {
		return []golden.Section{{Name: "acp.jsonl", Data: translateAll(t, in)}}
	})
}

// translateAll renders the updates of each line, and as a "#" line what
// else it means to the session.
func translateAll(t *testing.T, in []byte) string {
	tr := NewTranslator("/home/dev/project")
	return golden.Transcript(t, in, func(line []byte) (golden.Step, error) {
		out, err := tr.Translate(line)
		return golden.Step{Updates: out.Updates, Note: notes(out)}, err
	})
}

func notes(out Output) map[string]any {
	n := map[string]any{}
	if out.Thread != "" {
		n["thread"] = out.Thread
	}
	if out.Mode != "" {
		n["mode"] = out.Mode
	}
	if out.Skipped != "" {
		n["skipped"] = out.Skipped
	}
	if r := out.Result; r != nil {
		n["result"] = r
	}
	if len(out.Children) > 0 { // the child sessions' updates, after the session's
		n["children"] = out.Children
	}
	return n
}

func FuzzTranslate(f *testing.F) {
	for _, seed := range []string{
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"a","name":"Read","input":{"read_range":[1,"x"]}}]}}`,
		`{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"{\"output\":1}"}]}}`,
		`{"type":"result","subtype":"error_during_execution","is_error":true}`,
		`{"type":"assistant","message":{"content":"text"},"parent_tool_use_id":"x"}`,
		`{"type":"assistant","message":{"content":[{"type":"tool_use","id":"p","name":"apply_patch","input":{"patch":"*** Update File: \n@@\n-\n+"}}]}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		tr := NewTranslator("/w")
		for range 2 {
			out, err := tr.Translate(line)
			if err != nil {
				return
			}
			for _, u := range out.Updates {
				if _, err := json.Marshal(u); err != nil {
					t.Fatalf("update does not marshal: %v", err)
				}
			}
		}
	})
}

func TestAuthError(t *testing.T) {
	for msg, want := range map[string]bool{
		"Unauthorized: invalid API key":                      true,
		"API request for getUserInfo failed: 401":            true,
		"/tmp/go-build3926401758/b292/amp.test exited":       false,
		"Error: Couldn't connect to the Amp server":          false,
		"No API key found. Starting login flow...":           true,
		"the api key field of the request looked fine, 4010": false,
	} {
		if got := authError(strings.ToLower(msg)); got != want {
			t.Errorf("authError(%q) = %v, want %v", msg, got, want)
		}
	}
}
