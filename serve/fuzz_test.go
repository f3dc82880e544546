package serve

import (
	"bytes"
	"encoding/json"
	"testing"
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
		m, err := Parse(raw)
		if err != nil {
			return
		}
		if !json.Valid(m.Raw) || bytes.ContainsAny(m.Raw, "\n\r") {
			t.Fatalf("Raw %q is not one line of JSON", m.Raw)
		}
		again, err := Parse(m.Raw)
		if err != nil || again.Kind != m.Kind || again.Key() != m.Key() || again.Method != m.Method {
			t.Fatalf("Raw %q parses again as %+v, %v; first %+v", m.Raw, again, err, m)
		}
	})
}

// FuzzWebMessages: any chat body the AI SDK's client or an AG-UI client
// could send decodes into a prompt and a history, or an error, without a
// panic.
func FuzzWebMessages(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`,
		`{"id":"c1","messages":[{"role":"user","parts":[{"type":"file","url":"data:image/png;base64,iVBORw0KGgo=","mediaType":"image/png"}]},{"role":"assistant","parts":[{"type":"tool-x","toolCallId":"t","state":"approval-responded","approval":{"id":"a","approved":true}}]}]}`,
		`{"messages":[{"role":"user","parts":[{"type":"file","url":"data:;base64,%%%"}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"hi"},{"id":"2","role":"user","content":[{"type":"text","text":"x"},{"type":"binary","mimeType":"image/png","data":"AAAA"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var chat chatRequest
		if json.Unmarshal(raw, &chat) == nil {
			for _, m := range chat.Messages {
				promptOf(m)
			}
			historyOf(chat.Messages)
		}
		var run struct {
			Messages []aguiMessageIn `json:"messages"`
		}
		if json.Unmarshal(raw, &run) == nil {
			for _, m := range run.Messages {
				aguiPrompt(m)
			}
		}
	})
}
