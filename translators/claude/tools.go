package claude

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/coder/acp-go-sdk"
)

// toolInfo is how a tool call is shown.
type toolInfo struct {
	kind      acp.ToolKind
	title     string
	content   []acp.ToolCallContent
	locations []acp.ToolCallLocation
}

// describe maps a Claude tool and its input to an ACP tool call, after the
// Zed adapter's table (../shared/docs/anchors.md §2). The input may still
// be nil while the tool_use streams.
func describe(name string, in map[string]any, cwd string) toolInfo {
	path := absPath(str(in, "file_path", "notebook_path", "path"), cwd)
	rel := relPath(path, cwd)
	switch name {
	case "Bash":
		return toolInfo{kind: acp.ToolKindExecute, title: or(str(in, "command"), "Terminal"), content: texts(str(in, "description"))}
	case "Read":
		return toolInfo{kind: acp.ToolKindRead, title: "Read " + or(rel, "file") + lineRange(in), locations: at(path, num(in, "offset"))}
	case "Write":
		return toolInfo{kind: acp.ToolKindEdit, title: "Write " + or(rel, "file"), locations: at(path, 0),
			content: diffs(path, diffPair{newText: str(in, "content"), created: true})}
	case "Edit":
		return toolInfo{kind: acp.ToolKindEdit, title: "Edit " + or(rel, "file"), locations: at(path, 0),
			content: diffs(path, diffPair{oldText: str(in, "old_string"), newText: str(in, "new_string")})}
	case "MultiEdit":
		return toolInfo{kind: acp.ToolKindEdit, title: "Edit " + or(rel, "file"), locations: at(path, 0), content: diffs(path, multiEdits(in)...)}
	case "NotebookEdit":
		return toolInfo{kind: acp.ToolKindEdit, title: "Edit notebook " + or(rel, "file"), locations: at(path, 0), content: texts(str(in, "new_source"))}
	case "Glob":
		return toolInfo{kind: acp.ToolKindSearch, title: "Find " + or(str(in, "pattern"), "files") + inDir(in, cwd), locations: at(absPath(str(in, "path"), cwd), 0)}
	case "Grep":
		return toolInfo{kind: acp.ToolKindSearch, title: "Search for " + quote(str(in, "pattern")) + inDir(in, cwd)}
	case "LS":
		return toolInfo{kind: acp.ToolKindSearch, title: "List " + or(rel, "directory")}
	case "WebFetch":
		return toolInfo{kind: acp.ToolKindFetch, title: "Fetch " + str(in, "url"), content: texts(str(in, "prompt"))}
	case "WebSearch":
		return toolInfo{kind: acp.ToolKindFetch, title: "Search the web for " + quote(str(in, "query"))}
	case "Agent", "Task":
		return toolInfo{kind: acp.ToolKindThink, title: or(str(in, "description"), "Task"), content: texts(str(in, "prompt"))}
	case "ExitPlanMode":
		return toolInfo{kind: acp.ToolKindSwitchMode, title: "Ready to code?", content: texts(str(in, "plan"))}
	case "EnterPlanMode":
		return toolInfo{kind: acp.ToolKindSwitchMode, title: "Enter plan mode"}
	}
	return otherTool(name, in)
}

// otherTool covers the tools with no file or command to show.
func otherTool(name string, in map[string]any) toolInfo {
	title := name
	switch name {
	case "Skill":
		title = "Load skill " + or(str(in, "skill", "name", "command"), "")
	case "SendMessage":
		title = "Send message" + prefixed(" to ", str(in, "to", "recipient", "agent"))
	case "TaskOutput":
		return toolInfo{kind: acp.ToolKindRead, title: "Read output of task " + str(in, "task_id", "taskId", "id")}
	case "TaskStop":
		title = "Stop task " + str(in, "task_id", "taskId", "id")
	case "CronCreate":
		title = "Schedule " + quote(or(str(in, "cron", "schedule"), "a job"))
	case "CronDelete":
		title = "Delete scheduled job " + str(in, "id", "job_id")
	case "CronList":
		return toolInfo{kind: acp.ToolKindRead, title: "List scheduled jobs"}
	case "EnterWorktree":
		title = "Enter worktree " + str(in, "name", "path", "branch")
	case "ExitWorktree":
		title = "Leave the worktree"
	case "AskUserQuestion":
		title = or(firstQuestion(in), "Ask the user")
	default:
		if server, tool, ok := mcpName(name); ok {
			title = server + ": " + tool
		}
	}
	return toolInfo{kind: acp.ToolKindOther, title: strings.TrimSpace(title)}
}

