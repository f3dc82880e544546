// Package toolbin finds the pinned agent CLIs that end-to-end tests run
// (and the npm libraries their Node scripts import: NodeModules), as
// scripts/install-tools.sh installs them under the repository's .tools,
// or the ones their *_BIN variables name: scripts/test.sh --latest points
// those at the newest CLIs, in .tools-latest, and sets ACPBRIDGE_LATEST=1
// (see Latest).
package toolbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Find returns the CLI for a test: the path in $env if set, else
// installed(the repository root). It skips the test, loudly, when there is
// none or with -short, and fails it instead with ACPBRIDGE_REQUIRE_E2E=1.
// name says which CLI, for the messages.
func Find(t testing.TB, name, env string, installed func(repoRoot string) string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED: real " + name + " tests do not run with -short")
	}
	if p := os.Getenv(env); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("env %s=%s: %v", env, p, err)
		}
		logReal(t, name, p)
		return p
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := RepoRoot(wd)
	if err != nil {
		t.Fatal(err)
	}
	p := installed(root)
	if p != "" {
		if _, err := os.Stat(p); err == nil {
			logReal(t, name, p)
			return p
		}
	}
	if os.Getenv("ACPBRIDGE_REQUIRE_E2E") == "1" {
		t.Fatalf("%s is not installed at %q and ACPBRIDGE_REQUIRE_E2E=1: run scripts/install-tools.sh (or set %s)", name, p, env)
	}
	t.Skip("SKIPPED: " + name + " is not installed; run scripts/install-tools.sh or set " + env)
	return ""
}

// Latest reports whether the tests run the newest CLIs the registry
// serves rather than the pinned ones (scripts/test.sh --latest sets
// ACPBRIDGE_LATEST=1): a test that checks a CLI's pinned version then
// accepts another.
func Latest() bool { return os.Getenv("ACPBRIDGE_LATEST") == "1" }

// CheckVersion fails the test unless got is the pinned version want (got
// may go on after it, as "2.1.197 (Claude Code)" does), or, in the newest
// lane (Latest), any version at all. name says which CLI.
func CheckVersion(t testing.TB, name, got, want string) {
	t.Helper()
	got = strings.TrimSpace(got)
	if Latest() && got != "" {
		t.Logf("toolbin: %s version %q (the newest lane; pinned %s)", name, got, want)
		return
	}
	if !strings.HasPrefix(got, want) {
		t.Errorf("%s version %q, want %s", name, got, want)
	}
}

// logReal says which real CLI a test runs, in the words
// scripts/testreport counts.
func logReal(t testing.TB, name, path string) {
	t.Helper()
	t.Logf("toolbin: real %s CLI at %s", name, path)
}

// RepoRoot is the nearest directory at or above dir that holds a go.mod.
func RepoRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("no go.mod at or above %s", dir)
		}
		dir = up
	}
}

// NodeModules returns what a test needs to run a Node script that imports
// npm packages scripts/install-tools.sh installed: node (from PATH), and a
// new directory under t.TempDir() whose node_modules links to
// .tools/<dir>/node_modules (or to $env/node_modules when env is set), for
// the script to be copied into (Node's import looks for packages beside
// the script, not in NODE_PATH). pkg is a package of the installation,
// whose package.json must be there. It skips and fails as Find does.
func NodeModules(t testing.TB, name, env, dir, pkg string) (node, scriptDir string) {
	t.Helper()
	installed := Find(t, name, env, func(root string) string { return filepath.Join(root, ".tools", dir) })
	if _, err := os.Stat(filepath.Join(installed, "node_modules", pkg, "package.json")); err != nil {
		t.Fatalf("%s: %v (run scripts/install-tools.sh)", name, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("ACPBRIDGE_REQUIRE_E2E") == "1" {
			t.Fatalf("node is not on PATH and ACPBRIDGE_REQUIRE_E2E=1: %v", err)
		}
		t.Skip("SKIPPED: node is not on PATH; " + name + " needs it")
	}
	scriptDir = t.TempDir()
	if err := os.Symlink(filepath.Join(installed, "node_modules"), filepath.Join(scriptDir, "node_modules")); err != nil {
		t.Fatalf("linking %s's node_modules: %v", name, err)
	}
	return node, scriptDir
}
