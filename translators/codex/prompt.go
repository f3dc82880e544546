package codex

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/coder/acp-go-sdk"
)

// toCodex converts an ACP prompt into turn/start input items: images as
// data URLs, links as @-mentions, embedded text as context. What codex
// can't take is refused, never dropped.
func toCodex(prompt []acp.ContentBlock) ([]map[string]any, error) {
	var items []map[string]any
	for i, b := range prompt {
		it, err := inputItem(b)
		if err != nil {
			return nil, fmt.Errorf("%w: prompt block %d: %v", bridge.ErrInvalidParams, i, err)
		}
		items = append(items, it)
	}
	return items, nil
}

func inputItem(b acp.ContentBlock) (map[string]any, error) {
	switch {
	case b.Text != nil:
		return text(b.Text.Text), nil
	case b.Image != nil:
		return image(b.Image)
	case b.ResourceLink != nil:
		return text("[@" + b.ResourceLink.Name + "](" + b.ResourceLink.Uri + ")"), nil
	case b.Resource != nil:
		t := b.Resource.Resource.TextResourceContents
		if t == nil {
			return nil, fmt.Errorf("codex takes text resources only, not binary ones")
		}
		return text("[@" + strings.TrimPrefix(t.Uri, "file://") + "](" + t.Uri + ")\n<context ref=\"" + t.Uri + "\">\n" + t.Text + "\n</context>"), nil
	case b.Audio != nil:
		return nil, fmt.Errorf("acpbridge does not pass audio to codex")
	}
	return nil, fmt.Errorf("unknown content type")
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
// (codex's mcp_servers table), or nil.
func mcpConfig(servers []acp.McpServer) map[string]any {
	if len(servers) == 0 {
		return nil
	}
	table := map[string]any{}
	for _, s := range servers {
		switch {
		case s.Stdio != nil:
			env := map[string]string{}
			for _, e := range s.Stdio.Env {
				env[e.Name] = e.Value
			}
			table[s.Stdio.Name] = map[string]any{"command": s.Stdio.Command, "args": s.Stdio.Args, "env": env}
		case s.Http != nil:
			headers := map[string]string{}
			for _, h := range s.Http.Headers {
				headers[h.Name] = h.Value
			}
			table[s.Http.Name] = map[string]any{"url": s.Http.Url, "http_headers": headers}
		}
	}
	return map[string]any{"mcp_servers": table}
}
