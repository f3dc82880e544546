package acpagent

import (
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/coder/acp-go-sdk"
)

// A downstream agent's child session (subagent_update, then traffic and an
// ask under the child's id) reaches an editor that takes subagents as a
// child of the bridge's session, its id the bridge's session id, a dot and
// the downstream's; an editor that does not sees its tool call on the
// session, and no other id.
func TestProxy_subagent(t *testing.T) {
	for _, c := range []struct {
		name string
		caps acp.ClientCapabilities
	}{{"subagents", acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}}, {"flattened", acp.ClientCapabilities{}}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t)
			e := editortest.StartEditorOffering(t, f.backend(), t.TempDir(), bridge.PersistAuto, c.caps)
			id := e.NewSession(t.TempDir())
			prompt(t, e, id, "subagent")
			var child acp.SessionId
			var childSaid, parentSaid []string
			for _, n := range e.Client.Notifications() {
				u := n.Update
				switch {
				case u.SubagentUpdate != nil:
					if n.SessionId != id || c.caps.Subagents == nil {
						t.Fatalf("a subagent_update on %s (the editor offered %+v)", n.SessionId, c.caps)
					}
					child = u.SubagentUpdate.SessionId
				case n.SessionId == id:
					parentSaid = append(parentSaid, kind(u))
					if c := u.AgentMessageChunk; c != nil && c.Content.Text != nil && strings.Contains(c.Content.Text.Text, "helper works") {
						t.Errorf("the helper's text came on the session")
					}
				case n.SessionId == child:
					childSaid = append(childSaid, kind(u))
				default:
					t.Fatalf("an update of %s before any announcement", n.SessionId)
				}
			}
			asks := e.Client.Asks()
			if c.caps.Subagents == nil {
				if got := strings.Join(parentSaid, " "); !strings.Contains(got, "tool_call tool_call_update") {
					t.Errorf("the session said %s; want the helper's tool call", got)
				}
				if len(asks) != 1 || asks[0].SessionId != id {
					t.Errorf("asks %+v, want one, of the session", asks)
				}
				return
			}
			if !strings.HasPrefix(string(child), string(id)+".") || !strings.HasSuffix(string(child), "-sub") {
				t.Fatalf("child %q, want %s.<the downstream's id>", child, id)
			}
			if got := strings.Join(childSaid, " "); got != "agent_message_chunk tool_call tool_call_update" {
				t.Errorf("the child said %s", got)
			}
			if len(asks) != 1 || asks[0].SessionId != child {
				t.Errorf("asks %+v, want one, of the child", asks)
			}
		})
	}
}

func kind(u acp.SessionUpdate) string {
	switch {
	case u.AgentMessageChunk != nil:
		return "agent_message_chunk"
	case u.ToolCall != nil:
		return "tool_call"
	case u.ToolCallUpdate != nil:
		return "tool_call_update"
	}
	return "other"
}
