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

// subtask is what the translator knows of one subagent.
type subtask struct {
	task string // its task_id: the child session's id
	done bool   // its end was reported
}

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
	json.Unmarshal(m.Line, &ev) // what does not decode is left out
	if ev.TaskID == "" || ev.ToolUseID == "" || !t.agentTask(ev) {
		return Output{}
	}
	if _, seen := t.subagents[ev.ToolUseID]; seen {
		return Output{}
	}
	var out Output
	if _, again := t.tasksByID[ev.TaskID]; again { // SendMessage to a subagent: it runs again, with the message
		out.Updates = append(out.Updates, messageTo(ev.TaskID, ev.ToolUseID, ev.Prompt))
	}
	t.subagents[ev.ToolUseID] = &subtask{task: ev.TaskID}
	t.tasksByID[ev.TaskID] = ev.ToolUseID
	what := ""
	if ev.SubagentType != "" {
		what = ev.SubagentType + " subagent"
	}
	u := agent.SubagentUpdate(ev.TaskID, ev.Description, what, agent.Running())
	u.SubagentUpdate.Capabilities = &acp.SubagentSessionCapabilities{Cancel: &acp.SessionCancelCapabilities{}} // stop_task
	u.SubagentUpdate.Meta = agent.SubagentOf(ev.ToolUseID)
	out.Updates = append(out.Updates, u)
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
	json.Unmarshal(m.Line, &ev)
	status := ev.Status
	if m.Subtype == "task_updated" {
		status = ev.Patch.Status
	}
	sa := t.subagents[t.tasksByID[ev.TaskID]]
	if sa == nil {
		return Output{}
	}
	return Output{Updates: t.end(sa, status)}
}

// end is the subagent_update that says sa ended with status ("completed",
// "failed", "killed", …), or nothing for a status that is no end or an end
// already said.
func (t *Translator) end(sa *subtask, status string) []acp.SessionUpdate {
	if sa.done {
		return nil
	}
	state := agent.Idle(acp.StopReasonEndTurn)
	switch status {
	case "completed":
	case "killed", "stopped", "cancelled":
		state = agent.Idle(acp.StopReasonCancelled)
	case "failed":
		state.Idle.StopReason = ptr("error")
		state.Idle.Error = &acp.Error{Code: acp.ErrorCode{InternalError: ptr(acp.ErrorCodeInternalError(-32603))}, Message: "the subagent failed"}
	default:
		return nil
	}
	sa.done = true
	return []acp.SessionUpdate{agent.SubagentUpdate(sa.task, "", "", state)}
}

func ptr[T any](v T) *T { return &v }

// childOf is the child session a line belongs to: the task id of the
// announced subagent its parent_tool_use_id names, or "".
func (t *Translator) childOf(m message) string {
	if m.ParentToolUseID == nil {
		return ""
	}
	if sa := t.subagents[*m.ParentToolUseID]; sa != nil {
		return sa.task
	}
	return ""
}

// ChildOf is the child session whose tool_use id is toolUseID, "" for the
// session's own; or, failing that, the announced subagent agentID names
// (can_use_tool's agent_id, the task id).
func (t *Translator) ChildOf(toolUseID, agentID string) string {
	if c := t.toolChild[toolUseID]; c != "" {
		return c
	}
	if _, ok := t.tasksByID[agentID]; ok {
		return agentID
	}
	return ""
}

// subagentPrompt is the subagent's prompt, from the user line that gives
// it, as the child's user message.
func subagentPrompt(blocks []agentkit.Block) []acp.SessionUpdate {
	var us []acp.SessionUpdate
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			us = append(us, acp.UpdateUserMessageText(b.Text))
		}
	}
	return us
}

// agentResult ends the subagent whose Agent tool_use this tool_result
// answers as failed, if its task lines did not end it: a failed Agent
// tool is its end. A result that is no error is not: a subagent run in
// the background, or sent a message (SendMessage), goes on after it.
func (t *Translator) agentResult(b agentkit.Block) []acp.SessionUpdate {
	sa := t.subagents[b.ToolUseID]
	if sa == nil || !b.IsError {
		return nil
	}
	return t.end(sa, "failed")
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
		t.toolChild[blockID] = child
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
