package agent

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/coder/acp-go-sdk"
)

// ForkIntro introduces the conversation so far, told to the first turn of
// a fork the agent did not make of its own session.
const ForkIntro = "This conversation continues an earlier one with the user, which it was forked from; " +
	"here is what was said in it (from acpbridge's transcript). Go on from there."

// HistoryBudget is how many bytes of earlier conversation HistoryText
// keeps by default: the most recent, whole lines.
const HistoryBudget = 24 << 10

// HistoryText renders a session's recorded conversation (its updates in
// replay order) as text to put before an agent's next prompt, for an agent
// that doesn't have the conversation: user and agent messages, tool calls
// with their status and a line of their output, and the current plan.
// Thoughts are left out. intro says why it is given. When it is longer
// than budget bytes the oldest lines go, and the text says so. It returns
// "" for an empty conversation.
func HistoryText(us []acp.SessionUpdate, budget int, intro string) string {
	lines := historyLines(us)
	if len(lines) == 0 {
		return ""
	}
	cut, size := 0, 0
	for i := len(lines) - 1; i >= 0; i-- {
		if size+len(lines[i])+1 > budget {
			cut = i + 1
			break
		}
		size += len(lines[i]) + 1
	}
	var b strings.Builder
	b.WriteString("<conversation_so_far>\n" + intro + "\n")
	if cut > 0 {
		fmt.Fprintf(&b, "[%d earlier lines left out]\n", cut)
	}
	for _, l := range lines[cut:] {
		b.WriteString(l + "\n")
	}
	b.WriteString("</conversation_so_far>\n\n")
	return b.String()
}

// historyLines is one line per message (chunks joined), per tool call (its
// last state), and the plan at the end.
func historyLines(us []acp.SessionUpdate) []string {
	var items []*historyItem
	var cur *historyItem // the message being joined
	say := func(role string, c acp.ContentBlock) {
		if cur == nil || cur.role != role {
			cur = &historyItem{role: role}
			items = append(items, cur)
		}
		switch {
		case c.Text != nil:
			cur.text.WriteString(c.Text.Text)
		case c.ResourceLink != nil:
			cur.text.WriteString(" [@" + c.ResourceLink.Name + "](" + c.ResourceLink.Uri + ") ")
		case c.Image != nil:
			cur.text.WriteString(" [image] ")
		}
	}
	tools := map[acp.ToolCallId]*historyItem{}
	var plan *acp.SessionUpdatePlan
	for _, u := range us {
		switch {
		case u.UserMessageChunk != nil:
			say("User", u.UserMessageChunk.Content)
		case u.AgentMessageChunk != nil:
			say("Agent", u.AgentMessageChunk.Content)
		case u.ToolCall != nil:
			c := *u.ToolCall
			it := &historyItem{tool: &c}
			tools[c.ToolCallId], cur = it, nil
			items = append(items, it)
		case u.ToolCallUpdate != nil:
			if it := tools[u.ToolCallUpdate.ToolCallId]; it != nil {
				FoldToolCall(it.tool, *u.ToolCallUpdate)
			}
		case u.Plan != nil:
			plan = u.Plan
		}
	}
	var lines []string
	for _, it := range items {
		if l := it.line(); l != "" {
			lines = append(lines, l)
		}
	}
	if plan != nil && len(plan.Entries) > 0 {
		var entries []string
		for _, e := range plan.Entries {
			entries = append(entries, fmt.Sprintf("[%s] %s", e.Status, e.Content))
		}
		lines = append(lines, "Plan: "+strings.Join(entries, "; "))
	}
	return lines
}

// historyItem is a message or a tool call of the conversation.
type historyItem struct {
	role string
	text strings.Builder

	tool *acp.SessionUpdateToolCall // nil for a message
}

// line is the item in one line: "User: …", or "Tool (kind, status):
// title — output".
func (it *historyItem) line() string {
	if it.tool == nil {
		if t := strings.TrimSpace(it.text.String()); t != "" {
			return it.role + ": " + t
		}
		return ""
	}
	c := it.tool
	line := fmt.Sprintf("Tool (%s, %s): %s", or(string(c.Kind), "other"), or(string(c.Status), "pending"), c.Title)
	if out := firstText(c.Content); out != "" {
		line += " — " + out
	}
	return line
}

// firstText is a tool call's text content, flattened to one line and
// shortened.
func firstText(content []acp.ToolCallContent) string {
	for _, c := range content {
		if c.Content != nil && c.Content.Content.Text != nil {
			t := strings.Join(strings.Fields(strings.Trim(c.Content.Content.Text.Text, "`")), " ")
			return truncate(strings.TrimPrefix(t, "console "), 200)
		}
	}
	return ""
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// truncate shortens s to at most n bytes (on a rune boundary), marking the
// cut with an ellipsis.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
