// Package acptest helps tests that look at what an ACP client was sent.
package acptest

import (
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Conversation renders session updates as the conversation a client would
// show, so that a live turn and its replay can be compared: the chunks of
// a message joined on one line ("user: …", "agent: …", "thought: …", a new
// line per message; a notice on a line of its own, "notice <severity>:
// <title>: <description>"), then each tool call in its final state
// ("tool <id> <kind> <status> <title>"), then the last plan
// ("plan <content> <status>" per entry). Blocks other than text show as
// "[block]".
func Conversation(us []acp.SessionUpdate) string {
	var b strings.Builder
	tools := map[acp.ToolCallId]*acp.SessionUpdateToolCall{}
	var order []acp.ToolCallId
	var plan *acp.SessionUpdatePlan
	last := ""
	for _, u := range us {
		switch {
		case u.UserMessageChunk != nil:
			last = chunk(&b, last, "user", u.UserMessageChunk.MessageId, u.UserMessageChunk.Content)
		case u.AgentMessageChunk != nil:
			last = chunk(&b, last, "agent", u.AgentMessageChunk.MessageId, u.AgentMessageChunk.Content)
		case u.AgentThoughtChunk != nil:
			last = chunk(&b, last, "thought", u.AgentThoughtChunk.MessageId, u.AgentThoughtChunk.Content)
		case u.ToolCall != nil:
			c := *u.ToolCall
			if _, ok := tools[c.ToolCallId]; !ok {
				order = append(order, c.ToolCallId)
			}
			tools[c.ToolCallId] = &c
		case u.ToolCallUpdate != nil:
			if c := tools[u.ToolCallUpdate.ToolCallId]; c != nil {
				agent.FoldToolCall(c, *u.ToolCallUpdate)
			}
		case u.Plan != nil:
			plan = u.Plan
		case u.Notice != nil:
			last = "notice"
			b.WriteString("\nnotice " + string(u.Notice.Severity) + ": " + u.Notice.Title)
			if d := u.Notice.Description; d != nil {
				b.WriteString(": " + *d)
			}
		}
	}
	b.WriteString("\n")
	for _, id := range order {
		c := tools[id]
		b.WriteString("tool " + string(id) + " " + string(c.Kind) + " " + string(c.Status) + " " + c.Title + "\n")
	}
	if plan != nil {
		for _, e := range plan.Entries {
			b.WriteString("plan " + e.Content + " " + string(e.Status) + "\n")
		}
	}
	return b.String()
}

// chunk writes one chunk, starting a new line when the role or the
// message changes; it returns the message's key.
func chunk(b *strings.Builder, last, role string, id *acp.MessageId, c acp.ContentBlock) string {
	key := role
	if id != nil {
		key += "/" + string(*id)
	}
	if key != last {
		b.WriteString("\n" + role + ": ")
	}
	if c.Text != nil {
		b.WriteString(c.Text.Text)
	} else {
		b.WriteString("[block]")
	}
	return key
}
