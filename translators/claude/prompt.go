package claude

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
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
// context, images pass through, and the ACP spelling of an MCP prompt
// command becomes Claude's. What Claude can't take is refused, never
// dropped.
func toClaude(prompt []acp.ContentBlock) (userMessage, error) {
	blocks, err := agentkit.Lower(prompt, agentkit.Lowering[map[string]any]{
		Agent: "claude",
		Text:  func(s string) map[string]any { return text(mcpCommand(s)) },
		Image: image,
	})
	if err != nil {
		return userMessage{}, err
	}
	return userMessage{Type: "user", Message: userContent{Role: "user", Content: blocks}}, nil
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
