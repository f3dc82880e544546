package bridge

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
)

// A cwd of the other system's family is refused as invalid params, saying
// so, and nothing is written: C:\work on Unix, /work on Windows.
func TestNew_cwdOfTheOtherSystemIsRefused(t *testing.T) {
	cwds, want := []string{`C:\work`, `c:/work`, `\\server\share\work`}, "is a Windows path; this acpbridge runs on "+runtime.GOOS
	if runtime.GOOS == "windows" {
		cwds, want = []string{"/work", "/home/u/w"}, "is a POSIX path; this acpbridge runs on windows"
	}
	dir := t.TempDir()
	m, _, _ := newConfigManager(t, dir)
	before := files(t, dir)
	for _, cwd := range cwds {
		_, err := m.New(context.Background(), Setup{Cwd: cwd})
		if !errors.Is(err, agent.ErrInvalidParams) || !strings.Contains(err.Error(), want) {
			t.Errorf("new in %s: %v; want invalid params saying %q", cwd, err, want)
		}
		_, err = m.Load(context.Background(), newID(), Setup{Cwd: cwd})
		if !errors.Is(err, agent.ErrInvalidParams) || !strings.Contains(err.Error(), want) {
			t.Errorf("load in %s: %v; want invalid params saying %q", cwd, err, want)
		}
	}
	if after := files(t, dir); after != before {
		t.Errorf("the store changed: %q, then %q", before, after)
	}
}

func TestNotAbs(t *testing.T) {
	for _, tc := range [][3]string{
		{`C:\work`, "linux", "is a Windows path; this acpbridge runs on linux"},
		{`\\srv\share`, "darwin", "is a Windows path; this acpbridge runs on darwin"},
		{"/work", "windows", "is a POSIX path; this acpbridge runs on windows"},
		{"work", "linux", "is not an absolute path"},
		{"work", "windows", "is not an absolute path"},
		{`C:work`, "windows", "is not an absolute path"},
	} {
		if got := notAbs(tc[0], tc[1]); got != tc[2] {
			t.Errorf("notAbs(%q, %s) = %q; want %q", tc[0], tc[1], got, tc[2])
		}
	}
}

// files lists what is under dir.
func files(t *testing.T, dir string) string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		names = append(names, path)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(names, " ")
}
