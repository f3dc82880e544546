package persist

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
)

func fmtInt(i int) string { return fmt.Sprint(i) }

// FuzzParseTranscript checks that no input makes the reader panic and that
// whatever it accepts it can hand back: a parsed transcript has a header.
func FuzzParseTranscript(f *testing.F) {
	f.Add([]byte(`{"header":{"v":1,"id":"s1","agent":"mock","cwd":"/","createdAt":"2026-01-01T00:00:00Z","updatedAt":"2026-01-01T00:00:00Z"}}` + "\n" +
		`{"seq":1,"update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"}}}` + "\n"))
	f.Add([]byte(`{"seq":2,"update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x","content":[{"type":"diff","path":"/a","newText":"b"}]}}` + "\n{\"header\":{}}\n{\"seq\""))
	f.Add([]byte("\n\n\x00{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tr, err := ParseTranscript(data)
		if err != nil {
			return
		}
		if tr.tornAt > int64(len(data)) {
			t.Fatalf("tornAt %d beyond %d bytes", tr.tornAt, len(data))
		}
		for _, e := range tr.Entries {
			if !json.Valid(e.Update) || e.Update[0] != '{' {
				t.Fatalf("accepted an entry whose update is not a JSON object: %q", e.Update)
			}
		}
	})
}

// idPattern is what ValidID accepts, said as a regexp.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$`)

// FuzzValidID checks ValidID's loop against idPattern.
func FuzzValidID(f *testing.F) {
	for _, id := range []string{"", "a", "0", "-a", "_a", "a-b_c", "../x", "a/b", "a\x00b", "é", "a\n",
		strings.Repeat("a", 128), strings.Repeat("a", 129), "a" + strings.Repeat("-", 127)} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if got, want := ValidID(id), idPattern.MatchString(id); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", id, got, want)
		}
	})
}
