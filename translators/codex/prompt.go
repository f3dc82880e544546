package codex

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// toCodex converts an ACP prompt into turn/start input items: images as
// data URLs, links as @-mentions, embedded text as context. What codex
// can't take is refused, never dropped.
func toCodex(prompt []acp.ContentBlock) ([]map[string]any, error) {
	return agentkit.Lower(prompt, agentkit.Lowering[map[string]any]{Agent: "codex", Text: text, Image: image})
}

func text(s string) map[string]any {
	return map[string]any{"type": "text", "text": s, "text_elements": []any{}}
}

func image(img *acp.ContentBlockImage) (map[string]any, error) {
	switch {
	case img.Data != "":
		return map[string]any{"type": "image", "url": "data:" + img.MimeType + ";base64," + img.Data}, nil
	case img.Uri != nil && strings.HasPrefix(*img.Uri, "http"):
		return map[string]any{"type": "image", "url": *img.Uri}, nil
	case img.Uri != nil && strings.HasPrefix(*img.Uri, "file://"):
		return map[string]any{"type": "localImage", "path": strings.TrimPrefix(*img.Uri, "file://")}, nil
	}
	return nil, fmt.Errorf("an image needs data or a uri")
}

// mcpConfig is the thread's config override for the client's MCP servers
// (codex's mcp_servers table), or nil. Codex takes stdio and http ones.
func mcpConfig(servers []acp.McpServer) (map[string]any, error) {
	ms, err := agentkit.MCPServers("codex", servers, agentkit.MCPStdio, agentkit.MCPHTTP)
	if err != nil || len(ms) == 0 {
		return nil, err
	}
	table := map[string]any{}
	for _, m := range ms {
		table[m.Name] = m.Fields("http_headers")
	}
	return map[string]any{"mcp_servers": table}, nil
}
