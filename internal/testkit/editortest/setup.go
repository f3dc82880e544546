package editortest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
)

// Setup is a CheckSetup case: an editor on a real agent, and what the
// agent has sent its fake model.
type Setup struct {
	Editor *Editor
	Cwd    string // where the session works; "" for a new directory
	Mode   acp.SystemPromptMode
	// Sent returns what the agent sent its model so far, a string per
	// request: its system-level instructions (system blocks, the
	// instructions field, developer or system messages), and all of it.
	Sent func() (system, whole []string)
	// DirsShown says the agent tells its model its additional
	// directories (Claude Code lists them in its environment).
	DirsShown bool
}

// CheckSetup makes a session with an additional directory and a system
// prompt in c.Mode, has it answer a prompt, and checks that the model was
// told the system prompt as system-level instructions (and the directory,
// where the agent tells it), and that session/list shows the directory.
func CheckSetup(t *testing.T, c Setup) {
	t.Helper()
	e, lib, cwd := c.Editor, t.TempDir(), c.Cwd
	if cwd == "" {
		cwd = t.TempDir()
	}
	mark := "Acpbridge system prompt, " + string(c.Mode) + " mode: answer like a pirate."
	s, err := e.CS.NewSession(e.Ctx(), acp.NewSessionRequest{Cwd: cwd, AdditionalDirectories: []string{lib}, McpServers: []acp.McpServer{},
		SystemPrompt: &acp.SystemPrompt{Mode: c.Mode, Content: []acp.ContentBlock{acp.TextBlock(mark)}}})
	if err != nil {
		t.Fatalf("session/new with a directory and a system prompt (%s): %v", c.Mode, err)
	}
	e.MustPrompt(s.SessionId, "Say hello")
	system, whole := c.Sent()
	if !anyContains(system, mark) {
		t.Errorf("no request's system-level instructions hold the system prompt %q:\n%s", mark, strings.Join(system, "\n---\n"))
	}
	if c.DirsShown && !anyContains(whole, lib) {
		t.Errorf("no request names the additional directory %s", lib)
	}
	list, err := e.CS.ListSessions(e.Ctx(), acp.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range list.Sessions {
		if si.SessionId == s.SessionId && (len(si.AdditionalDirectories) != 1 || si.AdditionalDirectories[0] != lib) {
			t.Errorf("session/list shows directories %v, want [%s]", si.AdditionalDirectories, lib)
		}
	}
}

// SentBy is a Setup.Sent for an agent whose model requests (requests
// returns them so far) have the decoded body body(r): a request's
// system-level instructions are what system picks of its body.
func SentBy[R any](requests func() []R, body func(R) map[string]any, system func(body map[string]any) any) func() (system, whole []string) {
	return func() (sys, whole []string) {
		for _, r := range requests() {
			b := body(r)
			sj, _ := json.Marshal(system(b))
			wj, _ := json.Marshal(b)
			sys, whole = append(sys, string(sj)), append(whole, string(wj))
		}
		return sys, whole
	}
}

// WithRole returns the messages of list (a decoded JSON array) whose role
// is one of roles.
func WithRole(list any, roles ...string) []any {
	items, _ := list.([]any)
	var out []any
	for _, item := range items {
		m, _ := item.(map[string]any)
		if role, _ := m["role"].(string); slices.Contains(roles, role) {
			out = append(out, m)
		}
	}
	return out
}

func anyContains(ss []string, sub string) bool {
	for _, s := range ss {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}
