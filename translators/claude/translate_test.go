package claude

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

var update = flag.Bool("update", false, "rewrite the acp.jsonl sections of testdata/golden/*.txtar")

// TestTranslator_golden feeds each file's claude.jsonl through a fresh
// Translator and compares every update, and each turn's result, with
// acp.jsonl.
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
			got := translateAll(t, section(ar, "claude.jsonl"))
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

// TestTranslator_recorded does the same for the streams the project
// records itself (scripts/record-claude.sh): testdata/recorded/X.jsonl
// in, X.acp expected.
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
			got := translateAll(t, withoutControl(in))
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

// withoutControl drops control messages, which the session handles.
func withoutControl(in []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		if !bytes.Contains(l[:min(len(l), 40)], []byte(`"type":"control_`)) {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

// translateAll renders what a session would see: each update, and for
// each result line a summary of the turn's end.
func translateAll(t *testing.T, in []byte) string {
	tr := NewTranslator("/home/dev/project")
	var b strings.Builder
	for i, line := range bytes.Split(bytes.TrimSpace(in), []byte("\n")) {
		out, err := tr.Translate(line)
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
		if out.Mode != "" || out.Skipped != "" {
			b.WriteString(meta(map[string]any{"mode": out.Mode, "skipped": out.Skipped}))
		}
		if r := out.Result; r != nil {
			b.WriteString(meta(map[string]any{"result": map[string]any{"stopReason": r.StopReason, "err": r.Err,
				"auth": r.AuthRequired, "aborted": r.Aborted, "context": r.Context, "window": r.Window, "cost": r.CostUSD}}))
		}
	}
	return b.String()
}

func meta(m map[string]any) string {
	for k, v := range m {
		if v == "" {
			delete(m, k)
		}
	}
	j, _ := json.Marshal(map[string]any{"#": m})
	return string(j) + "\n"
}

func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

// FuzzTranslate: no input makes the translator panic, and whatever updates
// it returns can be encoded.
func FuzzTranslate(f *testing.F) {
	files, _ := filepath.Glob("testdata/golden/*.txtar")
	for _, file := range files {
		ar, _ := txtar.ParseFile(file)
		for _, l := range bytes.Split(section(ar, "claude.jsonl"), []byte("\n")) {
			if len(l) < 4096 {
				f.Add(l)
			}
		}
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		tr := NewTranslator("/w")
		for range 2 { // twice: the second sighting of a tool_use takes another path
			out, err := tr.Translate(line)
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
