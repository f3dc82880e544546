package agentkit

import (
	"cmp"
	"fmt"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// ToolInfo is how a tool call is shown in the editor.
type ToolInfo struct {
	Name      string // the agent's own name of the tool (Bash, apply_patch, edit); none if ""
	Kind      acp.ToolKind
	Title     string
	Content   []acp.ToolCallContent
	Locations []acp.ToolCallLocation
	RawInput  any
}

// Start is the tool_call that announces the call.
func (ti ToolInfo) Start(id string, status acp.ToolCallStatus) acp.SessionUpdate {
	u := acp.StartToolCall(acp.ToolCallId(id), ti.Title, acp.WithStartKind(ti.Kind), acp.WithStartStatus(status),
		acp.WithStartContent(ti.Content), acp.WithStartLocations(ti.Locations), acp.WithStartRawInput(ti.RawInput))
	u.ToolCall.Name = name(ti.Name)
	return u
}

// Refresh is the tool_call_update that shows the call anew, once more of
// its input is known; extra options (a status, say) go along.
func (ti ToolInfo) Refresh(id string, extra ...acp.ToolCallUpdateOpt) acp.SessionUpdate {
	opts := append([]acp.ToolCallUpdateOpt{Named(ti.Name), acp.WithUpdateTitle(ti.Title), acp.WithUpdateKind(ti.Kind)}, extra...)
	opts = append(opts, acp.WithUpdateContent(ti.Content), acp.WithUpdateLocations(ti.Locations), acp.WithUpdateRawInput(ti.RawInput))
	return acp.UpdateToolCall(acp.ToolCallId(id), opts...)
}

// Call is the whole tool call, for a permission ask about it.
func (ti ToolInfo) Call(id string) acp.ToolCallUpdate {
	return acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(id), Name: name(ti.Name), Title: &ti.Title, Kind: &ti.Kind,
		RawInput: ti.RawInput, Locations: ti.Locations, Content: ti.Content}
}

// Named sets a tool_call_update's name: the agent's own name of the tool
// (none if "").
func Named(tool string) acp.ToolCallUpdateOpt {
	return func(u *acp.SessionToolCallUpdate) { u.Name = name(tool) }
}

func name(tool string) *string {
	if tool == "" {
		return nil
	}
	return &tool
}

// Input is a tool's input as the agent sent it: a decoded JSON object,
// possibly nil while it still streams.
type Input map[string]any

