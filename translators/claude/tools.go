package claude

import (
	"cmp"
	"strings"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// tools is how Claude's tools are shown, after the Zed adapter's table.
// The input may still be nil while the tool_use streams.
var tools = agentkit.Tools{Table: map[string]agentkit.Describer{
	"Bash": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindExecute, Title: cmp.Or(in.Str("command"), "Terminal"), Content: agentkit.Texts(in.Str("description"))}
	},
	"Read": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.FileRead(filePath(in, cwd), cwd, in.Num("offset"), in.Num("limit"))
	},
	"Write": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.FileEdit("Write ", filePath(in, cwd), cwd, agentkit.Edit{New: in.Str("content"), Created: true})
	},
	"Edit": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.FileEdit("Edit ", filePath(in, cwd), cwd, agentkit.Edit{Old: in.Str("old_string"), New: in.Str("new_string")})
	},
	"MultiEdit": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		var edits []agentkit.Edit
		for _, e := range in.Objects("edits") {
			edits = append(edits, agentkit.Edit{Old: e.Str("old_string"), New: e.Str("new_string")})
		}
		return agentkit.FileEdit("Edit ", filePath(in, cwd), cwd, edits...)
	},
	"NotebookEdit": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		path := filePath(in, cwd)
		return agentkit.ToolInfo{Kind: acp.ToolKindEdit, Title: "Edit notebook " + cmp.Or(agentkit.RelPath(path, cwd), "file"),
			Locations: agentkit.At(path, 0), Content: agentkit.Texts(in.Str("new_source"))}
	},
	"Glob": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "Find " + cmp.Or(in.Str("pattern"), "files") + agentkit.InDir(in, cwd),
			Locations: agentkit.At(agentkit.AbsPath(in.Str("path"), cwd), 0)}
	},
	"Grep": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "Search for " + agentkit.Quote(in.Str("pattern")) + agentkit.InDir(in, cwd)}
	},
	"LS": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "List " + cmp.Or(agentkit.RelPath(filePath(in, cwd), cwd), "directory")}
	},
	"WebFetch": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Fetch " + in.Str("url"), Content: agentkit.Texts(in.Str("prompt"))}
	},
	"WebSearch": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Search the web for " + agentkit.Quote(in.Str("query"))}
	},
	"Agent": subagent,
	"Task":  subagent,
	"ExitPlanMode": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSwitchMode, Title: "Ready to code?", Content: agentkit.Texts(in.Str("plan"))}
	},
	"EnterPlanMode": func(agentkit.Input, string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSwitchMode, Title: "Enter plan mode"}
	},
	"TaskOutput": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindRead, Title: "Read output of task " + in.Str("task_id", "taskId", "id")}
	},
	"CronList": func(agentkit.Input, string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindRead, Title: "List scheduled jobs"}
	},
}, Other: otherTool}

func subagent(in agentkit.Input, _ string) agentkit.ToolInfo {
	return agentkit.ToolInfo{Kind: acp.ToolKindThink, Title: cmp.Or(in.Str("description"), "Task"), Content: agentkit.Texts(in.Str("prompt"))}
}

// filePath is the absolute path a file tool works on.
func filePath(in agentkit.Input, cwd string) string {
	return agentkit.AbsPath(in.Str("file_path", "notebook_path", "path"), cwd)
}

// otherTool covers the tools with no file or command to show.
func otherTool(name string, in agentkit.Input, _ string) agentkit.ToolInfo {
	title := name
	switch name {
	case "Skill":
		title = "Load skill " + in.Str("skill", "name", "command")
	case "SendMessage":
		title = "Send message" + agentkit.Prefixed(" to ", in.Str("to", "recipient", "agent"))
	case "TaskStop":
		title = "Stop task " + in.Str("task_id", "taskId", "id")
	case "CronCreate":
		title = "Schedule " + agentkit.Quote(cmp.Or(in.Str("cron", "schedule"), "a job"))
	case "CronDelete":
		title = "Delete scheduled job " + in.Str("id", "job_id")
	case "EnterWorktree":
		title = "Enter worktree " + in.Str("name", "path", "branch")
	case "ExitWorktree":
		title = "Leave the worktree"
	case "AskUserQuestion":
		title = cmp.Or(firstQuestion(in), "Ask the user")
	default:
		return agentkit.Generic(name)
	}
	return agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: strings.TrimSpace(title)}
}

// taskTool reports the tools that keep the task list, shown as the plan.
func taskTool(name string) bool {
	switch name {
	case "TaskCreate", "TaskUpdate", "TaskList", "TaskGet", "TodoWrite":
		return true
	}
	return false
}

// resultContent is what a tool's result adds to its call. Edits keep their
// diff (content replaces the whole collection, so nothing is sent).
func resultContent(name, text string, failed bool) []acp.ToolCallContent {
	if text == "" {
		return nil
	}
	switch {
	case failed:
		return agentkit.Texts(agentkit.Fence(text, ""))
	case name == "Write" || name == "Edit" || name == "MultiEdit" || name == "NotebookEdit":
		return nil
	case name == "Bash":
		return agentkit.Console(text)
	case name == "Read":
		return agentkit.Texts(agentkit.Fence(stripReminders(text), ""))
	case name == "Agent" || name == "Task":
		text, _, _ = strings.Cut(text, "\nagentId: ") // the trailer is for the model
	}
	return agentkit.Texts(text)
}

func stripReminders(s string) string {
	if i := strings.Index(s, "<system-reminder>"); i >= 0 {
		return strings.TrimRight(s[:i], "\n")
	}
	return s
}

func firstQuestion(in agentkit.Input) string {
	qs := in.Objects("questions")
	if len(qs) == 0 {
		return ""
	}
	return qs[0].Str("question")
}
