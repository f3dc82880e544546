package aisdk

import (
	"encoding/json"
	"testing"
)

// FuzzChatMessages: any chat body the AI SDK's client could send decodes
// into a prompt and a history, or an error, without a panic.
func FuzzChatMessages(f *testing.F) {
	for _, s := range []string{
		`{"id":"c1","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"hi"}]}],"trigger":"submit-message"}`,
		`{"id":"c1","messages":[{"role":"user","parts":[{"type":"file","url":"data:image/png;base64,iVBORw0KGgo=","mediaType":"image/png"}]},{"role":"assistant","parts":[{"type":"tool-x","toolCallId":"t","state":"approval-responded","approval":{"id":"a","approved":true}}]}]}`,
		`{"messages":[{"role":"user","parts":[{"type":"file","url":"data:;base64,%%%"}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var chat chatRequest
		if json.Unmarshal(raw, &chat) == nil {
			for _, m := range chat.Messages {
				promptOf(m)
			}
			historyOf(chat.Messages)
		}
	})
}
