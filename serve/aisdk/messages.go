package aisdk

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// chatRequest is the body DefaultChatTransport POSTs to /api/chat:
// {id, messages, trigger, messageId} and the app's body fields, of which
// the bridge reads agent, model, mode and cwd (for a new chat) and
// optionIds (approval id → permission option id, to choose an option other
// than the first that allows or rejects).
type chatRequest struct {
	ID        string            `json:"id"`
	Messages  []uiMessageIn     `json:"messages"`
	Trigger   string            `json:"trigger"`
	MessageID string            `json:"messageId"`
	Agent     string            `json:"agent"`
	Model     string            `json:"model"`
	Mode      string            `json:"mode"`
	Cwd       string            `json:"cwd"`
	OptionIDs map[string]string `json:"optionIds"`
}

// uiMessageIn is a UIMessage as a web client sends it.
type uiMessageIn struct {
	ID    string     `json:"id"`
	Role  string     `json:"role"`
	Parts []uiPartIn `json:"parts"`
}

// uiPartIn is a UIMessage part as a web client sends it: the fields of the
// parts the bridge reads (text, file, reasoning, and tool parts with their
// approval).
type uiPartIn struct {
	Type       string          `json:"type"`
	Text       string          `json:"text"`
	MediaType  string          `json:"mediaType"`
	URL        string          `json:"url"`
	Filename   string          `json:"filename"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	State      string          `json:"state"`
	Title      string          `json:"title"`
	Input      json.RawMessage `json:"input"`
	ErrorText  string          `json:"errorText"`
	Approval   *uiApproval     `json:"approval"`
}

// uiApproval is a tool part's approval.
type uiApproval struct {
	ID       string `json:"id"`
	Approved *bool  `json:"approved"`
	Reason   string `json:"reason"`
}

// isTool tells a tool part (static or dynamic).
func (p uiPartIn) isTool() bool {
	return p.Type == "dynamic-tool" || strings.HasPrefix(p.Type, "tool-")
}

// uiMessage is a UIMessage the bridge sends (GET /v1/sessions/{id}/messages).
type uiMessage struct {
	ID    string           `json:"id"`
	Role  string           `json:"role"`
	Parts []map[string]any `json:"parts"`
}

// uiFolder builds a message's parts from the chunks the bridge streams, as
// the AI SDK's processUIMessageStream does with them.
type uiFolder struct {
	parts []map[string]any
	open  map[string]map[string]any // text and reasoning parts by chunk id
	tools map[string]map[string]any // tool parts by tool call id
}

func newUIFolder() *uiFolder {
	return &uiFolder{open: map[string]map[string]any{}, tools: map[string]map[string]any{}}
}

// add folds one chunk in.
func (f *uiFolder) add(c uiChunk) {
	switch c.Type {
	case "text-start", "reasoning-start":
		p := map[string]any{"type": strings.TrimSuffix(c.Type, "-start"), "text": "", "state": "streaming"}
		f.open[c.ID] = p
		f.parts = append(f.parts, p)
	case "text-delta", "reasoning-delta":
		if p := f.open[c.ID]; p != nil {
			p["text"] = p["text"].(string) + c.Delta
		}
	case "text-end", "reasoning-end":
		if p := f.open[c.ID]; p != nil {
			p["state"] = "done"
			delete(f.open, c.ID)
		}
	case "file":
		f.parts = append(f.parts, map[string]any{"type": "file", "mediaType": c.MediaType, "url": c.URL})
	case "source-url":
		f.parts = append(f.parts, map[string]any{"type": "source-url", "sourceId": c.SourceID, "url": c.URL, "title": c.Title})
	default:
		if strings.HasPrefix(c.Type, "data-") {
			f.data(c)
			return
		}
		f.tool(c)
	}
}

// data adds a data part, or replaces the one with the same id.
func (f *uiFolder) data(c uiChunk) {
	if c.ID == "" {
		f.parts = append(f.parts, map[string]any{"type": c.Type, "data": c.Data})
		return
	}
	for _, p := range f.parts {
		if p["type"] == c.Type && p["id"] == c.ID {
			p["data"] = c.Data
			return
		}
	}
	f.parts = append(f.parts, map[string]any{"type": c.Type, "id": c.ID, "data": c.Data})
}

// tool folds a tool chunk into its part.
func (f *uiFolder) tool(c uiChunk) {
	p := f.tools[c.ToolCallID]
	if c.Type == "tool-input-start" {
		p = map[string]any{"type": "dynamic-tool", "toolName": c.ToolName, "toolCallId": c.ToolCallID,
			"state": "input-streaming", "providerExecuted": true, "title": c.Title, "toolMetadata": c.ToolMetadata}
		f.tools[c.ToolCallID] = p
		f.parts = append(f.parts, p)
		return
	}
	if p == nil {
		return
	}
	switch c.Type {
	case "tool-input-available":
		p["state"], p["input"], p["title"], p["toolMetadata"] = "input-available", c.Input, c.Title, c.ToolMetadata
	case "tool-approval-request":
		p["state"], p["approval"] = "approval-requested", map[string]any{"id": c.ApprovalID}
	case "tool-output-available":
		p["state"], p["output"] = "output-available", c.Output
	case "tool-output-error":
		p["state"], p["errorText"] = "output-error", c.ErrorText
	case "tool-output-denied":
		p["state"] = "output-denied"
		if a, ok := p["approval"].(map[string]any); ok {
			a["approved"] = false
		}
	}
}

// replayMessages turns a session/load replay into UIMessages: each user
// message one message, and what the agent did until the next one an
// assistant message with parts as the chat stream makes them.
func replayMessages(sessionID string, us []web.Update) []uiMessage {
	msgs := []uiMessage{}
	var user *uiMessage
	var tr *uiStream
	var f *uiFolder
	flush := func() {
		if tr == nil {
			return
		}
		for _, c := range tr.closeParts() {
			f.add(c.(uiChunk))
		}
		if len(f.parts) > 0 {
			msgs = append(msgs, uiMessage{ID: "h" + strconv.Itoa(len(msgs)+1), Role: "assistant", Parts: f.parts})
		}
		tr, f = nil, nil
	}
	for _, u := range us {
		if u.UserMessageChunk != nil && u.Child == "" {
			flush()
			if user == nil {
				msgs = append(msgs, uiMessage{ID: "h" + strconv.Itoa(len(msgs)+1), Role: "user", Parts: []map[string]any{}})
				user = &msgs[len(msgs)-1]
			}
			user.Parts = addUserPart(user.Parts, u.UserMessageChunk.Content)
			continue
		}
		if tr == nil {
			tr, f = newUIStream(sessionID, ""), newUIFolder()
		}
		user = nil
		chunks := tr.Update(u.SessionUpdate)
		if u.Child != "" {
			chunks = tr.Child(u.Child, u.SessionUpdate)
		}
		for _, c := range chunks {
			if uc, ok := c.(uiChunk); ok && uc.Type != "message-metadata" {
				f.add(uc)
			}
		}
	}
	flush()
	return msgs
}

// addUserPart adds a user message's content block: text joins the text
// part before it; images and links are file parts.
func addUserPart(parts []map[string]any, c acp.ContentBlock) []map[string]any {
	switch {
	case c.Text != nil:
		if n := len(parts); n > 0 && parts[n-1]["type"] == "text" {
			parts[n-1]["text"] = parts[n-1]["text"].(string) + c.Text.Text
			return parts
		}
		return append(parts, map[string]any{"type": "text", "text": c.Text.Text})
	case c.Image != nil:
		return append(parts, map[string]any{"type": "file", "mediaType": c.Image.MimeType, "url": "data:" + c.Image.MimeType + ";base64," + c.Image.Data})
	case c.ResourceLink != nil:
		mt := web.Deref(c.ResourceLink.MimeType)
		if mt == "" {
			mt = "application/octet-stream"
		}
		return append(parts, map[string]any{"type": "file", "mediaType": mt, "url": c.ResourceLink.Uri, "filename": c.ResourceLink.Name})
	}
	return parts
}

// promptOf is a user message as an ACP prompt: text parts as text, image
// files (data URLs) as images, other files as resource links.
func promptOf(m uiMessageIn) ([]acp.ContentBlock, error) {
	var blocks []acp.ContentBlock
	for _, p := range m.Parts {
		switch p.Type {
		case "text":
			if p.Text != "" {
				blocks = append(blocks, acp.TextBlock(p.Text))
			}
		case "file":
			b, err := fileBlock(p.URL, p.MediaType, p.Filename)
			if err != nil {
				return nil, err
			}
			blocks = append(blocks, b)
		}
	}
	if len(blocks) == 0 {
		return nil, fmt.Errorf("%w: the user message %q has no text or file part", web.ErrBadRequest, m.ID)
	}
	return blocks, nil
}

// fileBlock is a file a web client sends: an image given as a base64 data
// URL is an image block; anything else a link to its URL.
func fileBlock(url, mediaType, name string) (acp.ContentBlock, error) {
	if url == "" {
		return acp.ContentBlock{}, fmt.Errorf("%w: a file part has no url", web.ErrBadRequest)
	}
	if rest, ok := strings.CutPrefix(url, "data:"); ok && strings.HasPrefix(mediaType, "image/") {
		meta, data, ok := strings.Cut(rest, ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return acp.ContentBlock{}, fmt.Errorf("%w: an image's data URL is not base64", web.ErrBadRequest)
		}
		return acp.ImageBlock(data, mediaType), nil
	}
	if name == "" {
		name = url
	}
	b := acp.ResourceLinkBlock(name, url)
	if mediaType != "" {
		b.ResourceLink.MimeType = &mediaType
	}
	return b, nil
}

// historyOf is the conversation in messages (all but the last) as ACP
// updates, for agent.HistoryText: what a new session is told of a chat the
// bridge doesn't know.
func historyOf(messages []uiMessageIn) []acp.SessionUpdate {
	var us []acp.SessionUpdate
	for _, m := range messages {
		for _, p := range m.Parts {
			us = append(us, historyUpdates(m.Role, p)...)
		}
	}
	return us
}

// historyUpdates is one part of a message as updates.
func historyUpdates(role string, p uiPartIn) []acp.SessionUpdate {
	switch {
	case p.Type == "text" && role == "user":
		return []acp.SessionUpdate{acp.UpdateUserMessageText(p.Text)}
	case p.Type == "text":
		return []acp.SessionUpdate{acp.UpdateAgentMessageText(p.Text)}
	case p.isTool():
		var input any
		json.Unmarshal(p.Input, &input)
		title := p.Title
		if title == "" {
			title = strings.TrimPrefix(strings.TrimPrefix(p.Type, "tool-"), "dynamic-") + " " + p.ToolName
		}
		st := acp.ToolCallStatusCompleted
		if p.State == "output-error" || p.State == "output-denied" {
			st = acp.ToolCallStatusFailed
		}
		return []acp.SessionUpdate{{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: acp.ToolCallId(p.ToolCallID),
			Title: strings.TrimSpace(title), Status: st, RawInput: input}}}
	}
	return nil
}

// toldHistory puts a chat's earlier messages (as agent.HistoryText tells
// them) before a new session's first prompt.
func toldHistory(earlier []uiMessageIn, prompt []acp.ContentBlock) []acp.ContentBlock {
	return web.TellHistory(historyOf(earlier), prompt)
}
