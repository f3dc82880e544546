package codex

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected outputs of the golden tests")

// TestTranslator_golden feeds each file's codex.jsonl (one notification
// per line) through a fresh Translator and compares with acp.jsonl.
func TestTranslator_golden(t *testing.T) {
	files, _ := filepath.Glob("testdata/golden/*.txtar")
	if len(files) == 0 {
		t.Fatal("no golden files")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := translateAll(t, section(ar, "codex.jsonl"))
			if *update {
				for i := range ar.Files {
					if ar.Files[i].Name == "acp.jsonl" {
						ar.Files[i].Data = []byte(got)
					}
				}
				os.WriteFile(file, txtar.Format(ar), 0o644)
				return
			}
			if diff := cmp.Diff(string(section(ar, "acp.jsonl")), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestTranslator_recorded does the same for the app-server streams the
// project records itself (scripts/record-codex.sh): the notifications of
// testdata/recorded/X.jsonl in, X.acp expected.
func TestTranslator_recorded(t *testing.T) {
	files, _ := filepath.Glob("testdata/recorded/*.jsonl")
	if len(files) == 0 {
		t.Fatal("no recordings")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".jsonl"), func(t *testing.T) {
			in, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := translateAll(t, notificationsOf(in))
			want := strings.TrimSuffix(file, ".jsonl") + ".acp"
			if *update {
				os.WriteFile(want, []byte(got), 0o644)
				return
			}
			exp, _ := os.ReadFile(want)
			if diff := cmp.Diff(string(exp), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// notificationsOf keeps the notifications of a recorded server stream.
func notificationsOf(in []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(l, &m) == nil && m.Method != "" && m.ID == nil {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// notification is one line of a golden input.
type notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

func translateAll(t *testing.T, in []byte) string {
	tr := NewTranslator("/home/dev/project")
	var b strings.Builder
	for i, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		var n notification
		if err := json.Unmarshal(line, &n); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		out, err := tr.Translate(n.Method, n.Params)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		for _, u := range out.Updates {
			j, err := json.Marshal(u)
			if err != nil {
				t.Fatalf("line %d: %v", i+1, err)
			}
			b.Write(j)
			b.WriteByte('\n')
		}
		if out.End != nil || out.Err != "" {
			j, _ := json.Marshal(map[string]any{"#": map[string]any{"end": out.End, "err": out.Err}})
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// FuzzTranslate: nothing makes the translator panic, and whatever updates
// it returns encode.
func FuzzTranslate(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*.txtar")
	for _, file := range files {
		ar, _ := txtar.ParseFile(file)
		for _, l := range bytes.Split(section(ar, "codex.jsonl"), []byte("\n")) {
			var n notification
			if json.Unmarshal(l, &n) == nil {
				f.Add(n.Method, []byte(n.Params))
			}
		}
	}
	f.Fuzz(func(t *testing.T, method string, params []byte) {
		tr := NewTranslator("/w")
		for range 2 {
			out, err := tr.Translate(method, params)
			if err != nil {
				return
			}
			for _, u := range out.Updates {
				if _, err := json.Marshal(u); err != nil {
					t.Fatalf("update does not encode: %v", err)
				}
			}
		}
	})
}
