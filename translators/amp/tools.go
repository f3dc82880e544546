package amp

import (
	"cmp"
	"strings"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// tools is how Amp's tools are shown. Which tools a thread has depends on
// its mode: the shell is Bash ({cmd, cwd}) in some, shell_command and
// async_shell_command ({command, workdir, timeout_ms}) in others; files
// are edited with edit_file/create_file or with apply_patch (Codex's patch
// format). Paths are absolute or relative to the session's directory.
var tools = agentkit.Tools{Table: map[string]agentkit.Describer{
	"Bash":                shell,
	"shell_command":       shell,
	"async_shell_command": shell,
	"shell_command_status": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindExecute, Title: "Wait for a background command"}
	},
	"shell_command_kill": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindExecute, Title: "Stop a background command"}
	},
	"Read": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		start, end := readRange(in)
		limit := 0
		if end >= start && start > 0 {
			limit = end - start + 1
		}
		return agentkit.FileRead(filePath(in, cwd), cwd, start, limit)
	},
	"create_file": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.FileEdit("Write ", filePath(in, cwd), cwd, agentkit.Edit{New: in.Str("content"), Created: true})
	},
	"edit_file": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.FileEdit("Edit ", filePath(in, cwd), cwd, agentkit.Edit{Old: in.Str("old_str"), New: in.Str("new_str")})
	},
	"apply_patch": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.PatchEdit(in.Str("patch", "input"), cwd)
	},
	"undo_edit":   fileOp("Undo the last edit of "),
	"format_file": fileOp("Format "),
	"delete_file": fileOp("Delete "),
	"list_directory": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		path := filePath(in, cwd)
		return agentkit.ToolInfo{Kind: acp.ToolKindRead, Title: "List " + cmp.Or(agentkit.RelPath(path, cwd), "directory"), Locations: agentkit.At(path, 0)}
	},
	"Grep": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "Search for " + agentkit.Quote(in.Str("pattern")) + agentkit.InDir(in, cwd)}
	},
	"glob": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "Find " + cmp.Or(in.Str("filePattern", "pattern"), "files")}
	},
	"finder":      search("Find ", "query"),
	"find_thread": search("Find thread ", "query"),
	"librarian":   read("Ask the librarian: ", "query"),
	"read_thread": read("Read thread ", "threadID", "thread_id"),
	"web_search": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Search the web: " + cmp.Or(in.Str("objective", "query"), "…")}
	},
	"read_web_page": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Fetch " + in.Str("url"), Content: agentkit.Texts(in.Str("objective"))}
	},
	"Task": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindThink, Title: cmp.Or(in.Str("description"), "Task"), Content: agentkit.Texts(in.Str("prompt"))}
	},
	"oracle": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindThink, Title: "Consult the oracle", Content: agentkit.Texts(in.Str("task"))}
	},
	"skill": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindThink, Title: strings.TrimSpace("Load skill " + in.Str("name"))}
	},
	"mermaid": think("Draw a diagram"),
	"painter": think("Paint an image"),
}}

// shell shows a command run by Bash, shell_command or async_shell_command.
func shell(in agentkit.Input, cwd string) agentkit.ToolInfo {
	info := agentkit.ToolInfo{Kind: acp.ToolKindExecute, Title: cmp.Or(in.Str("cmd", "command"), "Terminal")}
	if dir := in.Str("cwd", "workdir"); dir != "" && agentkit.AbsPath(dir, cwd) != cwd {
		info.Content = agentkit.Texts("in " + agentkit.RelPath(agentkit.AbsPath(dir, cwd), cwd))
	}
	return info
}

func fileOp(verb string) agentkit.Describer {
	return func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		path := filePath(in, cwd)
		return agentkit.ToolInfo{Kind: acp.ToolKindEdit, Title: verb + cmp.Or(agentkit.RelPath(path, cwd), "file"), Locations: agentkit.At(path, 0)}
	}
}

func search(verb string, keys ...string) agentkit.Describer {
	return func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: verb + in.Str(keys...)}
	}
}

func read(verb string, keys ...string) agentkit.Describer {
	return func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindRead, Title: verb + in.Str(keys...)}
	}
}

func think(title string) agentkit.Describer {
	return func(agentkit.Input, string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindThink, Title: title}
	}
}

// filePath is the absolute path a file tool works on.
func filePath(in agentkit.Input, cwd string) string {
	return agentkit.AbsPath(in.Str("path", "file_path"), cwd)
}

// readRange is Read's read_range, [first, last] line.
func readRange(in agentkit.Input) (start, end int) {
	r, _ := in["read_range"].([]any)
	if len(r) == 2 {
		a, _ := r[0].(float64)
		b, _ := r[1].(float64)
		return int(a), int(b)
	}
	return 0, 0
}

// shellTool reports the tools that run a command.
func shellTool(name string) bool {
	return name == "Bash" || name == "shell_command" || name == "async_shell_command"
}

// resultContent is what a tool's result adds to its call: a command's
// output as a console block, a read's text fenced, a failure's message
// fenced; edits keep their diff, so they add nothing.
func resultContent(name, text string, failed bool) []acp.ToolCallContent {
	switch {
	case text == "":
		return nil
	case failed:
		return agentkit.Texts(agentkit.Fence(text, ""))
	case shellTool(name):
		return agentkit.Console(text)
	case name == "Read":
		return agentkit.Texts(agentkit.Fence(text, ""))
	case name == "create_file" || name == "edit_file" || name == "apply_patch":
		return nil
	}
	return agentkit.Texts(text)
}
