package benchkit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot is the acpbridge repository holding the working directory.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/acpbridge/acpbridge")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("not inside the acpbridge repository (from %s)", dir)
		}
	}
}

// Executable returns the absolute path of the file at path, which must
// exist, and that path after symlinks.
func Executable(path string) (abs, real string, err error) {
	if abs, err = filepath.Abs(path); err != nil {
		return "", "", err
	}
	if _, err := os.Stat(abs); err != nil {
		return "", "", err
	}
	real, _ = filepath.EvalSymlinks(abs)
	return abs, real, nil
}

// CommandLine runs argv with the environment env and returns the first
// line of its output, or its error in parentheses.
func CommandLine(env []string, argv ...string) string {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		return "(" + err.Error() + ")"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// PackageVersion is the version in the package.json of the directory up
// (a relative path) from that of bin, after symlinks; "?" if there is
// none.
func PackageVersion(bin, up string) string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "?"
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(real), up, "package.json"))
	if err != nil {
		return "?"
	}
	var p struct{ Version string }
	if json.Unmarshal(b, &p) != nil || p.Version == "" {
		return "?"
	}
	return p.Version
}

// EnvOr is the environment variable name, or def if it is empty.
func EnvOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// FirstLine is the first line of s, trimmed, cut to n bytes with "…".
func FirstLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// indent puts pre before each line of s.
func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}
