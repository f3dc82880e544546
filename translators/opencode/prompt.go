package opencode

import (
	"fmt"
	"path"
	"strings"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// toOpenCode converts an ACP prompt into prompt parts: text as text parts,
// images and embedded binary files as file parts with a data (or http)
// URL; links and embedded text become text (agentkit.Lower). What OpenCode
// can't take is refused.
func toOpenCode(prompt []acp.ContentBlock) ([]map[string]any, error) {
	return agentkit.Lower(prompt, agentkit.Lowering[map[string]any]{Agent: "opencode", Text: text, Image: image, Blob: file})
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func image(img *acp.ContentBlockImage) (map[string]any, error) {
	part := map[string]any{"type": "file", "mime": img.MimeType, "filename": "image"}
	switch {
	case img.Data != "":
		part["url"] = "data:" + img.MimeType + ";base64," + img.Data
	case img.Uri != nil && (strings.HasPrefix(*img.Uri, "http") || strings.HasPrefix(*img.Uri, "file://")):
		part["url"] = *img.Uri
	default:
		return nil, fmt.Errorf("an image needs data or a uri")
	}
	return part, nil
}

// file is an embedded binary resource as a file part.
func file(b *acp.BlobResourceContents) (map[string]any, error) {
	mime := "application/octet-stream"
	if b.MimeType != nil && *b.MimeType != "" {
		mime = *b.MimeType
	}
	return map[string]any{"type": "file", "mime": mime, "filename": path.Base(b.Uri), "url": "data:" + mime + ";base64," + b.Blob}, nil
}
