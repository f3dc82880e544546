package claude

import (
	"encoding/json"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Subagents: Claude Code's Agent tool (Task, in older versions) runs a
// subagent. system/task_started names it (task_id) and the tool_use that
// started it (tool_use_id); every line with parent_tool_use_id equal to
// that tool_use is the subagent's own (its prompt, its text and thinking
// when the control initialize says forwardSubagentText, its tool calls and
// their results); its permission asks carry its tool_use ids (and
// agent_id, the task id); task_updated and task_notification say it
// ended. The translator reports it as a child session (agent.Events.Child)
// whose id is the task id; a line of a subagent never announced is shown
// as before: its tool calls the session's, its text not at all.

// taskEvent is a system/task_* line's own fields.
type taskEvent struct {
	TaskID       string `json:"task_id"`
	Prompt       string `json:"prompt"`
	ToolUseID    string `json:"tool_use_id"`
	Description  string `json:"description"`
	SubagentType string `json:"subagent_type"`
	TaskType     string `json:"task_type"` // "local_agent" for a subagent
	Status       string `json:"status"`
	Patch        struct {
		Status string `json:"status"`
	} `json:"patch"`
}

// taskStarted announces the subagent a system/task_started line names.
func (t *Translator) taskStarted(m message) Output {
	var ev taskEvent
	json.Unmarshal(m.Raw, &ev) // what does not decode is left out
	if ev.TaskID == "" || ev.ToolUseID == "" || !t.agentTask(ev) {
		return Output{}
	}
	sa, again := t.subs.Start(ev.ToolUseID, ev.TaskID)
	if sa == nil {
		return Output{}
	}
	var out Output
	if again { // SendMessage to a subagent: it runs again, with the message
		out.Updates = append(out.Updates, messageTo(ev.TaskID, ev.ToolUseID, ev.Prompt))
	}
	what := ""
	if ev.SubagentType != "" {
		what = ev.SubagentType + " subagent"
	}
	out.Updates = append(out.Updates, agentkit.SubagentStarted(sa, ev.Description, what, true)) // cancel: stop_task
	return out
}

// agentTask reports whether a task is a subagent's, not (say) a shell run
// in the background: its type says an agent, or it was started by the
// Agent tool (Task before) or a SendMessage.
func (t *Translator) agentTask(ev taskEvent) bool {
	if strings.Contains(ev.TaskType, "agent") {
		return true
	}
	if tc := t.tools[ev.ToolUseID]; tc != nil {
		return tc.name == "Agent" || tc.name == "Task" || tc.name == "SendMessage"
	}
	return false
}

// messageTo is the session's message to its subagent task (SendMessage),
// which task_started's prompt tells; id is the SendMessage tool_use's.
func messageTo(task, id, text string) acp.SessionUpdate {
	to := acp.SessionId(task)
	return acp.SessionUpdate{SessionMessage: &acp.SessionUpdateSessionMessage{MessageId: acp.MessageId(id),
		RecipientSessionId: &to, Content: []acp.ContentBlock{acp.TextBlock(text)}}}
}

// taskEnded reports a subagent's end, once, from task_updated (its patch's
// status) or task_notification (its status).
func (t *Translator) taskEnded(m message) Output {
	var ev taskEvent
	json.Unmarshal(m.Raw, &ev)
	status := ev.Status
	if m.Subtype == "task_updated" {
		status = ev.Patch.Status
	}
	return Output{Updates: t.end(t.subs.Named(ev.TaskID), status)}
}

// end is the subagent_update that says sa ended with status ("completed",
// "failed", "killed", …), or nothing for a status that is no end or an end
// already said.
func (t *Translator) end(sa *agentkit.Subagent, status string) []acp.SessionUpdate {
	switch status {
	case "completed":
		return t.subs.End(sa, agent.Idle(acp.StopReasonEndTurn))
	case "killed", "stopped", "cancelled":
		return t.subs.End(sa, agent.Idle(acp.StopReasonCancelled))
	case "failed":
		return t.subs.End(sa, agentkit.SubagentFailed("the subagent failed"))
	}
	return nil
}

// childOf is the child session a line belongs to: the task id of the
// announced subagent its parent_tool_use_id names, or "".
func (t *Translator) childOf(m message) string { return t.subs.Of(m.ParentToolUseID) }

// ChildOf is the child session whose tool_use id is toolUseID, "" for the
// session's own; or, failing that, the announced subagent agentID names
// (can_use_tool's agent_id, the task id).
func (t *Translator) ChildOf(toolUseID, agentID string) string {
	return t.subs.ChildOf(toolUseID, agentID)
}

// agentResult ends the subagent whose Agent tool_use this tool_result
// answers as failed, if its task lines did not end it: a failed Agent
// tool is its end. A result that is no error is not: a subagent run in
// the background, or sent a message (SendMessage), goes on after it.
func (t *Translator) agentResult(b agentkit.Block) []acp.SessionUpdate {
	if !b.IsError {
		return nil
	}
	return t.end(t.subs.Started(b.ToolUseID), "failed")
}

// childStreamEvent is a streaming event of an announced subagent's: its
// text and thinking deltas are the child's (and its assistant lines then
// say them no more), a tool_use starting is the child's tool call. What
// the session's own stream keeps (block indexes, partial input) is left
// alone: a subagent may stream while the session does.
func (t *Translator) childStreamEvent(m message, child, kind, msgID, blockType, blockID, blockName, deltaType, text string) Output {
	parent := *m.ParentToolUseID
	out := Output{Child: child}
	switch {
	case kind == "message_start":
		t.subMsg[parent] = msgID
	case kind == "content_block_start" && blockType == "tool_use":
		t.subs.Own(blockID, child)
		out.Updates = t.announce(blockID, blockName, nil).Updates
	case kind == "content_block_delta" && text != "" && (deltaType == "text_delta" || deltaType == "thinking_delta"):
		t.streamed[t.subMsg[parent]] = true
		if deltaType == "text_delta" {
			out.Updates = []acp.SessionUpdate{acp.UpdateAgentMessageText(text)}
		} else {
			out.Updates = []acp.SessionUpdate{acp.UpdateAgentThoughtText(text)}
		}
	}
	return out
}
