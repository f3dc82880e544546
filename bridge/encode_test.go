package bridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/persist"

	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// encodeChunk writes what json.Marshal writes (up to key order and HTML
// escaping), and what it writes decodes to the same update.
func TestEncodeChunk_matchesTheSDK(t *testing.T) {
	big := strings.Repeat("iVBORw0KGgo", bigContent/10)
	text := strings.Repeat("line \"one\"\t\\ <b>&\n\x01 é \u2028 \xff ", bigContent/20)
	mime, id := "text/plain", acp.MessageId("m1")
	for name, u := range map[string]acp.SessionUpdate{
		"image": {UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: acp.ImageBlock(big, "image/png"), MessageId: &id}},
		"audio": {UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: acp.AudioBlock(big, "audio/wav")}},
		"text":  {AgentMessageChunk: &acp.SessionUpdateAgentMessageChunk{Content: acp.TextBlock(text)}},
		"text resource": {UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: acp.ResourceBlock(acp.EmbeddedResourceResource{
			TextResourceContents: &acp.TextResourceContents{Text: text, Uri: "file:///a.txt", MimeType: &mime}})}},
		"blob resource": {AgentThoughtChunk: &acp.SessionUpdateAgentThoughtChunk{Content: acp.ResourceBlock(acp.EmbeddedResourceResource{
			BlobResourceContents: &acp.BlobResourceContents{Blob: big, Uri: "file:///a.bin"}})}},
	} {
		t.Run(name, func(t *testing.T) {
			parts, ok := encodeChunk(u)
			if !ok {
				t.Fatal("not encoded by hand")
			}
			got := Joined(persist.Entry{Parts: parts}).Update
			want, err := json.Marshal(u)
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("not JSON: %v", err)
			}
			json.Unmarshal(want, &w)
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("differs from json.Marshal (-want +got):\n%.2000s", diff)
			}
			var back acp.SessionUpdate
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatal(err)
			}
		})
	}
	if _, ok := encodeChunk(acp.UpdateAgentMessageText("short")); ok {
		t.Error("a short chunk was encoded by hand")
	}
}

func BenchmarkEncode_imagePrompt(b *testing.B) {
	u := acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: acp.ImageBlock(strings.Repeat("A", 10<<20), "image/png")}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode([]Entry{{Seq: 1, Update: u}}); err != nil {
			b.Fatal(err)
		}
	}
}

func TestStringLen(t *testing.T) {
	for _, s := range []string{"", "plain", "q\"b\\n\n\r\t\x01", "é\u2028\u2029\xff<&>", strings.Repeat("ab\x00", 100)} {
		if got, want := stringLen(s), len(appendString(nil, s)); got != want {
			t.Errorf("stringLen(%q) = %d, want %d", s, got, want)
		}
	}
}

func TestEncodeChunk_exactSize(t *testing.T) {
	id := acp.MessageId("m1")
	u := acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{MessageId: &id,
		Content: acp.ResourceBlock(acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{Text: strings.Repeat("a\n", bigContent), Uri: "file:///x"}})}}
	parts, ok := encodeChunk(u)
	if !ok || len(parts) != 1 || cap(parts[0]) > len(parts[0])*21/20 { // its size, up to the allocator's rounding
		t.Errorf("encoded into %d parts, the first %d bytes in a buffer of %d", len(parts), len(parts[0]), cap(parts[0]))
	}
	image := acp.SessionUpdate{UserMessageChunk: &acp.SessionUpdateUserMessageChunk{Content: acp.ImageBlock(strings.Repeat("A", bigContent), "image/png")}}
	if parts, _ := encodeChunk(image); len(parts) != 3 || len(parts[1]) != bigContent {
		t.Errorf("an image encoded into %d parts; want its data as a part of its own", len(parts))
	}
}
