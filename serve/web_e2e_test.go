package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// The pinned npm libraries the web edges are checked with; the tests run
// them from node scripts (testdata/web) against an httptest server.
var (
	aiSDK = webLib{name: "ai (the AI SDK)", env: "AI_SDK_PACKAGE", dir: "ai-sdk", pkg: "ai", version: "7.0.173"}
	agUI  = webLib{name: "@ag-ui/client", env: "AG_UI_PACKAGE", dir: "ag-ui", pkg: "@ag-ui/client", version: "1.0.0"}
)

// webLib is an npm library scripts/install-tools.sh installs into .tools.
type webLib struct {
	name, env, dir, pkg, version string
}

// modules is the node_modules the library is installed in (its
// package.json's, or that $env names), checked to be the pinned version.
// Like the agent CLIs' tests, it skips loudly when it is missing, and
// fails instead with ACPBRIDGE_REQUIRE_E2E=1.
func (l webLib) modules(t *testing.T) string {
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

// nodeBin is node, skipping (or failing, with ACPBRIDGE_REQUIRE_E2E=1)
// when there is none.
func nodeBin(t *testing.T) string {
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

// runWebScript runs testdata/web/script with node, the library's
// node_modules beside it, against url; it fails the test with the
// script's output unless the script exits 0.
func runWebScript(t *testing.T, lib webLib, script, url string, env ...string) {
	t.Helper()
	node, mods := nodeBin(t), lib.modules(t)
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join("testdata", "web", "*.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts in testdata/web: %v", err)
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

// The real claude and codex CLIs on their fake models (as the /acp tests
// run them, servetest.RealAgents) through each web edge with its own client library:
// a command the agent asks permission for, approved, its output and the
// answer in the rest of the turn; every chunk or event passes the
// library's checks.
func TestWebE2E_realAgents(t *testing.T) {
	for _, name := range []string{"claude", "codex"} {
		t.Run(name, func(t *testing.T) {
			a := servetest.RealAgents[name]
			wb := &webBridge{connect: servetest.BridgeConnectorOn(t, a.Backend(t))}
			ws := startWebServer(t, wb, "")
			env := []string{"WEB_PROMPT=" + envOf(a.Env, "ACP_E2E_PROMPT"), "WEB_MODE=" + envOf(a.Env, "ACP_E2E_MODE")}
			t.Run("aisdk", func(t *testing.T) { runWebScript(t, aiSDK, "real.mjs", ws.URL, append(env, "WEB_EDGE=aisdk")...) })
			t.Run("agui", func(t *testing.T) { runWebScript(t, agUI, "real.mjs", ws.URL, append(env, "WEB_EDGE=agui")...) })
		})
	}
}

// envOf is the value of name in env (NAME=value lines), or "".
func envOf(env []string, name string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// Behind acpbridge serve's own Server (its token, Host and Origin guard,
// its shutdown), as its routes mount the edges: the AI SDK's chat
// core and AG-UI's HttpAgent run their exchanges with the token, and a
// request without it is refused.
func TestWebE2E_behindTheServer(t *testing.T) {
	wb := startWebBridge(t)
	s, stderr := newServer(t, Options{Connector: wb.connect, StateDir: t.TempDir()})
	r := start(t, s, stderr)

	resp, _ := r.do(t, "GET", "/v1/sessions", nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /v1/sessions without the token: %d, want 401", resp.StatusCode)
	}
	runWebScript(t, aiSDK, "aisdk_chat.mjs", r.URL(), "WEB_TOKEN="+r.Token())
	runWebScript(t, agUI, "agui.mjs", r.URL(), "WEB_TOKEN="+r.Token())
	if err := r.stop(); err != nil {
		t.Errorf("the server's shutdown: %v", err)
	}
}
