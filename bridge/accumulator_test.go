package bridge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/golden"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// step is one line of a golden file's input section: a live update, a user
// prompt, a checkpoint, or the end of a turn.
type step struct {
	User       []acp.ContentBlock `json:"user"`
	Checkpoint bool               `json:"checkpoint"`
	EndTurn    bool               `json:"endTurn"`
}

// TestAccumulator_golden feeds each file's "in" section through an
// Accumulator as a session would and compares what is sent to the client,
// what is stored, and what session/load replays from the store.
func TestAccumulator_golden(t *testing.T) {
	golden.Txtar(t, "testdata/accumulator/*.txtar", "in", func(t *testing.T, in []byte) []golden.Section {
		got := runGolden(t, in)
		return []golden.Section{{Name: "sent", Data: got["sent"]}, {Name: "stored", Data: got["stored"]}, {Name: "replay", Data: got["replay"]}}
	})
}

func runGolden(t *testing.T, in []byte) map[string]string {
	n, drafts := 0, int64(0)
	acc := NewAccumulator(1, func() string { n++; return fmt.Sprintf("msg-%d", n) })
	var sent, stored []any
	var entries []persist.Entry
	keep := func(es []Entry) {
		enc, err := Encode(es)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range enc {
			entries = append(entries, e)
			stored = append(stored, e)
		}
	}
	for i, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		var st step
		if err := json.Unmarshal(line, &st); err != nil {
			t.Fatalf("in line %d: %v", i+1, err)
		}
		switch {
		case st.User != nil:
			es := acc.User(st.User)
			keep(es)
		case st.Checkpoint:
			drafts++
			keep(acc.Checkpoint(drafts))
		case st.EndTurn:
			for _, u := range acc.Unfinished() {
				out, es := acc.Add(u)
				sent = append(sent, out)
				keep(es)
			}
			keep(acc.Flush())
		default:
			var u acp.SessionUpdate
			if err := json.Unmarshal(line, &u); err != nil {
				t.Fatalf("in line %d: %v", i+1, err)
			}
			out, es := acc.Add(u)
			sent = append(sent, out)
			keep(es)
		}
	}
	var replay []any
	for _, u := range Replay(entries) {
		replay = append(replay, u)
	}
	return map[string]string{"sent": jsonLines(t, sent), "stored": jsonLines(t, stored), "replay": jsonLines(t, replay)}
}

func jsonLines(t *testing.T, vs []any) string {
	var b strings.Builder
	for _, v := range vs {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
