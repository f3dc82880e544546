package amp

import (
	"cmp"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Subagents: Amp's Task tool runs a subagent, which its stream-json would
// show as the lines whose parent_tool_use_id is the Task's tool_use id
// (the Claude Code–compatible shape the amp SDK's types declare). The
// pinned CLI prints none of them (amp.md §1: it drops every message with a
// parentToolUseId), so all a client sees of the subagent is the Task call
// and its result, unless a later amp prints them.
//
// The translator reports every Task as a child session
// (agent.Events.Child) whose id is the Task's tool_use id: announced with
// the Task's tool call, the Task's prompt as its user message; the lines
// of that subagent are the child's (their text, thinking, tool calls and
// results, and the permission asks about its tool calls); the Task's
// tool_result ends it, idle (end_turn, or an error for a failed Task); a
// Task in a subagent's line is a child of the session too. Amp
// can't stop a subagent alone, so no child offers cancel. A line whose
// parent_tool_use_id names no Task is sent as a child's the bridge was
// never told of: it shows it as the session's, and logs that once.

// startTask announces the subagent a Task tool_use runs: its
// subagent_update, and its prompt as the child's user message.
func (t *Translator) startTask(id string, input agentkit.Input, out *Output) {
	sa, _ := t.subs.Start(id, id)
	if sa == nil {
		return
	}
	out.Updates = append(out.Updates, agentkit.SubagentStarted(sa, cmp.Or(input.Str("description"), "Task"), "Amp subagent", false))
	if prompt := input.Str("prompt"); prompt != "" {
		out.Children = append(out.Children, Part{Child: id, Updates: []acp.SessionUpdate{acp.UpdateUserMessageText(prompt)}})
	}
}

// endTask is the subagent_update that ends the subagent of the Task whose
// tool_result b is: idle, end_turn, or with an error for a failed Task.
func (t *Translator) endTask(b agentkit.Block) []acp.SessionUpdate {
	sa := t.subs.Started(b.ToolUseID)
	if b.IsError {
		return t.subs.End(sa, agentkit.SubagentFailed("the Task failed"))
	}
	return t.subs.End(sa, agent.Idle(acp.StopReasonEndTurn))
}

// endTasks ends the subagents still at work when the turn ended without
// their results: cancelled, or failed with the turn's error.
func (t *Translator) endTasks(r *Result) []acp.SessionUpdate {
	state := agentkit.SubagentFailed(cmp.Or(r.Err, "the turn ended"))
	if r.Cancelled {
		state = agent.Idle(acp.StopReasonCancelled)
	}
	var out []acp.SessionUpdate
	for _, sa := range t.subs.Running() {
		out = append(out, t.subs.End(sa, state)...)
	}
	return out
}

// childOf is the child session a line is of, by its parent_tool_use_id:
// a Task's subagent, or a child the bridge was never told of (see above);
// "" for the session's own line.
func (t *Translator) childOf(l line) string {
	if l.ParentToolUseID == nil {
		return ""
	}
	return cmp.Or(t.subs.Of(l.ParentToolUseID), *l.ParentToolUseID)
}

// ChildOf is the child session whose tool_use id is toolUseID (a
// subagent's tool call), "" for the session's own: a permission ask about
// it is the child's.
func (t *Translator) ChildOf(toolUseID string) string { return t.subs.ChildOf(toolUseID, "") }
