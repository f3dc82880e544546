package edge

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// questioner's sessions ask one question a turn and keep the answers.
type questioner struct {
	mu      sync.Mutex
	answers []agent.QuestionAnswer
}

func (b *questioner) Info() agent.Info { return agent.Info{Name: "questioner", Title: "Questioner"} }
func (b *questioner) Close() error     { return nil }
func (b *questioner) Open(_ context.Context, _ agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	return questionNative{b, ev}, nil
}

type questionNative struct {
	b  *questioner
	ev agent.Events
}

func (n questionNative) NativeID() string                                { return "q-1" }
func (n questionNative) Config() []agent.ConfigOption                    { return nil }
func (n questionNative) SetConfig(context.Context, string, string) error { return nil }
func (n questionNative) Caps() agent.SessionCaps                         { return agent.SessionCaps{} }
func (n questionNative) Close() error                                    { return nil }
func (n questionNative) Prompt(ctx context.Context, _ agent.Turn) (agent.TurnResult, error) {
	n.ev.Update(acp.StartToolCall("call-1", "Which one?"))
	a, err := n.ev.AskQuestion(ctx, acp.ToolCallUpdate{ToolCallId: "call-1"}, agent.Question{Text: "Which one?", Header: "Pick",
		Options: []agent.QuestionOption{{Label: "A", Description: "the first"}, {Label: "B"}}})
	n.b.mu.Lock()
	n.b.answers = append(n.b.answers, a)
	n.b.mu.Unlock()
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, err
}

func isRequest(method string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["method"] == method && m["id"] != nil }
}

// An agent's question goes to a client that takes forms as
// elicitation/create (ACP 1.21: the session and tool call it is about, a
// form whose one field's values are the answers), and what the user did
// comes back: an answer, or none when declined. A client that takes no
// forms is asked with a permission request whose options are the answers.
func TestElicitation_questionsAreFormsWhereTheClientTakesThem(t *testing.T) {
	b := &questioner{}
	r := startRawOn(t, b)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"elicitation":{"form":{}}}}}`)
	r.next(response(1))
	r.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	sid := r.next(response(2))["result"].(map[string]any)["sessionId"].(string)
	for i, reply := range []string{`{"action":"accept","content":{"answer":"B"}}`, `{"action":"decline"}`} {
		r.send(promptLine(3+i, sid, "ask me"))
		ask := r.next(isRequest("elicitation/create"))
		p, _ := ask["params"].(map[string]any)
		form, _ := json.Marshal(p["requestedSchema"])
		if p["sessionId"] != sid || p["toolCallId"] != "call-1" || p["mode"] != "form" || p["message"] != "Which one?" ||
			string(form) != `{"properties":{"answer":{"description":"Which one?","oneOf":[{"const":"A","title":"A — the first"},{"const":"B","title":"B"}],"title":"Pick","type":"string"}},"required":["answer"],"type":"object"}` {
			t.Errorf("elicitation/create params %v", p)
		}
		id, _ := json.Marshal(ask["id"])
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":%s}`, id, reply))
		if got := stopReason(r.next(response(3 + i))); got != "end_turn" {
			t.Errorf("turn %d stopped %q", i, got)
		}
	}
	want := []agent.QuestionAnswer{{Label: "B", Answered: true}, {}}
	if len(b.answers) != 2 || b.answers[0] != want[0] || b.answers[1] != want[1] {
		t.Errorf("answers %+v, want %+v", b.answers, want)
	}

	plain := startRawOn(t, &questioner{})
	plain.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
	plain.next(response(1))
	plain.send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
	sid = plain.next(response(2))["result"].(map[string]any)["sessionId"].(string)
	plain.send(promptLine(3, sid, "ask me"))
	ask := plain.next(isRequest("session/request_permission"))
	opts, _ := ask["params"].(map[string]any)["options"].([]any)
	if len(opts) != 3 {
		t.Errorf("permission options %v, want the two answers and one not to answer", opts)
	}
}
