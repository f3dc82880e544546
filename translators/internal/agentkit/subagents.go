package agentkit

import (
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Subagents is what a stream-json translator (Claude Code's, Amp's) knows
// of its session's subagents. Each was started by one of the session's
// tool_use blocks (Claude's Agent, Amp's Task); the lines whose
// parent_tool_use_id names that tool_use are the subagent's own, and so
// are the tool_use blocks in them. A subagent is a child session
// (agent.Events.Child) named by its id. The zero value is ready to use;
// it is not safe for concurrent use.
type Subagents struct {
	byTool map[string]*Subagent // by the tool_use id that started it
	byID   map[string]string    // a subagent's id → the tool_use that started it last
	tools  map[string]string    // a subagent's own tool_use id → its id
}

// Subagent is one subagent's run.
type Subagent struct {
	ID   string // the child session's id
	Tool string // the tool_use id that started it
	done bool   // its end was said
}

// Start registers the subagent id as started by tool_use tool, unless
// that tool_use started one already (sa is nil then). again says that id
// ran before, started by another tool_use (a message to it ran it again).
func (s *Subagents) Start(tool, id string) (sa *Subagent, again bool) {
	if s.byTool == nil {
		s.byTool, s.byID, s.tools = map[string]*Subagent{}, map[string]string{}, map[string]string{}
	}
	if s.byTool[tool] != nil {
		return nil, false
	}
	_, again = s.byID[id]
	sa = &Subagent{ID: id, Tool: tool}
	s.byTool[tool], s.byID[id] = sa, tool
	return sa, again
}

// Started is the subagent tool_use tool started, or nil.
func (s *Subagents) Started(tool string) *Subagent { return s.byTool[tool] }

// Named is the latest run of the subagent id, or nil.
func (s *Subagents) Named(id string) *Subagent {
	tool, ok := s.byID[id]
	if !ok {
		return nil
	}
	return s.byTool[tool]
}

// Of is the id of the subagent a line is of, by its parent_tool_use_id:
// "" for the session's own line, or one of a subagent never started.
func (s *Subagents) Of(parentToolUseID *string) string {
	if parentToolUseID == nil {
		return ""
	}
	if sa := s.byTool[*parentToolUseID]; sa != nil {
		return sa.ID
	}
	return ""
}

// Own notes that tool_use id is one the subagent child (an id) made.
func (s *Subagents) Own(toolUseID, child string) {
	if child != "" && s.tools != nil {
		s.tools[toolUseID] = child
	}
}

// ChildOf is the subagent whose tool_use toolUseID is (see Own), "" for
// the session's own; or, failing that, the subagent id if one ran (a
// permission ask that names the subagent asking).
func (s *Subagents) ChildOf(toolUseID, id string) string {
	if c := s.tools[toolUseID]; c != "" {
		return c
	}
	if _, ok := s.byID[id]; ok && id != "" {
		return id
	}
	return ""
}

// Running are the subagents whose end was not said.
func (s *Subagents) Running() []*Subagent {
	var out []*Subagent
	for _, sa := range s.byTool {
		if !sa.done {
			out = append(out, sa)
		}
	}
	return out
}

// End is the subagent_update that says sa ended in state, once: nothing
// if its end was said already.
func (s *Subagents) End(sa *Subagent, state *acp.StateUpdate) []acp.SessionUpdate {
	if sa == nil || sa.done {
		return nil
	}
	sa.done = true
	return []acp.SessionUpdate{agent.SubagentUpdate(sa.ID, "", "", state)}
}

// SubagentStarted is the subagent_update that announces sa, running,
// linked to the tool call that started it; cancel says that the agent can
// stop it alone (SessionCaps.CancelChild).
func SubagentStarted(sa *Subagent, title, description string, cancel bool) acp.SessionUpdate {
	u := agent.SubagentUpdate(sa.ID, title, description, agent.Running())
	if cancel {
		u.SubagentUpdate.Capabilities = &acp.SubagentSessionCapabilities{Cancel: &acp.SessionCancelCapabilities{}}
	}
	u.SubagentUpdate.Meta = agent.SubagentOf(sa.Tool)
	return u
}

// SubagentFailed is the idle state of a subagent that failed.
func SubagentFailed(msg string) *acp.StateUpdate {
	state := agent.Idle(acp.StopReasonEndTurn)
	why := "error"
	code := acp.ErrorCodeInternalError(-32603)
	state.Idle.StopReason = &why
	state.Idle.Error = &acp.Error{Code: acp.ErrorCode{InternalError: &code}, Message: msg}
	return state
}

// SubagentPrompt is a subagent's prompt, from the text blocks of the line
// that gives it, as the child's user message.
func SubagentPrompt(blocks []Block) []acp.SessionUpdate {
	var us []acp.SessionUpdate
	for _, b := range blocks {
		if b.Type == "text" && b.Text != "" {
			us = append(us, acp.UpdateUserMessageText(b.Text))
		}
	}
	return us
}
