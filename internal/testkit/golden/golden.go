// Package golden runs golden-file tests: an input in, rendered output
// compared with what the file expects, or written there with -update.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/txtar"
)

var update = flag.Bool("update", false, "rewrite the expected output of the golden tests")

// Section is one named part of an expected output.
type Section struct {
	Name string
	Data string
}

// Txtar runs render on the in section of every txtar file matching
// pattern, as a subtest per file, and compares each section it returns
// with the file's section of that name. With -update it writes them
// instead, after the in section, dropping any others.
func Txtar(t *testing.T, pattern, in string, render func(t *testing.T, in []byte) []Section) {
	t.Helper()
	for _, file := range glob(t, pattern) {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txtar"), func(t *testing.T) {
			ar, err := txtar.ParseFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, section(ar, in))
			if *update {
				ar.Files = append([]txtar.File{{Name: in, Data: section(ar, in)}}, files(got)...)
				write(t, file, txtar.Format(ar))
				return
			}
			for _, s := range got {
				if diff := cmp.Diff(string(section(ar, s.Name)), s.Data); diff != "" {
					t.Errorf("%s (-want +got):\n%s", s.Name, diff)
				}
			}
		})
	}
}

// Pairs runs render on every file matching pattern (X.jsonl, say) and
// compares the result with the file X+ext beside it.
func Pairs(t *testing.T, pattern, ext string, render func(t *testing.T, in []byte) string) {
	t.Helper()
	for _, file := range glob(t, pattern) {
		name := strings.TrimSuffix(file, filepath.Ext(file))
		t.Run(filepath.Base(name), func(t *testing.T) {
			in, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			got := render(t, in)
			if *update {
				write(t, name+ext, []byte(got))
				return
			}
			want, _ := os.ReadFile(name + ext)
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func glob(t *testing.T, pattern string) []string {
	t.Helper()
	files, _ := filepath.Glob(pattern)
	if len(files) == 0 {
		t.Fatalf("no golden files match %s", pattern)
	}
	return files
}

func section(ar *txtar.Archive, name string) []byte {
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data
		}
	}
	return nil
}

func files(ss []Section) []txtar.File {
	out := make([]txtar.File, len(ss))
	for i, s := range ss {
		out[i] = txtar.File{Name: s.Name, Data: []byte(s.Data)}
	}
	return out
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Read returns the section name of the txtar file, for seeding fuzzers.
func Read(file, name string) []byte {
	ar, err := txtar.ParseFile(file)
	if err != nil {
		return nil
	}
	return section(ar, name)
}
