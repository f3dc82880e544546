package claude

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/coder/acp-go-sdk"
)

func TestProbeSetup(t *testing.T) {
	e, srv := realEditor(t, t.TempDir())
	lib := t.TempDir()
	s, err := e.CS.NewSession(e.Ctx(), acp.NewSessionRequest{Cwd: t.TempDir(), AdditionalDirectories: []string{lib}, McpServers: []acp.McpServer{},
		SystemPrompt: &acp.SystemPrompt{Mode: acp.SystemPromptModeAppend, Content: []acp.ContentBlock{acp.TextBlock("MARK-SYSTEM-42")}}})
	if err != nil {
		t.Fatal(err)
	}
	e.MustPrompt(s.SessionId, "Say hello")
	b, _ := json.MarshalIndent(srv.Requests(), "", " ")
	os.WriteFile("/tmp/claude_reqs.json", b, 0o644)
	t.Log(lib)
}
