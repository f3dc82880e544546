package agentkit

import (
	"cmp"
	"strconv"
	"strings"

	"github.com/coder/acp-go-sdk"
)

// PatchFile is one file operation of an apply_patch patch.
type PatchFile struct {
	Path   string // as the patch names it
	Op     string // "add", "delete" or "update"
	MoveTo string // an update's new path, if it renames
	Edit   Edit   // the lines it adds and removes (the hunks' lines)
}

// ParsePatch reads a patch in the apply_patch format that Codex's model
// writes and other agents (Amp, OpenCode) took up:
//
//	*** Begin Patch
//	*** Add File: a.txt
//	+line
//	*** Update File: b.txt
//	@@ context
//	-old
//	+new
//	*** Delete File: c.txt
//	*** End Patch
//
// Lines it does not understand are skipped: it is for showing a patch, not
// for applying one.
func ParsePatch(patch string) []PatchFile {
	var files []PatchFile
	var cur *PatchFile
	var o, n strings.Builder
	flush := func() {
		if cur != nil {
			cur.Edit = Edit{Old: o.String(), New: n.String(), Created: cur.Op == "add"}
			files = append(files, *cur)
		}
		cur = nil
		o.Reset()
		n.Reset()
	}
	for _, line := range strings.SplitAfter(patch, "\n") {
		body := strings.TrimRight(line, "\r\n")
		switch {
		case strings.HasPrefix(body, "*** Add File: "):
			flush()
			cur = &PatchFile{Path: strings.TrimPrefix(body, "*** Add File: "), Op: "add"}
		case strings.HasPrefix(body, "*** Update File: "):
			flush()
			cur = &PatchFile{Path: strings.TrimPrefix(body, "*** Update File: "), Op: "update"}
		case strings.HasPrefix(body, "*** Delete File: "):
			flush()
			cur = &PatchFile{Path: strings.TrimPrefix(body, "*** Delete File: "), Op: "delete"}
		case cur == nil, strings.HasPrefix(body, "@@"), strings.HasPrefix(body, "*** "):
			if cur != nil && strings.HasPrefix(body, "*** Move to: ") {
				cur.MoveTo = strings.TrimPrefix(body, "*** Move to: ")
			}
		case body == "":
		case body[0] == '+':
			n.WriteString(line[1:])
		case body[0] == '-':
			o.WriteString(line[1:])
		case body[0] == ' ':
			o.WriteString(line[1:])
			n.WriteString(line[1:])
		}
	}
	flush()
	return files
}

// PatchEdit shows an apply_patch patch: one location and diff per file it
// touches, titled by the one file or the number of files.
func PatchEdit(patch, cwd string) ToolInfo {
	files := ParsePatch(patch)
	info := ToolInfo{Kind: acp.ToolKindEdit, Title: "Apply patch"}
	for _, f := range files {
		path := AbsPath(cmp.Or(f.MoveTo, f.Path), cwd)
		info.Locations = append(info.Locations, At(path, 0)...)
		if f.Op != "delete" {
			info.Content = append(info.Content, Diffs(path, f.Edit)...)
		}
	}
	switch {
	case len(files) == 1 && files[0].Op == "add":
		info.Title = "Write " + RelPath(AbsPath(files[0].Path, cwd), cwd)
	case len(files) == 1 && files[0].Op == "delete":
		info.Title = "Delete " + RelPath(AbsPath(files[0].Path, cwd), cwd)
	case len(files) == 1:
		info.Title = "Edit " + RelPath(AbsPath(files[0].Path, cwd), cwd)
	case len(files) > 1:
		info.Title = "Edit " + strconv.Itoa(len(files)) + " files"
	}
	return info
}
