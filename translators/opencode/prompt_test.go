package opencode

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

func TestToOpenCode(t *testing.T) {
	mime := "application/pdf"
	parts, err := toOpenCode([]acp.ContentBlock{
		acp.TextBlock("look"), acp.ImageBlock("aGk=", "image/png"),
		{Resource: &acp.ContentBlockResource{Resource: acp.EmbeddedResourceResource{BlobResourceContents: &acp.BlobResourceContents{Uri: "file:///w/spec.pdf", Blob: "JVBERg==", MimeType: &mime}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(parts)
	want := `[{"text":"look","type":"text"},{"filename":"image","mime":"image/png","type":"file","url":"data:image/png;base64,aGk="},` +
		`{"filename":"spec.pdf","mime":"application/pdf","type":"file","url":"data:application/pdf;base64,JVBERg=="}]`
	if string(got) != want {
		t.Errorf("parts %s\nwant  %s", got, want)
	}
	if _, err := toOpenCode([]acp.ContentBlock{acp.AudioBlock("AA==", "audio/wav")}); !errors.Is(err, agent.ErrInvalidParams) {
		t.Errorf("audio: %v, want ErrInvalidParams", err)
	}
}
