package edgev2

import (
	"encoding/json"
	"testing"
)

// v1's diff becomes v2's: what changed, and Git's patch text with
// absolute paths; a file without old text was added.
func TestV2Diff(t *testing.T) {
	for _, c := range []struct {
		name string
		v1   map[string]any
		want string
	}{{
		"modified",
		map[string]any{"type": "diff", "path": "/w/a b.txt", "oldText": "one\ntwo\n", "newText": "one\n2\n"},
		`{"changes":[{"fileType":"text","operation":"modify","path":"/w/a b.txt"}],"patch":{"format":"git_patch","text":"diff --git /w/a b.txt /w/a b.txt\n--- /w/a b.txt\n+++ /w/a b.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"},"type":"diff"}`,
	}, {
		"added, no newline at its end",
		map[string]any{"type": "diff", "path": "/w/new\".go", "newText": "package x"},
		`{"changes":[{"fileType":"text","operation":"add","path":"/w/new\".go"}],"patch":{"format":"git_patch","text":"diff --git \"/w/new\\\".go\" \"/w/new\\\".go\"\nnew file mode 100644\n--- /dev/null\n+++ \"/w/new\\\".go\"\n@@ -0,0 +1 @@\n+package x\n\\ No newline at end of file\n"},"type":"diff"}`,
	}, {
		"unchanged: no patch",
		map[string]any{"type": "diff", "path": "/w/same", "oldText": "x\n", "newText": "x\n"},
		`{"changes":[{"fileType":"text","operation":"modify","path":"/w/same"}],"type":"diff"}`,
	}} {
		b, err := json.Marshal(v2Diff(c.v1))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.want {
			t.Errorf("%s:\ngot  %s\nwant %s", c.name, b, c.want)
		}
	}
}
