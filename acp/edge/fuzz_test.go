package edge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

// FuzzGuard feeds arbitrary input through the guard: nothing panics, every
// line it forwards to the SDK is a JSON object, and every line it writes
// back is a JSON-RPC error response.
func FuzzGuard(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n"))
	f.Add([]byte("garbage\n[1]\n{\"id\":2}\n\n{\"id\":{\"x\":1},\"method\":\"a\""))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"x","method":"session/prompt","params":{"prompt":[{"type":"text","text":"` + string(bytes.Repeat([]byte("a"), 300)) + `"}]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var replies bytes.Buffer
		out := newLockedWriter(&replies)
		in := guard(bytes.NewReader(data), out, newArrivals(), newBlobs(), 256, testLogger())
		go func() { <-in.ended; in.Close() }() // as Serve does once requests are answered
		forwarded, _ := io.ReadAll(in)
		for _, l := range bytes.Split(bytes.TrimSuffix(forwarded, []byte("\n")), []byte("\n")) {
			if len(l) > 0 && (!json.Valid(l) || l[0] != '{') {
				t.Fatalf("forwarded a non-object: %q", l)
			}
		}
		sc := bufio.NewScanner(&replies)
		for sc.Scan() {
			var m struct {
				ID    json.RawMessage `json:"id"`
				Error *struct{ Code int }
			}
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Error == nil || m.ID == nil {
				t.Fatalf("reply is not an error response: %q", sc.Bytes())
			}
		}
		responseID(data)
		idOf(data)
	})
}
