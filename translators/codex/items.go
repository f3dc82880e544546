package codex

import (
	"cmp"
	"strings"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"

	"github.com/coder/acp-go-sdk"
)

// describe maps a tool item to an ACP tool call, as Zed's Codex adapters
// show them; ok is false for items that are not tools. Codex's items are
// typed, so this switch on the item type is its tool table.
func describe(it item, cwd string) (agentkit.ToolInfo, bool) {
	info, ok := describeItem(it, cwd)
	info.Name = toolName(it.Type, it.Tool)
	return info, ok
}

// itemTools are the names of the Responses tools behind codex's typed
// tool items; other items are named by their tool, or their type.
var itemTools = map[string]string{
	"commandExecution": "exec_command",
	"fileChange":       "apply_patch",
	"webSearch":        "web_search",
	"imageView":        "view_image",
}

// toolName is the tool's name as the model called it, for an item of type
// typ whose tool (mcpToolCall, dynamicToolCall) is tool.
func toolName(typ, tool string) string {
	return cmp.Or(itemTools[typ], tool, typ)
}

func describeItem(it item, cwd string) (agentkit.ToolInfo, bool) {
	switch it.Type {
	case "commandExecution":
		return command(it.Command, it.Cwd, it.CommandActions, cwd), true
	case "fileChange":
		return patchInfo(it.Changes, cwd), true
	case "mcpToolCall":
		return agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: it.Server + ": " + it.Tool, RawInput: it.Arguments}, true
	case "webSearch":
		return webSearch(it), true
	case "imageView":
		return agentkit.ToolInfo{Kind: acp.ToolKindRead, Title: "View image " + agentkit.RelPath(it.Path, cwd), Locations: agentkit.At(it.Path, 0)}, true
	case "contextCompaction":
		return agentkit.ToolInfo{Kind: acp.ToolKindThink, Title: "Compact the conversation"}, true
	case "subAgentActivity":
		return agentActivity(it), true
	case "collabAgentToolCall":
		return agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: cmp.Or(collabTitles[it.Tool], it.Tool, it.Type)}, true
	case "dynamicToolCall", "imageGeneration":
		return agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: cmp.Or(it.Tool, it.Type)}, true
	}
	return agentkit.ToolInfo{}, false
}

// collabTitles are the titles of codex's collaboration tools' calls.
var collabTitles = map[string]string{
	"spawnAgent": "Spawn agent", "sendInput": "Message agent", "sendMessage": "Message agent", "followupTask": "Give agent a follow-up task",
	"resumeAgent": "Resume agent", "wait": "Wait for agents", "closeAgent": "Close agent", "interruptAgent": "Interrupt agent", "listAgents": "List agents",
}

// agentActivity shows what a spawned agent did (see subagents.go):
// started, was sent input, was interrupted, completed.
func agentActivity(it item) agentkit.ToolInfo {
	name := cmp.Or(it.AgentPath, "an agent")
	title := "Agent " + name + " " + it.Kind
	switch it.Kind {
	case "started":
		title = "Spawn agent " + name
	case "interacted":
		title = "Message agent " + name
	}
	return agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: title, RawInput: map[string]any{"agentPath": it.AgentPath, "agentThreadId": it.AgentThreadID}}
}

// command shows a shell command: as a read or a search when codex parsed
// it as exactly one, else as the command itself.
func command(cmd, dir string, actions []commandAction, cwd string) agentkit.ToolInfo {
	shown := unwrapShell(cmd)
	info := agentkit.ToolInfo{Kind: acp.ToolKindExecute, Title: shown, RawInput: map[string]any{"command": shown, "cwd": dir}}
	if len(actions) != 1 {
		return info
	}
	a := actions[0]
	path := agentkit.AbsPath(a.Path, cmp.Or(dir, cwd))
	switch a.Type {
	case "read":
		info.Kind, info.Title, info.Locations = acp.ToolKindRead, "Read "+agentkit.RelPath(cmp.Or(path, a.Name), cwd), agentkit.At(path, 0)
	case "listFiles":
		info.Kind, info.Title, info.Locations = acp.ToolKindRead, "List "+cmp.Or(agentkit.RelPath(path, cwd), "files"), agentkit.At(path, 0)
	case "search":
		info.Kind, info.Title = acp.ToolKindSearch, "Search for "+agentkit.Quote(a.Query)+agentkit.Prefixed(" in ", agentkit.RelPath(path, cwd))
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

func webSearch(it item) agentkit.ToolInfo {
	if a := it.Action; a != nil && a.Type == "open_page" && a.URL != "" {
		return agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Open " + a.URL}
	}
	return agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Search the web for " + agentkit.Quote(it.Query)}
}

// patchInfo shows a file change with a diff per file: for an added file
// codex's diff is its content, for an update a unified hunk.
func patchInfo(changes []fileChange, cwd string) agentkit.ToolInfo {
	info := agentkit.ToolInfo{Kind: acp.ToolKindEdit, RawInput: map[string]any{"changes": changes}}
	var names []string
	for _, c := range changes {
		names = append(names, agentkit.RelPath(c.Path, cwd))
		info.Locations = append(info.Locations, acp.ToolCallLocation{Path: c.Path})
		switch c.Kind.Type {
		case "add":
			info.Content = append(info.Content, acp.ToolDiffContent(c.Path, c.Diff))
		case "delete":
			info.Content = append(info.Content, acp.ToolDiffContent(c.Path, "", c.Diff))
		default:
			info.Content = append(info.Content, agentkit.Diffs(c.Path, agentkit.UnifiedEdit(c.Diff))...)
		}
	}
	verb := "Edit "
	if len(changes) == 1 && changes[0].Kind.Type == "add" {
		verb = "Create "
	}
	info.Title = verb + strings.Join(names, ", ")
	return info
}

// finish is the final update of a tool item.
func finish(it item) acp.SessionUpdate {
	status := acp.ToolCallStatusCompleted
	if it.Status == "failed" || it.Status == "declined" || (it.ExitCode != nil && *it.ExitCode != 0) {
		status = acp.ToolCallStatusFailed
	}
	opts := []acp.ToolCallUpdateOpt{agentkit.Named(toolName(it.Type, it.Tool)), acp.WithUpdateStatus(status)}
	switch it.Type {
	case "commandExecution":
		out := ""
		if it.AggregatedOutput != nil {
			out = *it.AggregatedOutput
		}
		raw := map[string]any{"output": out, "exitCode": it.ExitCode, "status": it.Status}
		opts = append(opts, acp.WithUpdateRawOutput(raw))
		if out != "" {
			opts = append(opts, acp.WithUpdateContent(agentkit.Console(out)))
		} else if it.Status == "declined" {
			opts = append(opts, acp.WithUpdateContent(agentkit.Texts("The command was declined.")))
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
			acp.WithUpdateContent(agentkit.Texts(it.Error.Message)), acp.WithUpdateRawOutput(it.Error)}
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
	return []acp.ToolCallUpdateOpt{acp.WithUpdateContent(agentkit.Texts(strings.Join(parts, "\n"))), acp.WithUpdateRawOutput(it.Result)}
}
