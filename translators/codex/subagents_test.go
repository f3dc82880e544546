package codex

import (
	"encoding/json"
	"testing"
)

// A spawned agent cancelled before its first turn started is interrupted
// as that turn starts; one cancelled while its turn runs, at once; one
// whose turn ended, not at all.
func TestTranslator_interruptChild(t *testing.T) {
	tr := NewTranslator("/w")
	feed := func(method, params string) Output {
		t.Helper()
		out, err := tr.Translate(method, json.RawMessage(params))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	feed("item/started", `{"threadId":"parent","item":{"type":"subAgentActivity","id":"call_1","kind":"started","agentThreadId":"kid","agentPath":"/root/helper"}}`)
	if turn := tr.InterruptChild("kid"); turn != "" {
		t.Fatalf("a child with no turn yet: interrupt %q now", turn)
	}
	out := feed("turn/started", `{"threadId":"kid","turn":{"id":"t1","status":"inProgress"}}`)
	if r := out.Interrupt; r == nil || *r != (turnRef{Thread: "kid", Turn: "t1"}) {
		t.Fatalf("its first turn started: Interrupt %+v, want kid's t1", r)
	}
	if turn := tr.InterruptChild("kid"); turn != "t1" {
		t.Errorf("while t1 runs: interrupt %q, want t1", turn)
	}
	feed("turn/completed", `{"threadId":"kid","turn":{"id":"t1","status":"interrupted"}}`)
	if turn := tr.InterruptChild("kid"); turn != "" {
		t.Errorf("once idle: interrupt %q, want none", turn)
	}
	if out := feed("turn/started", `{"threadId":"kid","turn":{"id":"t2","status":"inProgress"}}`); out.Interrupt != nil {
		t.Errorf("a later turn is interrupted: %+v", out.Interrupt)
	}
	if turn := tr.InterruptChild("nobody"); turn != "" {
		t.Errorf("no such child: interrupt %q", turn)
	}
}