// Str returns the first of keys that holds a non-empty string.
func (in Input) Str(keys ...string) string {
	for _, k := range keys {
		if s, ok := in[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// Num returns a number in the input, or 0.
func (in Input) Num(key string) int {
	f, _ := in[key].(float64)
	return int(f)
}

// Object returns a nested object, or nil.
func (in Input) Object(key string) Input {
	m, _ := in[key].(map[string]any)
	return m
}

// Objects returns a list of objects; other elements are nil.
func (in Input) Objects(key string) []Input {
	list, _ := in[key].([]any)
	out := make([]Input, 0, len(list))
	for _, e := range list {
		m, _ := e.(map[string]any)
		out = append(out, m)
	}
	return out
}

// Describer shows one tool, given its input and the session's cwd.
type Describer func(in Input, cwd string) ToolInfo

// Tools is an agent's table of tools by name. A tool the table lacks is
// shown by Other, or else as its name with kind other (an MCP tool named
// mcp__server__tool as "server: tool").
type Tools struct {
	Table map[string]Describer
	Other func(name string, in Input, cwd string) ToolInfo
}

// Describe shows a call of tool name (which it is Named).
func (t Tools) Describe(name string, in Input, cwd string) ToolInfo {
	ti := t.describe(name, in, cwd)
	ti.Name = name
	return ti
}

func (t Tools) describe(name string, in Input, cwd string) ToolInfo {
	if d := t.Table[name]; d != nil {
		return d(in, cwd)
	}
	if t.Other != nil {
		return t.Other(name, in, cwd)
	}
	return Generic(name)
}

// Generic shows a tool with nothing but its name.
func Generic(name string) ToolInfo {
	if server, tool, ok := MCPName(name); ok {
		return ToolInfo{Kind: acp.ToolKindOther, Title: server + ": " + tool}
	}
	return ToolInfo{Kind: acp.ToolKindOther, Title: name}
}

// MCPName splits an MCP tool's name, mcp__server__tool.
func MCPName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, "__")
	return server, tool, ok
}

// Edit is one change of a file shown as a diff.
type Edit struct {
	Old, New string
	Created  bool // a new file: there is no old text at all
}

// Diffs shows edits of one file; nothing if path is empty.
func Diffs(path string, edits ...Edit) []acp.ToolCallContent {
	if path == "" {
		return nil
	}
	var out []acp.ToolCallContent
	for _, e := range edits {
		if e.Created {
			out = append(out, acp.ToolDiffContent(path, e.New))
		} else {
			out = append(out, acp.ToolDiffContent(path, e.New, e.Old))
		}
	}
	return out
}

// UnifiedEdit is the old and the new text of a unified diff's hunks (the
// lines the diff shows, not the whole file).
func UnifiedEdit(diff string) Edit {
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
	return Edit{Old: o.String(), New: n.String()}
}

// Texts is a text block as tool call content, or nothing for "".
func Texts(s string) []acp.ToolCallContent {
	if s == "" {
		return nil
	}
	return []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(s))}
}

// Console shows a command's output as a console code block.
func Console(output string) []acp.ToolCallContent {
	if output == "" {
		return nil
	}
	return Texts(Fence(output, "console"))
}

// Fence wraps text in a code fence longer than any run of backticks in it.
func Fence(text, lang string) string {
	ticks := "```"
	for strings.Contains(text, ticks) {
		ticks += "`"
	}
	return ticks + lang + "\n" + strings.TrimSuffix(text, "\n") + "\n" + ticks
}

// At is the location of an absolute path (and a line, if > 0); ACP
// locations are absolute, so a relative path gives none.
func At(path string, line int) []acp.ToolCallLocation {
	if path == "" || !filepath.IsAbs(path) {
		return nil
	}
	loc := acp.ToolCallLocation{Path: path}
	if line > 0 {
		loc.Line = &line
	}
	return []acp.ToolCallLocation{loc}
}

// AbsPath resolves a path against dir: agents keep the model's relative
// paths, and ACP locations and diffs must be absolute.
func AbsPath(path, dir string) string {
	if path == "" || filepath.IsAbs(path) || dir == "" {
		return path
	}
	return filepath.Join(dir, path)
}

// RelPath shows a path under cwd relative to it.
func RelPath(path, cwd string) string {
	if path == "" || cwd == "" {
		return path
	}
	if rel, err := filepath.Rel(cwd, path); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return path
}

// LineRange is a title's " (from – to)" for a read of limit lines from
// offset.
func LineRange(offset, limit int) string {
	switch {
	case offset > 0 && limit > 0:
		return fmt.Sprintf(" (%d - %d)", offset, offset+limit-1)
	case offset > 0:
		return fmt.Sprintf(" (from line %d)", offset)
	}
	return ""
}

// Quote puts s in double quotes for a title.
func Quote(s string) string { return `"` + s + `"` }

