package agui

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// part is a content part of an AG-UI user message.
type part struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source struct {
		Type     string `json:"type"`
		Value    string `json:"value"`
		MimeType string `json:"mimeType"`
	} `json:"source"`
}

// contentOf decodes an AG-UI message's content: a string, or parts.
func contentOf(raw json.RawMessage) (string, []part, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, nil
	}
	var parts []part
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, fmt.Errorf("%w: a message's content is neither text nor parts", web.ErrBadRequest)
	}
	return "", parts, nil
}

// promptOf is a user message as an ACP prompt: text as text, images
// carried inline as images, anything at a URL as a link.
func promptOf(m messageIn) ([]acp.ContentBlock, error) {
	text, parts, err := contentOf(m.Content)
	if err != nil {
		return nil, err
	}
	var blocks []acp.ContentBlock
	if text != "" {
		blocks = append(blocks, acp.TextBlock(text))
	}
	for _, p := range parts {
		switch {
		case p.Type == "text" && p.Text != "":
			blocks = append(blocks, acp.TextBlock(p.Text))
		case p.Type == "image" && p.Source.Type == "data":
			blocks = append(blocks, acp.ImageBlock(p.Source.Value, p.Source.MimeType))
		case p.Source.Type == "url" && p.Source.Value != "":
			blocks = append(blocks, acp.ResourceLinkBlock(p.Source.Value, p.Source.Value))
		}
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%w: the user message %q has no text, image or link", web.ErrBadRequest, m.ID)
	}
	return blocks, nil
}

// toldHistory puts a thread's earlier messages (as agent.HistoryText
// tells them) before a new session's first prompt.
func toldHistory(earlier []messageIn, prompt []acp.ContentBlock) []acp.ContentBlock {
	var us []acp.SessionUpdate
	for _, m := range earlier {
		text, parts, _ := contentOf(m.Content)
		for _, p := range parts {
			if p.Type == "text" {
				text += p.Text
			}
		}
		switch {
		case m.Role == "user" && text != "":
			us = append(us, acp.UpdateUserMessageText(text))
		case m.Role == "assistant" && text != "":
			us = append(us, acp.UpdateAgentMessageText(text))
		}
		for _, tc := range m.ToolCalls {
			var input any
			json.Unmarshal([]byte(tc.Function.Arguments), &input)
			us = append(us, acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: acp.ToolCallId(tc.ID),
				Title: tc.Function.Name, Status: acp.ToolCallStatusCompleted, RawInput: input}})
		}
	}
	return web.TellHistory(us, prompt)
}

// messagesSnapshot is a reopened thread's conversation (a session/load
// replay) as MESSAGES_SNAPSHOT, with the run's user message after it when
// the run prompts it.
func messagesSnapshot(history []web.Update, last *messageIn, prompting bool) event {
	msgs := replayMessages(history)
	if prompting && last != nil {
		var content any
		json.Unmarshal(last.Content, &content)
		msgs = append(msgs, message{ID: last.ID, Role: "user", Content: content})
	}
	return event{Type: "MESSAGES_SNAPSHOT", Messages: &msgs}
}

// replay builds AG-UI messages from a replay.
type replay struct {
	msgs        []message
	tools       map[acp.ToolCallId]*replayTool
	compactions web.Compactions
	subagents   web.Subagents
	activity    map[string]int // a compaction's or subagent's activity message, by its id
}

// replayTool is a tool call of the replay: where its call is, and
// what is known of it.
type replayTool struct {
	msg, call int
	tool      web.Tool
}

