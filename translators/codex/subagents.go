package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"path"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Subagents: with codex's collaboration tools on (features.multi_agent_v2
// in config.toml; 0.169.0 offers them to no model of its catalog by
// default), the model's spawn_agent starts an agent on a thread of its
// own, on the same app-server. The spawning thread gets a subAgentActivity
// item, kind "started", whose id is the spawn call's and which names the
// new thread (agentThreadId) and its task path (agentPath, "/root/helper");
// the new thread's turns, items and approvals then come as any thread's,
// under its own threadId (codex sends no thread/started for it). Its turn's
// end is its answer, which codex hands the spawner (wait_agent). The
// older multi-agent tools (v1) report a collabAgentToolCall instead, tool
// spawnAgent, whose receiverThreadIds name the new thread: 0.169.0 offers
// them only to a model without metadata, and then fails every call
// ("unsupported call"), so that form is known from the schema only.
//
// The translator reports each spawned thread as a child session
// (agent.Events.Child) whose id is the thread's: announced when the
// spawner's item names it, running while a turn of its runs, idle (and
// why) when the turn ends. A message the spawner sends it (send_message,
// followup_task; collabAgentToolCall with a prompt) is a session_message.
// Threads spawned by a spawned agent are children of the same session.

// child is what the translator knows of one spawned agent's thread.
type child struct {
	thread string      // its thread id: the child session's id
	call   string      // the spawner's tool call that started it
	tr     *Translator // translates its own notifications
	turn   string      // its running turn, for an interrupt
	idle   bool        // its last turn ended
	cancel bool        // cancelled before its first turn started: interrupt that
	answer string      // its last agent message
	said   string      // the answer last shown on the spawn's tool call
}

// spawn announces the threads a subAgentActivity or collabAgentToolCall
// item names that the translator has not announced: their
// subagent_update, linked to the item's tool call, and the spawn call's
// prompt as the child's user message. Other collab calls with a prompt
// to known threads are messages to them.
func (t *Translator) spawn(it item) Output {
	a := it
	var out Output
	switch {
	case it.Type == "subAgentActivity" && a.Kind == "started":
		out.Updates = t.announceChild(a.AgentThreadID, it.ID, agentTitle(a.AgentPath), a.AgentPath, &out)
	case it.Type == "collabAgentToolCall" && a.Tool == "spawnAgent":
		for _, th := range a.ReceiverThreadIDs {
			out.Updates = append(out.Updates, t.announceChild(th, it.ID, agentTitle(a.AgentPath), "", &out)...)
			if a.Prompt != "" && len(out.Spawned) > 0 && out.Spawned[len(out.Spawned)-1] == th {
				out.Child, out.ChildUpdates = th, []acp.SessionUpdate{acp.UpdateUserMessageText(a.Prompt)}
			}
		}
	case it.Type == "collabAgentToolCall" && a.Prompt != "" && !t.told[it.ID]:
		for _, th := range a.ReceiverThreadIDs {
			if t.children[th] != nil {
				t.told[it.ID] = true
				out.Updates = append(out.Updates, messageTo(th, it.ID, a.Prompt))
			}
		}
	}
	return out
}

// announceChild registers thread as a child started by tool call call,
// and is its subagent_update, or nothing for a thread already known.
func (t *Translator) announceChild(thread, call, title, description string, out *Output) []acp.SessionUpdate {
	if thread == "" || t.children[thread] != nil {
		return nil
	}
	c := &child{thread: thread, call: call, tr: NewTranslator(t.cwd)}
	c.tr.children, c.tr.told = t.children, t.told // a spawned agent's agents are the session's children too
	t.children[thread] = c
	out.Spawned = append(out.Spawned, thread)
	u := agent.SubagentUpdate(thread, title, description, agent.Running())
	u.SubagentUpdate.Capabilities = &acp.SubagentSessionCapabilities{Cancel: &acp.SessionCancelCapabilities{}} // turn/interrupt on its thread
	u.SubagentUpdate.Meta = agent.SubagentOf(call)
	return []acp.SessionUpdate{u}
}

// agentTitle is a child's title: the last part of its task path
// ("helper" for "/root/helper"), or "" for none.
func agentTitle(agentPath string) string {
	if agentPath == "" {
		return ""
	}
	return path.Base(agentPath)
}

// messageTo is the session's message to a spawned agent's thread.
func messageTo(thread, id, text string) acp.SessionUpdate {
	to := acp.SessionId(thread)
	return acp.SessionUpdate{SessionMessage: &acp.SessionUpdateSessionMessage{MessageId: acp.MessageId(id),
		RecipientSessionId: &to, Content: []acp.ContentBlock{acp.TextBlock(text)}}}
}

