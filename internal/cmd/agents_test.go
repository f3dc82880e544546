package cmd

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
)

// writeAgents writes an agents file naming "inner": this test binary as
// acpbridge running the mock, an ACP agent of its own.
func writeAgents(t *testing.T) string {
	file := filepath.Join(t.TempDir(), "agents.json")
	agents := map[string]any{"inner": map[string]any{"type": "custom", "command": os.Args[0],
		"args": []string{"--agent", "mock", "--state-dir", t.TempDir()},
		"env":  map[string]string{"ACPBRIDGE_TEST_AS_BRIDGE": "1"}}}
	data, _ := json.Marshal(agents)
	os.WriteFile(file, data, 0o600)
	return file
}

// An ACP agent named in the agents file works like a built-in one: as
// --agent, as the agent option's value, in session/list.
func TestRun_namedACPAgent(t *testing.T) {
	p := startProc(t, "--agents", writeAgents(t), "--agent", "inner", "--state-dir", t.TempDir())
	init, err := p.cs.Initialize(ctx(t), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	if !init.AgentCapabilities.LoadSession || init.AgentCapabilities.SessionCapabilities.List == nil {
		t.Errorf("capabilities %+v", init.AgentCapabilities)
	}
	s1, err := p.cs.NewSession(ctx(t), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.cs.Prompt(ctx(t), acp.PromptRequest{SessionId: s1.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hello through two bridges")}}); err != nil {
		t.Fatal(err)
	}
	if got := text(p.client.take()); !strings.Contains(got, "hello through two bridges") {
		t.Errorf("the inner agent's answer did not come through: %q", got)
	}
	s2, err := p.cs.NewSession(ctx(t), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.cs.SetSessionConfigOption(ctx(t), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: s2.SessionId, ConfigId: "agent", Value: "mock"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.cs.Prompt(ctx(t), acp.PromptRequest{SessionId: s2.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("hello mock")}}); err != nil {
		t.Fatal(err)
	}
	list, err := p.cs.ListSessions(ctx(t), acp.ListSessionsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	agents := map[acp.SessionId]any{}
	for _, s := range list.Sessions {
		agents[s.SessionId] = s.Meta["acpbridge"].(map[string]any)["agent"]
	}
	if agents[s1.SessionId] != "inner" || agents[s2.SessionId] != "mock" {
		t.Errorf("session/list agents %v", agents)
	}
}

func text(us []acp.SessionUpdate) string {
	var b strings.Builder
	for _, u := range us {
		if u.AgentMessageChunk != nil && u.AgentMessageChunk.Content.Text != nil {
			b.WriteString(u.AgentMessageChunk.Content.Text.Text)
		}
	}
	return b.String()
}

func TestRun_agentsErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"x": [1]`), 0o600)
	builtin := filepath.Join(dir, "builtin.json")
	os.WriteFile(builtin, []byte(`{"claude": {"command": "claude-agent-acp"}}`), 0o600)
	for _, tc := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--agents", bad}, 1, "want {\"NAME\""},
		{[]string{"--agents", builtin}, 1, `"claude" is a built-in agent's name`},
		{[]string{"--agents", filepath.Join(dir, "missing.json")}, 1, "no such file"},
		{[]string{"--agent", "acp"}, 1, "give the ACP agent's command after --"},
		{[]string{"--agent", "acp", "--", filepath.Join(dir, "no-agent")}, 1, "--agent acp: agent unavailable"},
		{[]string{"stray"}, 2, "unexpected arguments"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.out) {
			t.Errorf("run %q = %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.out)
		}
	}
}
