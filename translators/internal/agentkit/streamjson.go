package agentkit

import (
	"encoding/json"
	"strings"
)

// Line is the envelope of every stream-json line, which Claude Code and
// Amp share: its type and subtype, the agent's session (Amp's thread), the
// tool call whose subagent wrote it (nil for the agent's own lines), and
// the message of an assistant or user line. Each translator embeds it in
// the fields of its own lines.
type Line struct {
	Type            string          `json:"type"`
	Subtype         string          `json:"subtype"`
	SessionID       string          `json:"session_id"`
	ParentToolUseID *string         `json:"parent_tool_use_id"`
	Message         json.RawMessage `json:"message"`
}

// Block is one content block of a message in the stream-json format that
// Claude Code prints and Amp copies (the Messages API's blocks): text,
// thinking, tool_use, or tool_result.
type Block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     map[string]any  `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// Blocks decodes a message's content; ok is false when it is not a list
// of blocks (a plain string: a prompt).
func Blocks(content json.RawMessage) (blocks []Block, ok bool) {
	return blocks, json.Unmarshal(content, &blocks) == nil
}

// ResultText flattens a tool_result's content: a string, or the text of
// its text blocks.
func ResultText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	blocks, _ := Blocks(content)
	var parts []string
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		}
	}
	return strings.Join(parts, "\n")
}
