package codex

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/coder/acp-go-sdk"
)

// ToolInfo is how an item is shown as a tool call.
type ToolInfo struct {
	Kind      acp.ToolKind
	Title     string
	Content   []acp.ToolCallContent
	Locations []acp.ToolCallLocation
	RawInput  any
}

// describe maps a tool item to an ACP tool call (after the Codex tables in
// ../shared/docs/anchors.md §4); ok is false for items that are not tools.
func describe(it item, cwd string) (ToolInfo, bool) {
	switch it.Type {
	case "commandExecution":
		return command(it.Command, it.Cwd, it.CommandActions, cwd), true
	case "fileChange":
		return patchInfo(it.Changes, cwd), true
	case "mcpToolCall":
		return ToolInfo{Kind: acp.ToolKindOther, Title: it.Server + ": " + it.Tool, RawInput: it.Arguments}, true
	case "webSearch":
		return webSearch(it), true
	case "imageView":
		return ToolInfo{Kind: acp.ToolKindRead, Title: "View image " + relPath(it.Path, cwd), Locations: at(it.Path)}, true
	case "contextCompaction":
		return ToolInfo{Kind: acp.ToolKindThink, Title: "Compact the conversation"}, true
	case "dynamicToolCall", "collabAgentToolCall", "subAgentActivity", "imageGeneration":
		return ToolInfo{Kind: acp.ToolKindOther, Title: or(it.Tool, it.Type)}, true
	}
	return ToolInfo{}, false
}

// command shows a shell command: as a read or a search when codex parsed
// it as exactly one, else as the command itself.
func command(cmd, dir string, actions []commandAction, cwd string) ToolInfo {
	shown := unwrapShell(cmd)
	info := ToolInfo{Kind: acp.ToolKindExecute, Title: shown, RawInput: map[string]any{"command": shown, "cwd": dir}}
	if len(actions) != 1 {
		return info
	}
	a := actions[0]
	path := absPath(a.Path, or(dir, cwd))
	switch a.Type {
	case "read":
		info.Kind, info.Title, info.Locations = acp.ToolKindRead, "Read "+relPath(or(path, a.Name), cwd), at(path)
	case "listFiles":
		info.Kind, info.Title, info.Locations = acp.ToolKindRead, "List "+or(relPath(path, cwd), "files"), at(path)
	case "search":
		info.Kind, info.Title = acp.ToolKindSearch, "Search for "+quote(a.Query)+prefixed(" in ", relPath(path, cwd))
	}
	return info
}

// unwrapShell strips codex's `/bin/bash -lc '…'` wrapper.
func unwrapShell(cmd string) string {
	for _, sh := range []string{"/bin/bash -lc ", "bash -lc ", "/bin/sh -c ", "/bin/zsh -lc "} {
		if rest, ok := strings.CutPrefix(cmd, sh); ok {
			if len(rest) >= 2 && rest[0] == '\'' && rest[len(rest)-1] == '\'' {
				return strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, `'`)
			}
			return rest
		}
	}
	return cmd
}

func webSearch(it item) ToolInfo {
	if a := it.Action; a != nil && a.Type == "open_page" && a.URL != "" {
		return ToolInfo{Kind: acp.ToolKindFetch, Title: "Open " + a.URL}
	}
	return ToolInfo{Kind: acp.ToolKindFetch, Title: "Search the web for " + quote(it.Query)}
}

