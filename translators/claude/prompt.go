package claude

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/coder/acp-go-sdk"
)

// userMessage is one stream-json line on the CLI's stdin.
type userMessage struct {
	Type            string      `json:"type"`
	Message         userContent `json:"message"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	SessionID       string      `json:"session_id"`
}

type userContent struct {
	Role    string           `json:"role"`
	Content []map[string]any `json:"content"`
}

// toClaude converts an ACP prompt into Claude content blocks, as the Zed
// adapter does: links become @-mentions, embedded text resources become
// context, images pass through. What Claude can't take is refused, never
// dropped.
func toClaude(prompt []acp.ContentBlock) (userMessage, error) {
	var blocks []map[string]any
	for i, b := range prompt {
		block, err := convert(b)
		if err != nil {
			return userMessage{}, fmt.Errorf("%w: prompt block %d: %v", bridge.ErrInvalidParams, i, err)
		}
		blocks = append(blocks, block)
	}
	return userMessage{Type: "user", Message: userContent{Role: "user", Content: blocks}}, nil
}

func convert(b acp.ContentBlock) (map[string]any, error) {
	switch {
	case b.Text != nil:
		return text(mcpCommand(b.Text.Text)), nil
	case b.Image != nil:
		return image(b.Image)
	case b.ResourceLink != nil:
		return text(mention(b.ResourceLink.Name, b.ResourceLink.Uri)), nil
	case b.Resource != nil:
		r := b.Resource.Resource
		if r.TextResourceContents == nil {
			return nil, fmt.Errorf("claude takes text resources only, not binary ones (%s)", blobURI(r))
		}
		t := r.TextResourceContents
		return text(mention(t.Uri, t.Uri) + "\n<context ref=\"" + t.Uri + "\">\n" + t.Text + "\n</context>"), nil
	case b.Audio != nil:
		return nil, fmt.Errorf("claude does not take audio")
	}
	return nil, fmt.Errorf("unknown content type")
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func image(img *acp.ContentBlockImage) (map[string]any, error) {
	var source map[string]any
	switch {
	case img.Data != "":
		source = map[string]any{"type": "base64", "media_type": img.MimeType, "data": img.Data}
	case img.Uri != nil && strings.HasPrefix(*img.Uri, "http"):
		source = map[string]any{"type": "url", "url": *img.Uri}
	default:
		return nil, fmt.Errorf("an image needs data or an http(s) uri")
	}
	return map[string]any{"type": "image", "source": source}, nil
}

func mention(name, uri string) string {
	name = strings.TrimPrefix(name, "file://")
	return "[@" + name + "](" + uri + ")"
}

// mcpCommand rewrites the ACP spelling of an MCP prompt command,
// /mcp:server:cmd args, to Claude's /server:cmd (MCP) args.
func mcpCommand(s string) string {
	rest, ok := strings.CutPrefix(s, "/mcp:")
	if !ok {
		return s
	}
	cmd, args, _ := strings.Cut(rest, " ")
	return strings.TrimSpace("/" + cmd + " (MCP) " + args)
}

func blobURI(r acp.EmbeddedResourceResource) string {
	if r.BlobResourceContents != nil {
		return r.BlobResourceContents.Uri
	}
	return "no uri"
}
