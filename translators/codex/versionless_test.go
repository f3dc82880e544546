package codex

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/creachadair/jrpc2/channel"
)

// TestVersionless_nestedVersionKey: a record whose params or result hold
// a "jsonrpc" key deeper down still gets the version member at the top,
// and one that has it at the top is left alone.
func TestVersionless_nestedVersionKey(t *testing.T) {
	in := []string{
		`{"id":3,"result":{"thread":{"turns":[{"items":[{"type":"mcpToolCall","arguments":{"jsonrpc":"2.0","method":"ping"}}]}]}}}`,
		`{"method":"item/tool/call","id":0,"params":{"threadId":"T","arguments":{"jsonrpc":"2.0"}}}`,
		`{"id":4,"error":{"code":-32600,"message":"bad","data":{"jsonrpc":"1.0"}}}`,
		`{"jsonrpc":"2.0","id":5,"result":{}}`,
		`{"id":6,"result":"\"jsonrpc\":"}`,
	}
	r, w := io.Pipe()
	go func() {
		io.WriteString(w, strings.Join(in, "\n")+"\n")
		w.Close()
	}()
	ch := versionless(channel.Line(r, nopCloser{io.Discard}), func(string, json.RawMessage) { t.Error("a notification was seen") },
		func(line []byte) { t.Errorf("skipped %s", line) })
	for _, want := range in {
		got, err := ch.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		var top map[string]json.RawMessage
		if err := json.Unmarshal(got, &top); err != nil {
			t.Fatalf("Recv made %s: %v", got, err)
		}
		if string(top["jsonrpc"]) != `"2.0"` {
			t.Errorf("Recv(%s) = %s; want the version member at the top", want, got)
		}
		var a, b any
		json.Unmarshal([]byte(want), &a)
		json.Unmarshal(got, &b)
		delete(b.(map[string]any), "jsonrpc")
		delete(a.(map[string]any), "jsonrpc")
		if ja, jb := mustJSON(a), mustJSON(b); ja != jb {
			t.Errorf("Recv changed the record: %s, want %s", jb, ja)
		}
	}
}

// TestVersionless_skipsLinesThatAreNotJSONRPC: a line codex prints that
// is not a JSON object is reported and dropped, and the stream goes on.
func TestVersionless_skipsLinesThatAreNotJSONRPC(t *testing.T) {
	r, w := io.Pipe()
	go func() {
		io.WriteString(w, "warning: something\n[1,2]\nnull\n\n"+`{"id":1,"result":{}}`+"\n")
		w.Close()
	}()
	var skipped []string
	ch := versionless(channel.Line(r, nopCloser{io.Discard}), nil, func(line []byte) { skipped = append(skipped, string(line)) })
	got, err := ch.Recv()
	if err != nil || string(got) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("Recv = %s, %v; want the response after the garbage", got, err)
	}
	if strings.Join(skipped, "|") != "warning: something|[1,2]|null" {
		t.Errorf("skipped %q", skipped)
	}
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
