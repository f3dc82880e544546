package opencode

import (
	"encoding/json"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/golden"
)

// TestTranslator_golden feeds each file's opencode.jsonl (SSE events of a
// real server) through a fresh Translator and compares what comes out
// with acp.jsonl.
func TestTranslator_golden(t *testing.T) {
	golden.Txtar(t, "testdata/golden/*.txtar", "opencode.jsonl", func(t *testing.T, in []byte) []golden.Section {
		return []golden.Section{{Name: "acp.jsonl", Data: translateAll(t, in)}}
	})
}

// translateAll renders the updates of each event, and as a "#" line what
// else it means to the session. The session is the one the first event
// that names one names; the others are its children's (subagents).
func translateAll(t *testing.T, in []byte) string {
	tr := NewTranslator("/home/dev/project")
	own := ""
	return golden.Transcript(t, in, func(line []byte) (golden.Step, error) {
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return golden.Step{}, err
		}
		if d, err := Decode(ev); err == nil && own == "" && d.SessionID() != "" {
			own = d.SessionID()
			tr.Own(own)
		}
		out, err := tr.Translate(ev)
		return golden.Step{Updates: append(out.Parent, out.Updates...), Note: notes(out)}, err
	})
}

func notes(out Output) map[string]any {
	n := map[string]any{}
	if out.Busy {
		n["busy"] = true
	}
	if out.Idle {
		n["idle"] = true
	}
	if out.Err != nil {
		n["error"] = out.Err.Message()
	}
	if out.Step != nil {
		n["step"] = out.Step
	}
	if out.Ask != nil {
		n["ask"] = out.Ask.ID
	}
	if out.Question != nil {
		n["question"] = out.Question.ID
	}
	if out.Child != "" && (len(out.Updates) > 0 || len(n) > 0) {
		n["child"] = out.Child // the updates above are this subagent's,
		if len(out.Parent) > 0 {
			n["parent"] = len(out.Parent) // but for the first ones, the session's
		}
	}
	if out.Replied != "" {
		n["replied"] = out.Replied
	}
	return n
}

// FuzzTranslate: nothing makes the translator panic, and whatever updates
// it returns encode.
func FuzzTranslate(f *testing.F) {
	for _, seed := range []string{
		`{"type":"message.part.delta","properties":{"messageID":"m","partID":"p","field":"text","delta":"hi"}}`,
		`{"type":"message.part.updated","properties":{"part":{"type":"tool","tool":"bash","callID":"c","state":{"status":"running","input":{"command":"ls"},"metadata":{"output":"a"}}}}}`,
		`{"type":"todo.updated","properties":{"todos":[{"content":"x","status":"in_progress","priority":"high"}]}}`,
		`{"type":"session.error","properties":{"error":{"name":"APIError","data":{"message":"m","statusCode":400}}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		var ev Event
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		tr := NewTranslator("/w")
		for range 2 {
			out, err := tr.Translate(ev)
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
