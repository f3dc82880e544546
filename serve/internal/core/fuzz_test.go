package core_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// FuzzParse: any bytes a client POSTs or sends in a frame parse into a
// message or fail with one of Parse's errors, never panic; a message's Raw
// is compact JSON that parses again to the same kind, id and method.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"session/prompt","params":{"sessionId":"s1","prompt":[]}}`,
		`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}`,
		`{"jsonrpc":"2.0","id":"a","result":{"sessionId":"s2"}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, `"x"`, `{`, ` { "id" : 1e400 } `, `{"id":{"a":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		m, err := core.Parse(raw)
		if err != nil {
			return
		}
		if !json.Valid(m.Raw) || bytes.ContainsAny(m.Raw, "\n\r") {
			t.Fatalf("Raw %q is not one line of JSON", m.Raw)
		}
		again, err := core.Parse(m.Raw)
		if err != nil || again.Kind != m.Kind || again.Key() != m.Key() || again.Method != m.Method {
			t.Fatalf("Raw %q parses again as %+v, %v; first %+v", m.Raw, again, err, m)
		}
	})
}