// childNotification translates a notification of a spawned agent's
// thread: its items are the child's updates; its turn's start and end
// say, on the session, that it runs again or went idle. What would end a
// turn (turn/completed, an error) is the child's, never the session's.
func (t *Translator) childNotification(c *child, method string, raw json.RawMessage, p params) (Output, error) {
	switch method {
	case "turn/started":
		if p.Turn != nil {
			c.turn = p.Turn.ID
		}
		if c.cancel {
			c.cancel = false
			return Output{Interrupt: &turnRef{Thread: c.thread, Turn: c.turn}}, nil
		}
		if c.idle {
			c.idle = false
			return updates(agent.SubagentUpdate(c.thread, "", "", agent.Running())), nil
		}
		return Output{}, nil
	case "turn/completed":
		return updates(c.ended(p.Turn)...), nil
	}
	out, err := c.tr.translate(method, raw, p)
	if err != nil {
		return Output{}, err
	}
	if method == "item/completed" {
		if it, err := decodeItem(p.Item); err == nil && it.Type == "agentMessage" && it.Text != "" {
			c.answer = it.Text
		}
	}
	// The announcement of an agent this one spawned is among its updates:
	// the bridge makes it the session's.
	return Output{Child: c.thread, ChildUpdates: append(out.Updates, out.ChildUpdates...), Spawned: out.Spawned}, nil
}

// ended is what a child's turn's end says on the session: its idle state
// (end_turn, cancelled for an interrupted turn, an error for a failed
// one), and its answer as the content of the tool call that spawned it,
// for a client that takes no subagents.
func (c *child) ended(turn *turnDoc) []acp.SessionUpdate {
	var us []acp.SessionUpdate
	if !c.idle {
		us = append(us, agent.SubagentUpdate(c.thread, "", "", c.endState(turn)))
	}
	c.idle = true
	if c.answer != "" && c.answer != c.said {
		c.said = c.answer
		us = append(us, acp.UpdateToolCall(acp.ToolCallId(c.call), acp.WithUpdateContent(agentkit.Texts(c.answer))))
	}
	return us
}

// endState is the idle state a child's turn ended in.
func (c *child) endState(turn *turnDoc) *acp.StateUpdate {
	state := agent.Idle(acp.StopReasonEndTurn)
	if turn != nil {
		switch turn.Status {
		case "interrupted":
			state = agent.Idle(acp.StopReasonCancelled)
		case "failed":
			msg := "the spawned agent's turn failed"
			if turn.Error != nil {
				msg = errorText(turn.Error)
			}
			state = agentkit.SubagentFailed(msg)
		}
	}
	return state
}

// ChildrenStopped takes the children as idle, once the session's turn was
// cancelled (the bridge says so of those still running): the end of their
// interrupted turns says nothing more.
func (t *Translator) ChildrenStopped() {
	for _, c := range t.children {
		c.idle = true
	}
}

// ChildTurns are the running turns of the children, by thread.
func (t *Translator) ChildTurns() map[string]string {
	turns := map[string]string{}
	for th, c := range t.children {
		if !c.idle && c.turn != "" {
			turns[th] = c.turn
		}
	}
	return turns
}

// For is the translator of thread's items and the child session it is,
// for an approval about one of them: a spawned agent's, or t itself and
// "" for the session's own thread (or one it does not know).
func (t *Translator) For(thread string) (*Translator, string) {
	if c := t.children[thread]; c != nil {
		return c.tr, c.thread
	}
	return t, ""
}

// InterruptChild is the running turn of the child session id, to
// interrupt; "" if it runs none (or is no child). A child whose first turn
// has not started yet is interrupted as it starts (Output.Interrupt).
func (t *Translator) InterruptChild(id string) string {
	c := t.children[id]
	switch {
	case c == nil || c.idle:
		return ""
	case c.turn == "":
		c.cancel = true
	}
	return c.turn
}

// interruptChildren interrupts the running turns of the spawned agents,
// as the session's turn is cancelled. One that ended meanwhile is no
// error worth more than a note.
func (s *session) interruptChildren(ctx context.Context, srv *server) {
	s.out.Lock()
	turns := s.tr.ChildTurns()
	s.out.Unlock()
	for th, turn := range turns {
		if err := srv.call(ctx, "turn/interrupt", map[string]any{"threadId": th, "turnId": turn}, nil); err != nil {
			s.log.Debug("interrupting a spawned agent's turn", "thread", th, "err", err)
		}
	}
}

// interruptChild stops the running turn of the spawned agent whose thread
// is id (turn/interrupt on its thread), leaving the session's turn
// running: codex tells the spawner that the agent was interrupted.
func (s *session) interruptChild(ctx context.Context, id string) error {
	s.out.Lock()
	turn := s.tr.InterruptChild(id)
	s.out.Unlock()
	srv, ok := s.at.Current()
	if turn == "" || !ok {
		return nil // no turn of its runs (or one to be interrupted as it starts)
	}
	if err := srv.call(ctx, "turn/interrupt", map[string]any{"threadId": id, "turnId": turn}, nil); err != nil {
		return fmt.Errorf("interrupting spawned agent %s: %w", id, err)
	}
	return nil
}

// interruptLater interrupts the turn of a spawned agent cancelled before
// it started, off the reading goroutine (which the answer comes on).
func (s *session) interruptLater(ref *turnRef) {
	srv, ok := s.at.Current()
	if ref == nil || !ok {
		return
	}
	s.tasks.Go(func() {
		ctx, cancel := context.WithTimeout(s.life, startTimeout)
		defer cancel()
		if err := srv.call(ctx, "turn/interrupt", map[string]any{"threadId": ref.Thread, "turnId": ref.Turn}, nil); err != nil {
			s.log.Warn("interrupting a spawned agent's turn", "thread", ref.Thread, "err", err)
		}
	})
}

// turnRef names a turn of a thread.
type turnRef struct{ Thread, Turn string }