// taskTool reports the tools that keep the task list, shown as the plan.
func taskTool(name string) bool {
	switch name {
	case "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TodoWrite":
		return true
	}
	return false
}

// mcpName splits mcp__server__tool.
func mcpName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok
}

// resultContent is what a tool's result adds to its call. Edits keep their
// diff (content replaces the whole collection, so nothing is sent).
func resultContent(name, text string, failed bool) []acp.ToolCallContent {
	if text == "" {
		return nil
	}
	switch {
	case failed:
		return texts(fence(text, ""))
	case name == "Write" || name == "Edit" || name == "MultiEdit" || name == "NotebookEdit":
		return nil
	case name == "Bash":
		return texts(fence(text, "console"))
	case name == "Read":
		return texts(fence(stripReminders(text), ""))
	case name == "Agent" || name == "Task":
		text, _, _ = strings.Cut(text, "\nagentId: ") // the trailer is for the model
	}
	return texts(text)
}

// fence wraps text in a code fence longer than any run of backticks in it.
func fence(text, lang string) string {
	ticks := "```"
	for strings.Contains(text, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + strings.TrimSuffix(text, "\n") + "\n" + ticks
}

func stripReminders(s string) string {
	if i := strings.Index(s, "<system-reminder>"); i >= 0 {
		return strings.TrimRight(s[:i], "\n")
	}
	return s
}

type diffPair struct {
	oldText, newText string
	created          bool
}

func diffs(path string, ps ...diffPair) []acp.ToolCallContent {
	if path == "" {
		return nil
	}
	var out []acp.ToolCallContent
	for _, p := range ps {
		if p.created {
			out = append(out, acp.ToolDiffContent(path, p.newText))
		} else {
			out = append(out, acp.ToolDiffContent(path, p.newText, p.oldText))
		}
	}
	return out
}

func multiEdits(in map[string]any) []diffPair {
	edits, _ := in["edits"].([]any)
	var ps []diffPair
	for _, e := range edits {
		m, _ := e.(map[string]any)
		ps = append(ps, diffPair{oldText: str(m, "old_string"), newText: str(m, "new_string")})
	}
	return ps
}

func texts(s string) []acp.ToolCallContent {
	if s == "" {
		return nil
	}
	return []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(s))}
}

func at(path string, line int) []acp.ToolCallLocation {
	if path == "" {
		return nil
	}
	loc := acp.ToolCallLocation{Path: path}
	if line > 0 {
		loc.Line = &line
	}
	return []acp.ToolCallLocation{loc}
}

func lineRange(in map[string]any) string {
	offset, limit := num(in, "offset"), num(in, "limit")
	switch {
	case offset > 0 && limit > 0:
		return fmt.Sprintf(" (%d - %d)", offset, offset+limit-1)
	case offset > 0:
		return fmt.Sprintf(" (from line %d)", offset)
	}
	return ""
}

func inDir(in map[string]any, cwd string) string {
	if p := str(in, "path"); p != "" {
		return " in " + relPath(p, cwd)
	}
	return ""
}

func firstQuestion(in map[string]any) string {
	qs, _ := in["questions"].([]any)
	if len(qs) == 0 {
		return ""
	}
	q, _ := qs[0].(map[string]any)
	return str(q, "question")
}

// absPath resolves a path against cwd: Claude keeps the model's relative
// paths in tool input, and ACP locations and diffs must be absolute.
func absPath(path, cwd string) string {
	if path == "" || filepath.IsAbs(path) || cwd == "" {
		return path
	}
	return filepath.Join(cwd, path)
}

// relPath shows a path under cwd relative to it.
func relPath(path, cwd string) string {
	if path == "" || cwd == "" {
		return path
	}
	if rel, err := filepath.Rel(cwd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// str returns the first of keys that holds a non-empty string.
func str(in map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

func num(in map[string]any, key string) int {
	f, _ := in[key].(float64)
	return int(f)
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func quote(s string) string {
	if s == "" {
		return `""`
	}
	return `"` + s + `"`
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
