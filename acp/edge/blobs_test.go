package edge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

func bigPrompt() []acp.ContentBlock {
	mime := "text/plain"
	return []acp.ContentBlock{
		acp.TextBlock("look at these"),
		acp.ImageBlock(strings.Repeat("iVBORw0KGgo", blobMin/8), "image/png"),
		acp.ResourceBlock(acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{
			Text: strings.Repeat("line \"quoted\" \\ é\n", blobMin/10), Uri: "file:///notes.txt", MimeType: &mime}}),
		acp.TextBlock(strings.Repeat("a long pasted text\t", blobMin/10)),
	}
}

// The SDK gets placeholders instead of a prompt's large strings, and
// restore puts back exactly what the client sent, escaped or not.
func TestBlobs_extractAndRestore(t *testing.T) {
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "session/prompt",
		"params": acp.PromptRequest{SessionId: "s", Prompt: bigPrompt()}})
	if err != nil {
		t.Fatal(err)
	}
	b := newBlobs()
	small := b.extract(json.RawMessage("7"), line)
	if len(small) > 2048 {
		t.Fatalf("the line the SDK gets is %d bytes", len(small))
	}
	var msg struct{ Params acp.PromptRequest }
	if err := json.Unmarshal(small, &msg); err != nil {
		t.Fatalf("the line with placeholders is not a request: %v\n%s", err, small)
	}
	b.restore(msg.Params.Prompt)
	if diff := cmp.Diff(bigPrompt(), msg.Params.Prompt); diff != "" {
		t.Errorf("restored prompt differs (-sent +restored):\n%.1000s", diff)
	}
	if len(b.held) != 0 {
		t.Errorf("%d values still held after the prompt took them", len(b.held))
	}
	b.forget("7") // its response went out
	b.extract(json.RawMessage(`"x"`), line)
	b.forget(idKey(json.RawMessage(`"x"`))) // refused: never restored
	if len(b.held) != 0 || len(b.byReq) != 0 {
		t.Error("forget left values held")
	}
}

// A prompt with large content reaches the agent whole, and its load after
// a restart replays it whole.
func TestBlobs_largePromptIsRecordedWhole(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	sent := bigPrompt()[:3] // the mock echoes a text block, word by word: not a large one
	if _, err := h.CS.Prompt(h.Ctx(), acp.PromptRequest{SessionId: s.SessionId, Prompt: sent}); err != nil {
		t.Fatal(err)
	}
	h.Stop()
	h2 := start(t, dir)
	h2.Initialize(acp.ClientCapabilities{})
	h2.load(s.SessionId)
	var got []acp.ContentBlock
	for _, u := range h2.Client.Take() {
		if u.UserMessageChunk != nil {
			got = append(got, u.UserMessageChunk.Content)
		}
	}
	if diff := cmp.Diff(sent, got); diff != "" {
		t.Errorf("replayed prompt differs (-sent +replayed):\n%.1000s", diff)
	}
}
