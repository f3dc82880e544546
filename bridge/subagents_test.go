package bridge

import (
	"fmt"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// A child's Accumulator numbers its entries with its parent's and tags
// them; a checkpoint's drafts of both are replaced by their final entries;
// a tool call id of the child's is not the parent's; Replay flattens the
// child (its tool calls only, no announcement), ReplayTree keeps it.
func TestReplayTree_childEntries(t *testing.T) {
	n := 0
	acc := NewAccumulator(1, func() string { n++; return fmt.Sprintf("m%d", n) })
	sub := acc.Child("task-1")
	var entries []persist.Entry
	keep := func(es []Entry) {
		enc, err := Encode(es)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, enc...)
	}
	add := func(a *Accumulator, u acp.SessionUpdate) { _, done := a.Add(u); keep(done) }
	keep(acc.User([]acp.ContentBlock{acp.TextBlock("delegate")}))
	add(acc, acp.StartToolCall("t1", "Agent", acp.WithStartStatus(acp.ToolCallStatusInProgress)))
	add(acc, agent.SubagentUpdate("task-1", "Sub", "", agent.Running()))
	add(sub, acp.UpdateAgentMessageText("working"))
	keep(append(acc.Checkpoint(1), sub.Checkpoint(1)...))                                       // the bridge stopped here, say; it did not
	add(sub, acp.StartToolCall("t1", "Bash", acp.WithStartStatus(acp.ToolCallStatusCompleted))) // the same id as the parent's
	add(acc, agent.SubagentUpdate("task-1", "", "", agent.Idle(acp.StopReasonEndTurn)))
	add(acc, acp.UpdateToolCall("t1", acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
	add(acc, acp.UpdateAgentMessageText("done"))
	keep(sub.Flush())
	keep(acc.Flush())

	var tree []string
	for _, r := range ReplayTree(entries) {
		tree = append(tree, r.Session+" "+kindOf(string(r.Update)))
	}
	want := " user_message_chunk\n tool_call Agent completed\n subagent_update\ntask-1 agent_message_chunk\ntask-1 tool_call Bash completed\n subagent_update\n agent_message_chunk"
	if got := strings.Join(tree, "\n"); got != want {
		t.Errorf("ReplayTree:\n%s\nwant:\n%s", got, want)
	}
	var flat []string
	for _, r := range Replay(entries) {
		flat = append(flat, kindOf(string(r)))
	}
	want = "user_message_chunk\ntool_call Agent completed\ntool_call Bash completed\nagent_message_chunk"
	if got := strings.Join(flat, "\n"); got != want {
		t.Errorf("Replay:\n%s\nwant:\n%s", got, want)
	}
}

// kindOf is an encoded update's kind, and a tool call's title and status.
func kindOf(u string) string {
	_, rest, _ := strings.Cut(u, `"sessionUpdate":"`)
	kind, _, _ := strings.Cut(rest, `"`)
	if kind != "tool_call" {
		return kind
	}
	field := func(k string) string {
		_, v, _ := strings.Cut(u, `"`+k+`":"`)
		v, _, _ = strings.Cut(v, `"`)
		return v
	}
	return kind + " " + field("title") + " " + field("status")
}

// A child's id is its parent's, a dot, and the native id made safe; an
// id is a child's only with a valid parent id before the dot.
func TestChildID(t *testing.T) {
	if got := childID("p1", "a/b c"); got != "p1.a_b_c" {
		t.Errorf("childID = %q", got)
	}
	for id, want := range map[string]bool{"p1.x": true, "p1.": false, ".x": false, "p/1.x": false, "p1": false} {
		if _, _, ok := splitChild(id); ok != want {
			t.Errorf("splitChild(%q) ok = %v, want %v", id, ok, want)
		}
	}
}
