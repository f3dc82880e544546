package codex

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// toCodex converts an ACP prompt into turn/start input items: images as
// data URLs, links as @-mentions, embedded text as context, embedded
// binary files through files (an image as an image; nil refuses them).
// What codex can't take is refused, never dropped.
func toCodex(prompt []acp.ContentBlock, files *attachments) ([]map[string]any, error) {
	l := agentkit.Lowering[map[string]any]{Agent: "codex", Text: text, Image: image}
	if files != nil {
		l.Blob = files.blob
	}
	return agentkit.Lower(prompt, l)
}

// attachments are a session's embedded binary files, written where codex
// can read them: a temporary directory of the session's own (codex reads
// anywhere; files in the project would show up in its git status), gone
// when the session closes.
type attachments struct {
	mu  sync.Mutex
	dir string
	n   int
}

// blob is an embedded binary resource as codex takes it: an image as an
// image; any other file written into the attachments and named, with its
// type, for codex to open.
func (a *attachments) blob(b *acp.BlobResourceContents) (map[string]any, error) {
	mime := ""
	if b.MimeType != nil {
		mime = *b.MimeType
	}
	if strings.HasPrefix(mime, "image/") {
		return image(&acp.ContentBlockImage{Data: b.Blob, MimeType: mime})
	}
	data, err := base64.StdEncoding.DecodeString(b.Blob)
	if err != nil {
		return nil, fmt.Errorf("the file %s is not base64: %v", b.Uri, err)
	}
	path, err := a.write(b.Uri, data)
	if err != nil {
		return nil, err
	}
	return text(fmt.Sprintf("[The user attached %s (%s, %d bytes); it is saved at %s]", b.Uri, cmp.Or(mime, "no type given"), len(data), path)), nil
}

func (a *attachments) write(uri string, data []byte) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dir == "" {
		dir, err := os.MkdirTemp("", "acpbridge-codex-attachments-")
		if err != nil {
			return "", fmt.Errorf("making a directory for attached files: %w", err)
		}
		a.dir = dir
	}
	a.n++
	name := filepath.Base(strings.TrimPrefix(uri, "file://"))
	if name == "." || name == "/" || name == "" {
		name = "attachment"
	}
	path := filepath.Join(a.dir, strconv.Itoa(a.n)+"-"+name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", fmt.Errorf("saving the attached file %s: %w", uri, err)
	}
	return path, nil
}

// remove deletes the attached files.
func (a *attachments) remove() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.dir != "" {
		os.RemoveAll(a.dir)
		a.dir = ""
	}
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
