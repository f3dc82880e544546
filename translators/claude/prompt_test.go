package claude

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

func TestToClaude(t *testing.T) {
	uri := "https://example.com/a.png"
	msg, err := toClaude([]acp.ContentBlock{
		acp.TextBlock("/mcp:docs:search go channels"),
		acp.ImageBlock("aGk=", "image/png"),
		{Image: &acp.ContentBlockImage{MimeType: "image/png", Uri: &uri}},
		acp.ResourceLinkBlock("main.go", "file:///w/main.go"),
		{Resource: &acp.ContentBlockResource{Resource: acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{Uri: "file:///w/a.txt", Text: "alpha"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(msg.Message.Content)
	want := `[{"text":"/docs:search (MCP) go channels","type":"text"},` +
		`{"source":{"data":"aGk=","media_type":"image/png","type":"base64"},"type":"image"},` +
		`{"source":{"type":"url","url":"https://example.com/a.png"},"type":"image"},` +
		`{"text":"[@main.go](file:///w/main.go)","type":"text"},` +
		`{"text":"[@/w/a.txt](file:///w/a.txt)\n\u003ccontext ref=\"file:///w/a.txt\"\u003e\nalpha\n\u003c/context\u003e","type":"text"}]`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestToClaude_refusesWhatItCannotTake(t *testing.T) {
	for name, b := range map[string]acp.ContentBlock{
		"audio": {Audio: &acp.ContentBlockAudio{Data: "aGk=", MimeType: "audio/wav"}},
		"blob":  {Resource: &acp.ContentBlockResource{Resource: acp.EmbeddedResourceResource{BlobResourceContents: &acp.BlobResourceContents{Uri: "file:///x.bin", Blob: "aGk="}}}},
		"empty": {},
	} {
		if _, err := toClaude([]acp.ContentBlock{b}); !errors.Is(err, agent.ErrInvalidParams) {
			t.Errorf("%s: %v, want ErrInvalidParams", name, err)
		}
	}
}
