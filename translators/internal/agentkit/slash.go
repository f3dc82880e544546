package agentkit

import (
	"strings"

	"github.com/coder/acp-go-sdk"
)

// SlashCommand reads a prompt that is one text block "/name arguments", as
// an editor sends a slash command; ok is false for any other prompt.
func SlashCommand(prompt []acp.ContentBlock) (name, args string, ok bool) {
	if len(prompt) != 1 || prompt[0].Text == nil {
		return "", "", false
	}
	text := strings.TrimSpace(prompt[0].Text.Text)
	if !strings.HasPrefix(text, "/") || len(text) == 1 {
		return "", "", false
	}
	name, args, _ = strings.Cut(text[1:], " ")
	return name, strings.TrimSpace(args), true
}
