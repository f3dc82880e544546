package claude

import (
	"testing"
)

// A task that is no subagent's (a shell run in the background) announces
// no child; a subagent's does, and its tool calls and asks are its own.
func TestSubagent_tasks(t *testing.T) {
	tr := NewTranslator("/w")
	lines := []string{
		`{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"tu_bash","name":"Bash","input":{"command":"sleep 9","run_in_background":true}}]}}`,
		`{"type":"system","subtype":"task_started","task_id":"b1","tool_use_id":"tu_bash","description":"sleep","task_type":"local_bash"}`,
		`{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"tu_agent","name":"Agent","input":{"description":"Look","prompt":"look"}}]}}`,
		`{"type":"system","subtype":"task_started","task_id":"a1","tool_use_id":"tu_agent","description":"Look","subagent_type":"Explore","task_type":"local_agent"}`,
		`{"type":"assistant","message":{"id":"m3","content":[{"type":"tool_use","id":"tu_read","name":"Read","input":{"file_path":"/w/x"}}]},"parent_tool_use_id":"tu_agent"}`,
	}
	var announced []string
	var child string
	for _, l := range lines {
		out, err := tr.Translate([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range out.Updates {
			if su := u.SubagentUpdate; su != nil {
				announced = append(announced, string(su.SessionId))
			}
		}
		if out.Child != "" {
			child = out.Child
		}
	}
	if len(announced) != 1 || announced[0] != "a1" {
		t.Errorf("announced %v, want the subagent a1 alone", announced)
	}
	if child != "a1" {
		t.Errorf("the subagent's Read went to %q, want a1", child)
	}
	for _, c := range []struct{ tool, agent, want string }{
		{"tu_read", "", "a1"},    // its tool call
		{"tu_later", "a1", "a1"}, // an ask before its tool call: agent_id
		{"tu_bash", "", ""},      // the session's own
		{"tu_x", "b1", ""},       // no subagent's id
	} {
		if got := tr.ChildOf(c.tool, c.agent); got != c.want {
			t.Errorf("ChildOf(%q, %q) = %q, want %q", c.tool, c.agent, got, c.want)
		}
	}
}
