package persist

import (
	"encoding/json"
	"fmt"
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
