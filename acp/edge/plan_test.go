package edge

import (
	"fmt"
	"strings"
	"testing"
)

// A client that takes plan operations gets the mock's plan as
// plan_update, live and replayed; another gets plan, as before.
func TestPlan_operationsOnlyToClientsThatTakeThem(t *testing.T) {
	for _, c := range []struct{ caps, want, not string }{
		{`{"plan":{}}`, `"plan":{"entries":[`, `"sessionUpdate":"plan"`},
		{`{}`, `"sessionUpdate":"plan"`, `plan_update`},
	} {
		r := startRaw(t, t.TempDir())
		r.call(1, "initialize", `{"protocolVersion":1,"clientCapabilities":`+c.caps+`}`)
		sid := r.call(2, "session/new", `{"cwd":"/tmp","mcpServers":[]}`)["result"].(map[string]any)["sessionId"].(string)
		live := r.updates(3, promptLine(3, sid, "plan"))
		replay := r.updates(4, fmt.Sprintf(`{"jsonrpc":"2.0","id":4,"method":"session/load","params":{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}}`, sid))
		for what, got := range map[string]string{"live": live, "replayed": replay} {
			if !strings.Contains(got, c.want) || strings.Contains(got, c.not) {
				t.Errorf("a client offering %s was sent, %s:\n%s\nwant %s, no %s", c.caps, what, got, c.want, c.not)
			}
		}
		if c.caps != `{}` && !strings.Contains(live, `"planId":"plan","type":"items"},"sessionUpdate":"plan_update"`) {
			t.Errorf("no plan_update of the session's plan:\n%s", live)
		}
	}
}

// updates sends line and returns the session/update params sent until the
// answer to request id, one JSON object a line.
func (r *raw) updates(id int, line string) string {
	r.t.Helper()
	r.send(line)
	var said []string
	r.next(func(m map[string]any) bool {
		if m["method"] == "session/update" {
			said = append(said, jsonOf(r.t, m["params"]))
		}
		return response(id)(m)
	})
	return strings.Join(said, "\n")
}
