package claude

import (
	"os"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// TestTools_newest checks how the tools new in Claude Code 2.1.3xx (seen
// in 2.1.332, most of them deferred behind ToolSearch) are shown: each
// with its kind and a title that says what it does, none as a bare name.
func TestTools_newest(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    agentkit.Input
		kind  acp.ToolKind
		title string
	}{
		{"ToolSearch", agentkit.Input{"query": "select:TaskCreate,TaskUpdate"}, acp.ToolKindSearch, "Load tools TaskCreate, TaskUpdate"},
		{"ToolSearch", agentkit.Input{"query": "cron schedule"}, acp.ToolKindSearch, `Search tools for "cron schedule"`},
		{"ListAgents", agentkit.Input{}, acp.ToolKindRead, "List agents"},
		{"Monitor", agentkit.Input{"command": "tail -f log", "description": "the log"}, acp.ToolKindExecute, "tail -f log"},
		{"Monitor", agentkit.Input{"ws": map[string]any{"url": "ws://localhost:9/events"}}, acp.ToolKindExecute, "Watch ws://localhost:9/events"},
		{"Workflow", agentkit.Input{"name": "review"}, acp.ToolKindThink, "Run workflow review"},
		{"Workflow", agentkit.Input{"scriptPath": "/home/dev/project/flows/a.js"}, acp.ToolKindThink, "Run workflow flows/a.js"},
		{"Workflow", agentkit.Input{"script": "export const meta = {}"}, acp.ToolKindThink, "Run workflow"},
		{"Skill", agentkit.Input{"skill": "dataviz", "args": "bar chart"}, acp.ToolKindRead, "Load skill dataviz"},
		{"ScheduleWakeup", agentkit.Input{"delaySeconds": 1200.0, "reason": "the build takes a while"}, acp.ToolKindOther, "Wake up in 20 min: the build takes a while"},
		{"ScheduleWakeup", agentkit.Input{"delaySeconds": 90.0}, acp.ToolKindOther, "Wake up in 90 s"},
		{"ScheduleWakeup", agentkit.Input{"stop": true, "delaySeconds": 60.0}, acp.ToolKindOther, "Stop the loop"},
		{"TaskStop", agentkit.Input{"shell_id": "b7"}, acp.ToolKindOther, "Stop task b7"},
		{"ReportFindings", agentkit.Input{"findings": []any{}}, acp.ToolKindOther, "Report 0 findings"},
	} {
		got := tools.Describe(c.name, c.in, "/home/dev/project")
		if got.Kind != c.kind || got.Title != c.title {
			t.Errorf("%s %v: %s %q, want %s %q", c.name, c.in, got.Kind, got.Title, c.kind, c.title)
		}
	}
}

// A review's findings are listed one a line, each at its file and line.
func TestTools_reportFindings(t *testing.T) {
	in := agentkit.Input{"findings": []any{
		map[string]any{"file": "main.go", "line": 12.0, "severity": "important", "summary": "nil map write", "failure_scenario": "x"},
		map[string]any{"file": "doc.go", "summary": "typo", "failure_scenario": "y"},
	}}
	got := tools.Describe("ReportFindings", in, "/home/dev/project")
	if got.Title != "Report 2 findings" {
		t.Errorf("title %q", got.Title)
	}
	want := "- main.go:12 [important]: nil map write\n- doc.go: typo"
	if len(got.Content) != 1 || got.Content[0].Content == nil || got.Content[0].Content.Content.Text == nil ||
		got.Content[0].Content.Content.Text.Text != want {
		t.Errorf("content %+v, want %q", got.Content, want)
	}
	if len(got.Locations) != 2 || got.Locations[0].Path != "/home/dev/project/main.go" || got.Locations[0].Line == nil ||
		*got.Locations[0].Line != 12 || got.Locations[1].Path != "/home/dev/project/doc.go" {
		t.Errorf("locations %+v", got.Locations)
	}
}

// Claude is asked for its task tools, which the plan comes from, unless
// the environment the bridge was given says otherwise: the last of a name
// is the one a process gets.
func TestEnv_todoToolsUnlessSaidOtherwise(t *testing.T) {
	t.Setenv("CLAUDE_CODE_ENABLE_TODO_TOOLS", "")
	os.Unsetenv("CLAUDE_CODE_ENABLE_TODO_TOOLS")
	if got := lastValue(New(Options{}).env(), "CLAUDE_CODE_ENABLE_TODO_TOOLS"); got != "1" {
		t.Errorf("by default CLAUDE_CODE_ENABLE_TODO_TOOLS=%q, want 1", got)
	}
	if got := lastValue(New(Options{Env: []string{"CLAUDE_CODE_ENABLE_TODO_TOOLS=0"}}).env(), "CLAUDE_CODE_ENABLE_TODO_TOOLS"); got != "0" {
		t.Errorf("with Options.Env CLAUDE_CODE_ENABLE_TODO_TOOLS=%q, want 0", got)
	}
	t.Setenv("CLAUDE_CODE_ENABLE_TODO_TOOLS", "false")
	if got := lastValue(New(Options{}).env(), "CLAUDE_CODE_ENABLE_TODO_TOOLS"); got != "false" {
		t.Errorf("with the bridge's own CLAUDE_CODE_ENABLE_TODO_TOOLS=false, Claude gets %q", got)
	}
}

func lastValue(env []string, name string) string {
	var v string
	for _, kv := range env {
		if k, val, _ := strings.Cut(kv, "="); k == name {
			v = val
		}
	}
	return v
}
