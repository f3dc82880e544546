package opencode

import (
	"cmp"
	"strings"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// tools is how OpenCode's tools are shown. Their input uses camelCase
// (filePath, oldString); paths are absolute or relative to the session's
// directory.
var tools = agentkit.Tools{Table: map[string]agentkit.Describer{
	"bash": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindExecute, Title: cmp.Or(in.Str("command"), "Terminal"), Content: agentkit.Texts(in.Str("description"))}
	},
	"read": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.FileRead(filePath(in, cwd), cwd, in.Num("offset"), in.Num("limit"))
	},
	"write": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.FileEdit("Write ", filePath(in, cwd), cwd, agentkit.Edit{New: in.Str("content"), Created: true})
	},
	"edit": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.FileEdit("Edit ", filePath(in, cwd), cwd, agentkit.Edit{Old: in.Str("oldString"), New: in.Str("newString")})
	},
	"glob": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "Find " + cmp.Or(in.Str("pattern"), "files") + agentkit.InDir(in, cwd),
			Locations: agentkit.At(agentkit.AbsPath(in.Str("path"), cwd), 0)}
	},
	"grep": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "Search for " + agentkit.Quote(in.Str("pattern")) + agentkit.InDir(in, cwd)}
	},
	"list": func(in agentkit.Input, cwd string) agentkit.ToolInfo {
		path := agentkit.AbsPath(in.Str("path"), cwd)
		return agentkit.ToolInfo{Kind: acp.ToolKindSearch, Title: "List " + cmp.Or(agentkit.RelPath(path, cwd), "directory"), Locations: agentkit.At(path, 0)}
	},
	"webfetch": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Fetch " + in.Str("url")}
	},
	"websearch": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Search the web for " + agentkit.Quote(in.Str("query"))}
	},
	"task": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindThink, Title: cmp.Or(in.Str("description"), "Task"), Content: agentkit.Texts(in.Str("prompt"))}
	},
	"question": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		title := "Ask the user"
		if qs := in.Objects("questions"); len(qs) > 0 && qs[0].Str("question") != "" {
			title = qs[0].Str("question")
		}
		return agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: title}
	},
	"skill": func(in agentkit.Input, _ string) agentkit.ToolInfo {
		return agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: strings.TrimSpace("Load skill " + in.Str("name"))}
	},
}}

// filePath is the absolute path a file tool works on.
func filePath(in agentkit.Input, cwd string) string {
	return agentkit.AbsPath(in.Str("filePath", "path"), cwd)
}

// resultContent is what a finished tool's output adds to its call: a
// command's output as a console block, a read's text fenced; edits keep
// their diff, so they add nothing.
func resultContent(tool, output string) []acp.ToolCallContent {
	switch {
	case output == "":
		return nil
	case tool == "write" || tool == "edit" || tool == "patch" || tool == "apply_patch":
		return nil
	case tool == "bash":
		return agentkit.Console(output)
	case tool == "read":
		return agentkit.Texts(agentkit.Fence(output, ""))
	}
	return agentkit.Texts(output)
}
