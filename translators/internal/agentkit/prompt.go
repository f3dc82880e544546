package agentkit

import (
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Lowering says how an agent takes ACP prompt content. Text is required;
// content the agent can't take is refused with an invalid-params error
// that names the block, never dropped.
//
// Resource links become @-mentions ([@name](uri)) and embedded text
// resources an @-mention followed by the text in a <context> element, the
// way Zed's adapters pass them, both as Text.
type Lowering[T any] struct {
	Agent string                                  // for error messages
	Text  func(string) T                          // a text block
	Image func(*acp.ContentBlockImage) (T, error) // nil: images are refused
	// Blob takes an embedded binary resource (a file); nil refuses them.
	Blob func(*acp.BlobResourceContents) (T, error)
}

// Lower converts a prompt into the agent's blocks.
func Lower[T any](prompt []acp.ContentBlock, l Lowering[T]) ([]T, error) {
	out := make([]T, 0, len(prompt))
	for i, b := range prompt {
		t, err := l.block(b)
		if err != nil {
			return nil, fmt.Errorf("%w: prompt block %d: %v", agent.ErrInvalidParams, i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

func (l Lowering[T]) block(b acp.ContentBlock) (T, error) {
	var zero T
	switch {
	case b.Text != nil:
		return l.Text(b.Text.Text), nil
	case b.Image != nil && l.Image != nil:
		return l.Image(b.Image)
	case b.Image != nil:
		return zero, fmt.Errorf("%s does not take images", l.Agent)
	case b.ResourceLink != nil:
		return l.Text(Mention(b.ResourceLink.Name, b.ResourceLink.Uri)), nil
	case b.Resource != nil:
		r := b.Resource.Resource
		if r.BlobResourceContents != nil && l.Blob != nil {
			return l.Blob(r.BlobResourceContents)
		}
		if r.TextResourceContents == nil {
			return zero, fmt.Errorf("%s takes text resources only, not binary ones (%s)", l.Agent, blobURI(r))
		}
		t := r.TextResourceContents
		return l.Text(Mention(t.Uri, t.Uri) + "\n<context ref=\"" + t.Uri + "\">\n" + t.Text + "\n</context>"), nil
	case b.Audio != nil:
		return zero, fmt.Errorf("%s does not take audio", l.Agent)
	}
	return zero, fmt.Errorf("unknown content type")
}

// Mention is an @-mention of a file or resource: [@name](uri).
func Mention(name, uri string) string {
	return "[@" + strings.TrimPrefix(name, "file://") + "](" + uri + ")"
}

func blobURI(r acp.EmbeddedResourceResource) string {
	if r.BlobResourceContents != nil {
		return r.BlobResourceContents.Uri
	}
	return "no uri"
}