// patchInfo shows a file change with a diff per file: for an added file
// codex's diff is its content, for an update a unified hunk.
func patchInfo(changes []fileChange, cwd string) ToolInfo {
	info := ToolInfo{Kind: acp.ToolKindEdit, RawInput: map[string]any{"changes": changes}}
	var names []string
	for _, c := range changes {
		names = append(names, relPath(c.Path, cwd))
		info.Locations = append(info.Locations, acp.ToolCallLocation{Path: c.Path})
		switch c.Kind.Type {
		case "add":
			info.Content = append(info.Content, acp.ToolDiffContent(c.Path, c.Diff))
		case "delete":
			info.Content = append(info.Content, acp.ToolDiffContent(c.Path, "", c.Diff))
		default:
			old, updated := hunkTexts(c.Diff)
			info.Content = append(info.Content, acp.ToolDiffContent(c.Path, updated, old))
		}
	}
	verb := "Edit "
	if len(changes) == 1 && changes[0].Kind.Type == "add" {
		verb = "Create "
	}
	info.Title = verb + strings.Join(names, ", ")
	return info
}

// hunkTexts splits a unified diff into the old and the new text of its
// hunks (the lines codex shows, not the whole file).
func hunkTexts(diff string) (old, updated string) {
	var o, n strings.Builder
	for _, line := range strings.SplitAfter(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "@@"), strings.HasPrefix(line, "---"), strings.HasPrefix(line, "+++"), line == "":
		case line[0] == '-':
			o.WriteString(line[1:])
		case line[0] == '+':
			n.WriteString(line[1:])
		case line[0] == ' ':
			o.WriteString(line[1:])
			n.WriteString(line[1:])
		}
	}
	return o.String(), n.String()
}

// finish is the final update of a tool item.
func finish(it item) acp.SessionUpdate {
	status := acp.ToolCallStatusCompleted
	if it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0) {
		status = acp.ToolCallStatusFailed
	}
	opts := []acp.ToolCallUpdateOpt{acp.WithUpdateStatus(status)}
	switch it.Type {
	case "commandExecution":
		out := ""
		if it.AggregatedOutput != nil {
			out = *it.AggregatedOutput
		}
		raw := map[string]any{"output": out, "exitCode": it.ExitCode, "status": it.Status}
		opts = append(opts, acp.WithUpdateRawOutput(raw))
		if out != "" {
			opts = append(opts, acp.WithUpdateContent(texts(fence(out, "console"))))
		} else if it.Status == "declined" {
			opts = append(opts, acp.WithUpdateContent(texts("The command was declined.")))
		}
	case "mcpToolCall":
		opts = append(opts, mcpOutput(it)...)
	default:
		opts = append(opts, acp.WithUpdateRawOutput(map[string]any{"status": it.Status}))
	}
	return acp.UpdateToolCall(acp.ToolCallId(it.ID), opts...)
}

func mcpOutput(it item) []acp.ToolCallUpdateOpt {
	if it.Error != nil {
		return []acp.ToolCallUpdateOpt{acp.WithUpdateStatus(acp.ToolCallStatusFailed),
			acp.WithUpdateContent(texts(it.Error.Message)), acp.WithUpdateRawOutput(it.Error)}
	}
	if it.Result == nil {
		return nil
	}
	var parts []string
	for _, c := range it.Result.Content {
		if c.Type == "text" {
			parts = append(parts, c.Text)
		}
	}
	return []acp.ToolCallUpdateOpt{acp.WithUpdateContent(texts(strings.Join(parts, "\n"))), acp.WithUpdateRawOutput(it.Result)}
}

func texts(s string) []acp.ToolCallContent {
	if s == "" {
		return nil
	}
	return []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(s))}
}

// fence wraps text in a code fence longer than any run of backticks in it.
func fence(text, lang string) string {
	ticks := "```"
	for strings.Contains(text, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + strings.TrimSuffix(text, "\n") + "\n" + ticks
}

func at(path string) []acp.ToolCallLocation {
	if path == "" || !filepath.IsAbs(path) {
		return nil
	}
	return []acp.ToolCallLocation{{Path: path}}
}

func absPath(path, dir string) string {
	if path == "" || filepath.IsAbs(path) || dir == "" {
		return path
	}
	return filepath.Join(dir, path)
}

func relPath(path, cwd string) string {
	if path == "" || cwd == "" {
		return path
	}
	if rel, err := filepath.Rel(cwd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