// replayMessages turns a session/load replay into AG-UI messages:
// user messages, assistant messages with their tool calls, a tool message
// per finished call, reasoning messages, and an activity message per
// compaction and per subagent (its work in it).
func replayMessages(us []web.Update) []message {
	r := &replay{msgs: []message{}, tools: map[acp.ToolCallId]*replayTool{}, compactions: web.Compactions{}, activity: map[string]int{}}
	for _, u := range us {
		if u.Child != "" {
			if d, ok := r.subagents.Fold(u.Child, u.SessionUpdate); ok {
				r.activityOf(d.ID, "subagent", d)
			}
			continue
		}
		if c, ok := r.compactions.Fold(u.SessionUpdate); ok {
			r.activityOf(c.ID, "compaction", c)
			continue
		}
		switch {
		case u.SubagentUpdate != nil:
			d := r.subagents.Announce(u.SubagentUpdate)
			r.activityOf(d.ID, "subagent", d)
		case u.SessionMessage != nil:
			if d, ok := r.subagents.Message(u.SessionMessage); ok {
				r.activityOf(d.ID, "subagent", d)
			}
		case u.UserMessageChunk != nil:
			r.say("user", u.UserMessageChunk.Content)
		case u.AgentMessageChunk != nil:
			r.say("assistant", u.AgentMessageChunk.Content)
		case u.AgentThoughtChunk != nil:
			r.say("reasoning", u.AgentThoughtChunk.Content)
		case u.ToolCall != nil:
			r.toolCall(web.AsToolUpdate(u.ToolCall))
		case u.ToolCallUpdate != nil:
			r.toolCall(u.ToolCallUpdate)
		}
	}
	return r.msgs
}

// activityOf adds the activity message id (a compaction's, a subagent's)
// of activityType, or brings it up to date.
func (r *replay) activityOf(id, activityType string, content any) {
	if i, ok := r.activity[id]; ok {
		r.msgs[i].Content = content
		return
	}
	r.activity[id] = len(r.msgs)
	r.msgs = append(r.msgs, message{ID: id, Role: "activity", ActivityType: activityType, Content: content})
}

// say adds a content block to the last message if it has role (text
// joined), else to a new one.
func (r *replay) say(role string, c acp.ContentBlock) {
	if c.Text == nil {
		return
	}
	if n := len(r.msgs); n > 0 && r.msgs[n-1].Role == role && r.msgs[n-1].ToolCalls == nil {
		s, _ := r.msgs[n-1].Content.(string)
		r.msgs[n-1].Content = s + c.Text.Text
		return
	}
	r.msgs = append(r.msgs, message{ID: "h" + strconv.Itoa(len(r.msgs)+1), Role: role, Content: c.Text.Text})
}

// toolCall adds a tool call to the last assistant message (a new one if
// the last message is not the assistant's), keeps its arguments current,
// and adds its result once it ends.
func (r *replay) toolCall(u *acp.SessionToolCallUpdate) {
	rt := r.tools[u.ToolCallId]
	if rt == nil {
		n := len(r.msgs)
		if n == 0 || r.msgs[n-1].Role != "assistant" {
			r.msgs = append(r.msgs, message{ID: "h" + strconv.Itoa(n+1), Role: "assistant"})
			n++
		}
		rt = &replayTool{msg: n - 1, call: len(r.msgs[n-1].ToolCalls)}
		r.msgs[n-1].ToolCalls = append(r.msgs[n-1].ToolCalls, toolCall{ID: string(u.ToolCallId), Type: "function"})
		r.tools[u.ToolCallId] = rt
	}
	rt.tool.Merge(u)
	call := &r.msgs[rt.msg].ToolCalls[rt.call]
	args, _ := json.Marshal(orEmpty(rt.tool.RawInput))
	call.Function.Name, call.Function.Arguments = web.ToolName(rt.tool.Kind), string(args)
	if u.Status == nil || rt.tool.Done || (*u.Status != acp.ToolCallStatusCompleted && *u.Status != acp.ToolCallStatusFailed) {
		return
	}
	rt.tool.Done = true
	res := map[string]any{"title": rt.tool.Title, "kind": web.ToolName(rt.tool.Kind), "status": *u.Status}
	for k, v := range rt.tool.Output() {
		res[k] = v
	}
	m := message{ID: "tr_" + string(u.ToolCallId), Role: "tool", ToolCallID: string(u.ToolCallId)}
	if *u.Status == acp.ToolCallStatusFailed {
		m.Error = rt.tool.Failure()
		res["error"] = m.Error
	}
	b, _ := json.Marshal(res)
	m.Content = string(b)
	r.msgs = append(r.msgs, m)
}
