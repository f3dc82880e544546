package edgev2

import (
	"fmt"
	"strings"

	udiff "github.com/aymanbagabas/go-udiff"
)

// v1's diff content is a file's old and new text ({"type":"diff","path",
// "oldText","newText"}); v2's is what changed ("changes": the path and
// its operation) and a patch to render ("patch": Git's patch text with
// absolute paths). toV2Diffs makes the one from the other, in a tool
// call's content.

// toV2Diffs rewrites the diff items of an encoded update's content.
func toV2Diffs(m map[string]any) {
	content, _ := m["content"].([]any)
	for i, c := range content {
		if item, ok := c.(map[string]any); ok && item["type"] == "diff" {
			content[i] = v2Diff(item)
		}
	}
}

// v2Diff is v1's diff item as v2's: a file with no old text was added,
// any other modified.
func v2Diff(item map[string]any) map[string]any {
	path, _ := item["path"].(string)
	newText, _ := item["newText"].(string)
	oldText, had := item["oldText"].(string)
	op := "modify"
	if !had {
		op = "add"
	}
	out := map[string]any{"type": "diff", "changes": []any{map[string]any{"operation": op, "path": path, "fileType": "text"}}}
	if patch := gitPatch(path, oldText, newText, !had); patch != "" {
		out["patch"] = map[string]any{"format": "git_patch", "text": patch}
	}
	if meta, ok := item["_meta"]; ok {
		out["_meta"] = meta
	}
	return out
}

// gitPatch is the change of the file at path from old to new as Git's
// patch text with absolute paths and no a/ and b/ prefixes, as v2's
// git_patch wants; "" when nothing changed (or the diff can't be made).
func gitPatch(path, old, new string, added bool) string {
	name := gitQuote(path)
	from := name
	if added {
		from = "/dev/null"
	}
	hunks, err := udiff.ToUnified(from, name, old, udiff.Lines(old, new), udiff.DefaultContextLines)
	if err != nil || hunks == "" {
		return ""
	}
	head := "diff --git " + name + " " + name + "\n"
	if added {
		head += "new file mode 100644\n"
	}
	return head + hunks
}

// gitQuote is a path as Git writes it in a patch: in double quotes, with
// C escapes, when it holds a quote, a backslash or a control character.
func gitQuote(path string) string {
	if !strings.ContainsFunc(path, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 || r == 0x7f }) {
		return path
	}
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range path {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\%03o`, r)
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
