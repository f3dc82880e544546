package claude

import (
	"cmp"
	"fmt"
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
	// New in 2.1.3xx (2.1.332 has them all).
	"ToolSearch": toolSearch,
	"ListAgents": func(agentkit.Input, string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindRead, Title: "List agents"}
	},
	"Monitor": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		title := cmp.Or(in.Str("command"), agentkit.Prefixed("Watch ", in.Object("ws").Str("url")), "Monitor")
		return agentkit.ToolInfo{Kind: acp.ToolKindExecute, Title: title, Content: agentkit.Texts(in.Str("description"))}
	},
	"Workflow": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		what := cmp.Or(in.Str("name"), agentkit.RelPath(agentkit.AbsPath(in.Str("scriptPath"), cwd), cwd))
		return agentkit.ToolInfo{Kind: acp.ToolKindThink, Title: "Run workflow" + agentkit.Prefixed(" ", what)}
	},
	"Skill": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindRead, Title: "Load skill" + agentkit.Prefixed(" ", in.Str("skill", "name", "command")),
			Content: agentkit.Texts(in.Str("args"))}
	},
	"ReportFindings": reportFindings,
}, Other: otherTool}

// toolSearch shows ToolSearch, which loads deferred tools' schemas:
// "select:A,B" names them, anything else searches.
func toolSearch(in agentkit.Input, _ string) agentkit.ToolInfo {
	q := in.Str("query")
	if names, ok := strings.CutPrefix(q, "select:"); ok {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "Load tools " + strings.ReplaceAll(names, ",", ", ")}
	}
	return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "Search tools for " + agentkit.Quote(q)}
}

// reportFindings shows a code review's findings, one line each, at their
// files.
func reportFindings(in agentkit.Input, cwd string) agentkit.ToolInfo {
	findings := in.Objects("findings")
	var lines []string
	var at []acp.ToolCallLocation
	for _, f := range findings {
		where := f.Str("file")
		if n := f.Num("line"); n > 0 {
			where += fmt.Sprintf(":%d", n)
		}
		lines = append(lines, "- "+where+agentkit.Prefixed(" ", bracket(f.Str("severity")))+": "+cmp.Or(f.Str("summary"), f.Str("short_summary")))
		if f.Str("file") != "" {
			at = append(at, agentkit.At(agentkit.AbsPath(f.Str("file"), cwd), f.Num("line"))...)
		}
	}
	title := fmt.Sprintf("Report %d findings", len(findings))
	if len(findings) == 1 {
		title = "Report 1 finding"
	}
	return agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: title, Content: agentkit.Texts(strings.Join(lines, "\n")), Locations: at}
}

func bracket(s string) string {
	if s == "" {
		return ""
	}
	return "[" + s + "]"
}

// wakeUp is ScheduleWakeup's title: when /loop's next round comes, and why.
func wakeUp(in agentkit.Input) string {
	if stop, _ := in["stop"].(bool); stop {
		return "Stop the loop"
	}
	return "Wake up" + agentkit.Prefixed(" in ", seconds(in.Num("delaySeconds"))) + agentkit.Prefixed(": ", in.Str("reason"))
}

// seconds says a delay the way a person would: "90 s", "20 min", "1 h".
func seconds(n int) string {
	switch {
	case n <= 0:
		return ""
	case n%3600 == 0:
		return fmt.Sprintf("%d h", n/3600)
	case n%60 == 0:
		return fmt.Sprintf("%d min", n/60)
	}
	return fmt.Sprintf("%d s", n)
}

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
	case "ScheduleWakeup":
		title = wakeUp(in)
	case "SendMessage":
		title = "Send message" + agentkit.Prefixed(" to ", in.Str("to", "recipient", "agent"))
	case "TaskStop":
		title = "Stop task " + in.Str("task_id", "taskId", "shell_id", "id")
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
