package aisdk

import (
	"errors"
	"fmt"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// A user UIMessage as a prompt: text, images from data URLs, links.
func TestPromptOf(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts []uiPartIn
		want  []acp.ContentBlock
		bad   bool
	}{
		{"text", []uiPartIn{{Type: "text", Text: "hi"}, {Type: "reasoning", Text: "x"}, {Type: "text", Text: ""}},
			[]acp.ContentBlock{acp.TextBlock("hi")}, false},
		{"an image", []uiPartIn{{Type: "file", MediaType: "image/png", URL: "data:image/png;base64,AAAA"}, {Type: "text", Text: "see"}},
			[]acp.ContentBlock{acp.ImageBlock("AAAA", "image/png"), acp.TextBlock("see")}, false},
		{"a link", []uiPartIn{{Type: "file", MediaType: "application/pdf", URL: "https://x/a.pdf", Filename: "a.pdf"}},
			[]acp.ContentBlock{{ResourceLink: &acp.ContentBlockResourceLink{Type: "resource_link", Name: "a.pdf", Uri: "https://x/a.pdf", MimeType: ptrTo("application/pdf")}}}, false},
		{"nothing to send", []uiPartIn{{Type: "step-start"}}, nil, true},
		{"an image not in base64", []uiPartIn{{Type: "file", MediaType: "image/png", URL: "data:image/png,xx"}}, nil, true},
		{"a file without a url", []uiPartIn{{Type: "file", MediaType: "text/plain"}}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := promptOf(uiMessageIn{ID: "u1", Role: "user", Parts: tc.parts})
			if tc.bad {
				if !errors.Is(err, web.ErrBadRequest) {
					t.Fatalf("err = %v, want a bad request", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// A session/load replay as UIMessages: a user message per prompt (text
// joined), the agent's work until the next one an assistant message; a
// subagent's work (its prompt too) is its data-subagent part's.
func TestReplayMessages(t *testing.T) {
	read := acp.ToolCallStatusCompleted
	sub := agent.SubagentUpdate("s1.c1", "Look", "", agent.Running())
	sub.SubagentUpdate.Meta = agent.SubagentOf("t2")
	us := []web.Update{
		{SessionUpdate: acp.UpdateUserMessageText("Read ")}, {SessionUpdate: acp.UpdateUserMessageText("it")},
		{SessionUpdate: acp.UpdateAgentThoughtText("hmm")},
		{SessionUpdate: acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "t1", Title: "Read a", Kind: acp.ToolKindRead, RawInput: map[string]any{"p": "a"}}}},
		{SessionUpdate: acp.SessionUpdate{ToolCallUpdate: &acp.SessionToolCallUpdate{ToolCallId: "t1", Status: &read}}},
		{SessionUpdate: acp.UpdateAgentMessageText("done")},
		{SessionUpdate: acp.SessionUpdate{ToolCall: &acp.SessionUpdateToolCall{ToolCallId: "t2", Title: "Delegate", Kind: acp.ToolKindThink}}},
		{SessionUpdate: sub},
		{Child: "s1.c1", SessionUpdate: acp.UpdateUserMessageText("look")},
		{Child: "s1.c1", SessionUpdate: acp.UpdateAgentMessageText("seen")},
		{SessionUpdate: acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{Used: 1, Size: 2}}},
		{SessionUpdate: acp.UpdateUserMessageText("next")},
	}
	got := replayMessages("s1", us)
	var summary []string
	for _, m := range got {
		s := m.ID + " " + m.Role + ":"
		for _, p := range m.Parts {
			s += fmt.Sprintf(" %v", p["type"])
			if txt, ok := p["text"]; ok {
				s += fmt.Sprintf("(%v)", txt)
			}
			if st, ok := p["state"]; ok {
				s += fmt.Sprintf("[%v]", st)
			}
		}
		summary = append(summary, s)
	}
	want := []string{
		"h1 user: text(Read it)",
		"h2 assistant: reasoning(hmm)[done] dynamic-tool[output-available] text(done)[done] dynamic-tool[input-streaming] data-subagent",
		"h3 user: text(next)",
	}
	if diff := cmp.Diff(want, summary); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	parts := got[1].Parts
	d, _ := parts[len(parts)-1]["data"].(web.SubagentData)
	wantSub := web.SubagentData{ID: "s1.c1", ToolCallID: "t2", Title: "Look", State: "running",
		Parts: []web.SubagentPart{{Type: "prompt", Text: "look"}, {Type: "text", Text: "seen"}}}
	if diff := cmp.Diff(wantSub, d); diff != "" {
		t.Errorf("the subagent (-want +got):\n%s", diff)
	}
}
