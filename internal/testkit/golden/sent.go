package golden

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
)

var messageID = regexp.MustCompile(`"messageId":"[^"]*",?`)

// Sent renders what an editor was sent in a session whose id is id (and
// in its child sessions, whose ids begin with it), one JSON line each, the
// session's id as S, message ids left out, then its permission asks; the
// updates that change with an agent's catalog (commands, config, modes,
// usage, titles) are left out. The golden tests of subagents through the
// bridge compare it.
func Sent(t *testing.T, id acp.SessionId, ns []acp.SessionNotification, asks []acp.RequestPermissionRequest) string {
	t.Helper()
	var b strings.Builder
	line := func(v any) {
		j, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(messageID.ReplaceAllString(string(j), ""), string(id), "S")
		b.WriteString(s + "\n")
	}
	for _, n := range ns {
		u := n.Update
		if u.AvailableCommandsUpdate != nil || u.ConfigOptionUpdate != nil || u.UsageUpdate != nil || u.CurrentModeUpdate != nil || u.SessionInfoUpdate != nil {
			continue
		}
		line(n)
	}
	for _, a := range asks {
		line(map[string]any{"ask": a.SessionId, "toolCallId": a.ToolCall.ToolCallId})
	}
	return b.String()
}
