package webtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// A turn's ACP events as the golden files give them, one JSON object a
// line: {"open": {"state": …}} begins a segment (a response, or an AG-UI
// run); {"update": …} is a session update; {"ask": <request_permission
// params>, "answer": "<option id>"|"cancelled"} a permission ask, answered
// so before the lines after it; {"end": <prompt response>} the turn's end;
// {"error": "…"} its failure. An update or ask with "child": "<session
// id>" is that subagent's.
type goldenLine struct {
	Open   *struct{ State any }
	Child  string
	Update *acp.SessionUpdate
	Ask    *acp.RequestPermissionRequest
	Answer string
	End    *acp.PromptResponse
	Error  string
}

// RenderTurn feeds the lines of in to tr and returns what it made, one
// event a line as it goes on the wire (the SSE data). info is the segment
// info of the n-th open.
func RenderTurn(t *testing.T, in []byte, tr web.Translator, info func(n int, state any) any) string {
	t.Helper()
	var out strings.Builder
	opens, asks := 0, 0
	for i, line := range strings.Split(strings.TrimSpace(string(in)), "\n") {
		var l goldenLine
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		var events []any
		switch {
		case l.Open != nil:
			opens++
			events = tr.Open(info(opens, l.Open.State))
		case l.Update != nil && l.Child != "":
			events = tr.Child(l.Child, *l.Update)
		case l.Update != nil:
			events = tr.Update(*l.Update)
		case l.Ask != nil:
			asks++
			a := web.NewAsk(fmt.Sprintf("ask_%d", asks), *l.Ask)
			a.Child = l.Child
			events = tr.Ask(a)
			if l.Answer == "cancelled" {
				a.Give(acp.NewRequestPermissionOutcomeCancelled())
			} else {
				a.Give(acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(l.Answer)))
			}
		case l.End != nil:
			events = tr.End(web.TurnEnd{Resp: *l.End})
		case l.Error != "":
			events = tr.End(web.TurnEnd{Err: errors.New(l.Error)})
		default:
			t.Fatalf("line %d says nothing: %s", i+1, line)
		}
		for _, e := range events {
			data := strings.TrimSuffix(strings.TrimPrefix(string(web.SSEFrame(e)), "data: "), "\n\n")
			out.WriteString(data + "\n")
		}
	}
	return out.String()
}