// Prefixed returns prefix+s, or "" if s is empty.
func Prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// Capitalize upper-cases the first letter of s.
func Capitalize(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

// Truncate shows at most n bytes of a line an agent printed, for a log.
func Truncate(b []byte, n int) string {
	if len(b) <= n {
		return string(b)
	}
	for n > 0 && !utf8.RuneStart(b[n]) { // never half a rune
		n--
	}
	return string(b[:n]) + "…"
}

// FileRead shows a read of the file at path (absolute), from line offset
// for limit lines when they are given.
func FileRead(path, cwd string, offset, limit int) ToolInfo {
	return ToolInfo{Kind: acp.ToolKindRead, Title: "Read " + cmp.Or(RelPath(path, cwd), "file") + LineRange(offset, limit), Locations: At(path, offset)}
}

// FileEdit shows edits of the file at path (absolute): titled with verb
// and the path, with its location and a diff per edit.
func FileEdit(verb, path, cwd string, edits ...Edit) ToolInfo {
	return ToolInfo{Kind: acp.ToolKindEdit, Title: verb + cmp.Or(RelPath(path, cwd), "file"), Locations: At(path, 0), Content: Diffs(path, edits...)}
}

// InDir is a search title's " in <dir>", for the input's "path", or "".
func InDir(in Input, cwd string) string {
	if p := in.Str("path"); p != "" {
		return " in " + RelPath(p, cwd)
	}
	return ""
}

// PlanEntry is one entry of an agent's todo list or plan as an ACP plan
// entry. Agents spell statuses pending (or todo), in_progress (or
// inProgress, in-progress),
// completed and cancelled (shown as completed), and priorities high,
// medium and low (medium when absent).
func PlanEntry(content, status, priority string) acp.PlanEntry {
	e := acp.PlanEntry{Content: content, Priority: acp.PlanEntryPriorityMedium, Status: acp.PlanEntryStatusPending}
	switch status {
	case "in_progress", "inProgress", "in-progress":
		e.Status = acp.PlanEntryStatusInProgress
	case "completed", "cancelled":
		e.Status = acp.PlanEntryStatusCompleted
	}
	switch priority {
	case "high":
		e.Priority = acp.PlanEntryPriorityHigh
	case "low":
		e.Priority = acp.PlanEntryPriorityLow
	}
	return e
}

// Notice is a notice update (a provider's retry, a limit): severity is
// acp.NoticeSeverity*, title plain text, description optional. The bridge
// sends it only to a client that takes notices, as thought text
// ("title: description") to one that does not, and records it nowhere.
func Notice(severity acp.NoticeSeverity, title, description string) acp.SessionUpdate {
	n := &acp.SessionUpdateNotice{Severity: severity, Title: title}
	if description != "" {
		n.Description = &description
	}
	return acp.SessionUpdate{Notice: n}
}

// Compaction is a compaction update: id names the compaction in the
// session, status is acp.CompactionStatus*, summary (if not "") replaces
// the summary shown and errText (if not "") says why it failed. fallback
// is what a client that takes no compaction updates is sent instead (the
// agent's text or think tool call, as before), under agent.FallbackMeta.
// Unlike a notice, the bridge records a compaction, and replays it to each
// client as it would send it live.
func Compaction(id string, status acp.CompactionStatus, summary, errText string, fallback ...acp.SessionUpdate) acp.SessionUpdate {
	c := &acp.SessionCompactionUpdate{CompactionId: acp.CompactionId(id), Status: status}
	if summary != "" {
		c.Summary = []acp.ContentBlock{acp.TextBlock(summary)}
	}
	if errText != "" {
		c.Error = &errText
	}
	if len(fallback) > 0 {
		c.Meta = map[string]any{agent.FallbackMeta: fallback}
	}
	return acp.SessionUpdate{CompactionUpdate: c}
}

// SummaryChunk is text appended to compaction id's summary, with fallback
// (see Compaction) for a client that takes no compaction updates.
func SummaryChunk(id, text string, fallback ...acp.SessionUpdate) acp.SessionUpdate {
	c := &acp.SessionUpdateCompactionSummaryChunk{CompactionId: acp.CompactionId(id), Content: acp.TextBlock(text)}
	if len(fallback) > 0 {
		c.Meta = map[string]any{agent.FallbackMeta: fallback}
	}
	return acp.SessionUpdate{CompactionSummaryChunk: c}
}
