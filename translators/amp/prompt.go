package amp

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// maxImages is how many images amp takes in one message.
const maxImages = 4

// userLine is the prompt as one --stream-json-input line. Amp checks that
// content is an array, that it holds at most four images, and that each
// image is of the type it says; the bridge checks the same first, so the
// client hears what is wrong instead of amp failing the turn.
func userLine(prompt []acp.ContentBlock) ([]byte, error) {
	blocks, err := agentkit.Lower(prompt, agentkit.Lowering[map[string]any]{
		Agent: "amp",
		Text:  func(s string) map[string]any { return map[string]any{"type": "text", "text": s} },
		Image: image,
	})
	if err != nil {
		return nil, err
	}
	images := 0
	for _, b := range blocks {
		if b["type"] == "image" {
			images++
		}
	}
	if images > maxImages {
		return nil, fmt.Errorf("%w: amp takes at most %d images in one prompt; this one has %d", agent.ErrInvalidParams, maxImages, images)
	}
	return json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": blocks}})
}

// image passes an image's bytes; amp takes no image URLs.
func image(img *acp.ContentBlockImage) (map[string]any, error) {
	if img.Data == "" {
		return nil, fmt.Errorf("amp takes images as data, not as a URI")
	}
	head, err := base64.StdEncoding.DecodeString(img.Data[:min(len(img.Data), 64)&^3])
	if err != nil {
		return nil, fmt.Errorf("the image's data is not base64: %v", err)
	}
	if got := http.DetectContentType(head); got != img.MimeType {
		return nil, fmt.Errorf("the image says it is %s but its bytes are %s", img.MimeType, got)
	}
	return map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": img.MimeType, "data": img.Data}}, nil
}
