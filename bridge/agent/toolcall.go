package agent

import "github.com/coder/acp-go-sdk"

// FoldToolCall folds a tool_call_update into the tool call it updates:
// each field the update sets replaces the call's, and content and
// locations replace the whole collection, as the protocol says. Every
// view of a conversation (the bridge's transcript, the history told to an
// agent, the web edges, the tests' conversations) folds updates with it.
func FoldToolCall(c *acp.SessionUpdateToolCall, u acp.SessionToolCallUpdate) {
	if u.Title != nil {
		c.Title = *u.Title
	}
	if u.Name != nil {
		c.Name = u.Name
	}
	if u.Kind != nil {
		c.Kind = *u.Kind
	}
	if u.Status != nil {
		c.Status = *u.Status
	}
	if u.Content != nil {
		c.Content = u.Content
	}
	if u.Locations != nil {
		c.Locations = u.Locations
	}
	if u.RawInput != nil {
		c.RawInput = u.RawInput
	}
	if u.RawOutput != nil {
		c.RawOutput = u.RawOutput
	}
}
