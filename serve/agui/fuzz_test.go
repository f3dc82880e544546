package agui

import (
	"encoding/json"
	"testing"
)

// FuzzAGUIMessages: any run input an AG-UI client could send decodes into
// a prompt and a history, or an error, without a panic.
func FuzzAGUIMessages(f *testing.F) {
	for _, s := range []string{
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":"hi"},{"id":"2","role":"user","content":[{"type":"text","text":"x"},{"type":"binary","mimeType":"image/png","data":"AAAA"}]}]}`,
		`{"threadId":"t","runId":"r","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"data","value":"AAAA","mimeType":"image/png"}}]},{"id":"2","role":"assistant","content":"ok","toolCalls":[{"id":"c","type":"function","function":{"name":"read","arguments":"{"}}]}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var run struct {
			Messages []messageIn `json:"messages"`
		}
		if json.Unmarshal(raw, &run) == nil {
			for _, m := range run.Messages {
				promptOf(m)
			}
			toldHistory(run.Messages, nil)
		}
	})
}
