package fakeresponses

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
)

// FakeModels is the model catalog that WriteHome installs as
// model_catalog_json: codex 0.169.0's bundled gpt-5.5 entry with its slug
// renamed to "fake-model" (display name "Fake Model", efforts low, medium
// (the default), high and xhigh). With it model/list lists only
// fake-model, codex sends no "Model metadata … not found" warning, and it
// offers apply_patch as a freeform custom tool. The entry is codex's
// internal ModelInfo format: regenerate it from the new binary's bundled
// catalog whenever the pinned version changes.
//
//go:embed fake_models.json
var FakeModels []byte

// Model is the model the fake's CODEX_HOME selects.
const Model = "fake-model"

// HomeOptions are the choices WriteHome leaves open.
type HomeOptions struct {
	// ApprovalPolicy and SandboxMode are config.toml's approval_policy
	// and sandbox_mode ("never", "untrusted", "on-request";
	// "read-only", "workspace-write", "danger-full-access"). Empty omits
	// the key, so that codex's own defaults apply (as they would to a
	// user who has not set them): with neither, thread/start reports
	// approvalPolicy "on-request" and sandbox readOnly. Beware: codex
	// 0.169.0 exits at start-up on approval_policy = "untrusted" ("no
	// longer supported; remove this setting"), although thread/start and
	// turn/start still accept approvalPolicy "untrusted".
	ApprovalPolicy, SandboxMode string
	// Extra is raw TOML appended at the end of config.toml, after the
	// [features] table: start it with a table header, e.g.
	// "[tools.update_plan]\nenabled = true\n".
	Extra string
}

// Config is a config.toml that runs codex offline against the fake at
// baseURL (Server.URL), with its model catalog at catalog (an absolute
// path): the model fake-model of a custom provider "fake" (wire_api
// responses, its key from FAKE_API_KEY; no request or stream retries,
// else codex retries an HTTP error or a broken stream with backoff),
// analytics off, and the plugins, remote_plugin and apps features off
// (else codex git-clones openai/plugins and asks api.github.com at
// start-up).
func Config(baseURL, catalog string, opts HomeOptions) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# CODEX_HOME/config.toml for offline tests against a scripted fake Responses API (fakeresponses)\n")
	fmt.Fprintf(&b, "model = %s\n", tomlString(Model))
	fmt.Fprintf(&b, "model_provider = \"fake\"\n")
	if opts.ApprovalPolicy != "" {
		fmt.Fprintf(&b, "approval_policy = %s\n", tomlString(opts.ApprovalPolicy))
	}
	if opts.SandboxMode != "" {
		fmt.Fprintf(&b, "sandbox_mode = %s\n", tomlString(opts.SandboxMode))
	}
	fmt.Fprintf(&b, "model_catalog_json = %s\n", tomlString(catalog))
	b.WriteString(`
[model_providers.fake]
name = "Fake Responses"
`)
	fmt.Fprintf(&b, "base_url = %s\n", tomlString(baseURL))
	b.WriteString(`wire_api = "responses"
env_key = "FAKE_API_KEY"
request_max_retries = 0
stream_max_retries = 0
stream_idle_timeout_ms = 20000

[analytics]
enabled = false

# keep the binary offline: no curated-plugin git clone, GitHub API or apps connectors
[features]
plugins = false
remote_plugin = false
apps = false
`)
	if opts.Extra != "" {
		b.WriteString("\n" + strings.TrimRight(opts.Extra, "\n") + "\n")
	}
	return b.String()
}

// tomlString is s as a TOML basic string.
func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, "\\u%04X", r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// WriteHome makes codexHome (if needed) a CODEX_HOME for the fake at
// baseURL: config.toml (see Config) and fake_models.json (FakeModels).
func WriteHome(codexHome, baseURL string, opts HomeOptions) error {
	abs, err := filepath.Abs(codexHome)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}
	catalog := filepath.Join(abs, "fake_models.json")
	if err := os.WriteFile(catalog, FakeModels, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(abs, "config.toml"), []byte(Config(baseURL, catalog, opts)), 0o644)
}

// Home makes a temporary HOME for a test, with HOME/tmp (for TMPDIR) and
// the CODEX_HOME HOME/.codex written by WriteHome for the fake at baseURL,
// and returns both. Run codex with Env(home, codexHome).
func Home(t testing.TB, baseURL string, opts HomeOptions) (home, codexHome string) {
	t.Helper()
	home = t.TempDir()
	codexHome = filepath.Join(home, ".codex")
	if err := os.Mkdir(filepath.Join(home, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteHome(codexHome, baseURL, opts); err != nil {
		t.Fatal(err)
	}
	return home, codexHome
}

// Env is the environment for running codex against the fake with home as
// HOME (TMPDIR is home/tmp, which must exist: codex writes lock files and
// helper directories there) and codexHome as CODEX_HOME (see WriteHome).
// Only PATH is taken from os.Environ. Set cmd.Dir to the workspace.
func Env(home, codexHome string) []string {
	return []string{
		"HOME=" + home,
		"TMPDIR=" + filepath.Join(home, "tmp"),
		"CODEX_HOME=" + codexHome,
		"FAKE_API_KEY=dummy",
		"RUST_LOG=error",
		"PATH=" + os.Getenv("PATH"),
	}
}

// InstalledBin is where scripts/install-tools.sh puts the native codex
// binary for this platform under the repository root: inside the npm
// package's platform-specific optional dependency, which the npm wrapper
// (bin/codex.js) only execs. "" on a platform codex has no binary for.
func InstalledBin(repoRoot string) string {
	var pkg, triple string
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		pkg, triple = "codex-linux-x64", "x86_64-unknown-linux-musl"
	case "linux/arm64":
		pkg, triple = "codex-linux-arm64", "aarch64-unknown-linux-musl"
	case "darwin/amd64":
		pkg, triple = "codex-darwin-x64", "x86_64-apple-darwin"
	case "darwin/arm64":
		pkg, triple = "codex-darwin-arm64", "aarch64-apple-darwin"
	default:
		return ""
	}
	return filepath.Join(repoRoot, ".tools", "codex", "node_modules", "@openai", pkg, "vendor", triple, "bin", "codex")
}

// RepoRoot is the nearest directory at or above dir that holds a go.mod.
func RepoRoot(dir string) (string, error) { return toolbin.RepoRoot(dir) }

// CodexBin finds the real codex binary for a test: $CODEX_BIN, else
// InstalledBin under the repository root (see toolbin.Find).
func CodexBin(t testing.TB) string {
	t.Helper()
	return toolbin.Find(t, "codex", "CODEX_BIN", InstalledBin)
}

// Run runs a package's tests (m.Run) and returns their exit code, then
// removes what codex's Linux sandbox left in /tmp, whatever TMPDIR says:
// the directory it mounts over codex's own daemon directory,
// /tmp/codex-daemon-UID, made empty by the first sandboxed command. It is
// removed only if the tests made it, and only if it is empty.
func Run(m interface{ Run() int }) int {
	dir := fmt.Sprintf("/tmp/codex-daemon-%d", os.Getuid())
	_, err := os.Stat(dir)
	there := err == nil
	code := m.Run()
	if !there {
		os.Remove(dir) // fails, as it should, if something is in it
	}
	return code
}
