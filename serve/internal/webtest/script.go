package webtest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
)

// The pinned npm libraries the web edges are checked with; the tests run
// them from node scripts (Scripts) against an httptest server.
var (
	AISDK = Lib{name: "ai (the AI SDK)", env: "AI_SDK_PACKAGE", dir: "ai-sdk", pkg: "ai", version: "7.0.173"}
	AGUI  = Lib{name: "@ag-ui/client", env: "AG_UI_PACKAGE", dir: "ag-ui", pkg: "@ag-ui/client", version: "1.0.0"}
)

// Lib is an npm library scripts/install-tools.sh installs into .tools.
type Lib struct {
	name, env, dir, pkg, version string
}

// Modules is the node_modules the library is installed in (its
// package.json's, or that $env names), checked to be the pinned version.
// Like the agent CLIs' tests, it skips loudly when it is missing, and
// fails instead with ACPBRIDGE_REQUIRE_E2E=1.
func (l Lib) Modules(t *testing.T) string {
	t.Helper()
	pj := toolbin.Find(t, l.name, l.env, func(root string) string {
		return filepath.Join(root, ".tools", l.dir, "node_modules", l.pkg, "package.json")
	})
	b, err := os.ReadFile(pj)
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ Version string }
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", pj, err)
	}
	toolbin.CheckVersion(t, l.name, p.Version, l.version)
	mods := filepath.Dir(filepath.Dir(pj))
	if filepath.Base(mods) != "node_modules" { // a scoped package
		mods = filepath.Dir(mods)
	}
	return mods
}

// NodeBin is node, skipping (or failing, with ACPBRIDGE_REQUIRE_E2E=1)
// when there is none.
func NodeBin(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("ACPBRIDGE_REQUIRE_E2E") == "1" {
			t.Fatal("node is not on PATH and ACPBRIDGE_REQUIRE_E2E=1")
		}
		t.Skip("SKIPPED: node is not on PATH")
	}
	return p
}

// RunScript runs script (of Scripts) with node, the library's
// node_modules beside it, against url; it fails the test with the
// script's output unless the script exits 0.
func RunScript(t *testing.T, lib Lib, script, url string, env ...string) {
	t.Helper()
	node, mods := NodeBin(t), lib.Modules(t)
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(Scripts(), "*.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in %s: %v", Scripts(), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, script))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"WEB_URL=" + url}, env...)...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("node %s:\n%s", script, out)
	if err != nil {
		t.Fatalf("node %s: %v", script, err)
	}
}

// EnvOf is the value of name in env (NAME=value lines), or "".
func EnvOf(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// Scripts is the directory of the node scripts RunScript runs (this
// package's testdata), and of lib.mjs, what they share.
func Scripts() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata")
}
