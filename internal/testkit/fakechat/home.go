package fakechat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
)

// The provider and model that Config sets up.
const (
	Provider = "fake"            // the provider id
	Model    = "fake-model"      // the model id
	ModelRef = "fake/fake-model" // Provider/Model, as opencode.json's "model" names it
)

// deadRegistry is an npm registry URL where nothing listens. At instance
// bootstrap OpenCode runs a background `npm install` of
// @opencode-ai/plugin into each config directory; pointed here it gives
// up after two connection attempts, silently, and everything else works
// without the plugin.
const deadRegistry = "http://127.0.0.1:9/"

// Config is the opencode.json for the fake at baseURL (Server.URL, plus a
// per-test prefix if wanted): the provider "fake" (the bundled
// @ai-sdk/openai-compatible, options.baseURL baseURL+"/v1") with the one
// model fake-model, which is both model and small_model (so titles come
// from the fake too), can call tools, reasons, and takes images
// (modalities.input "image"; without it OpenCode replaces an image by an
// error text). enabled_providers hides every other provider, autoupdate
// is off and sharing disabled. It has no "permission" block: OpenCode
// then allows everything, and a bridge installs its own ask rules per
// session.
func Config(baseURL string) []byte {
	cfg := map[string]any{
		"$schema":           "https://opencode.ai/config.json",
		"model":             ModelRef,
		"small_model":       ModelRef,
		"autoupdate":        false,
		"share":             "disabled",
		"enabled_providers": []string{Provider},
		"provider": map[string]any{
			Provider: map[string]any{
				"npm":  "@ai-sdk/openai-compatible",
				"name": "Fake (scripted)",
				"options": map[string]any{
					"baseURL": baseURL + "/v1",
					"apiKey":  "dummy",
				},
				"models": map[string]any{
					Model: map[string]any{
						"name":       "Fake Model",
						"tool_call":  true,
						"reasoning":  true,
						"attachment": true,
						"limit":      map[string]any{"context": 128000, "output": 4096},
						"modalities": map[string]any{"input": []string{"text", "image"}, "output": []string{"text"}},
					},
				},
			},
		},
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		panic(err) // cannot happen: the map holds only JSON values
	}
	return append(b, '\n')
}

// ConfigPath is where WriteHome puts the opencode.json in home: at its
// top, which is none of the places OpenCode looks for a config itself,
// so it is read only through OPENCODE_CONFIG.
func ConfigPath(home string) string { return filepath.Join(home, "opencode.json") }

// WriteHome makes home (if needed) a HOME for running OpenCode against the
// fake at baseURL: the XDG directories Env names, tmp (TMPDIR), the
// opencode.json of Config at ConfigPath(home), and an .npmrc whose
// registry is a dead local port.
func WriteHome(home, baseURL string) error {
	for _, d := range xdgDirs(home) {
		if err := os.MkdirAll(d[1], 0o755); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Join(home, "tmp"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(home, ".npmrc"), []byte("registry="+deadRegistry+"\n"), 0o644); err != nil {
		return err
	}
	return os.WriteFile(ConfigPath(home), Config(baseURL), 0o644)
}

// Home makes a temporary HOME for a test with WriteHome for the fake at
// baseURL and returns it. Run OpenCode with Env(home, ConfigPath(home)).
func Home(t testing.TB, baseURL string) string {
	t.Helper()
	home := t.TempDir()
	if err := WriteHome(home, baseURL); err != nil {
		t.Fatal(err)
	}
	return home
}

// xdgDirs are the XDG base directories under home, as {variable, path}.
func xdgDirs(home string) [][2]string {
	return [][2]string{
		{"XDG_CONFIG_HOME", filepath.Join(home, ".config")},
		{"XDG_DATA_HOME", filepath.Join(home, ".local", "share")},
		{"XDG_CACHE_HOME", filepath.Join(home, ".cache")},
		{"XDG_STATE_HOME", filepath.Join(home, ".local", "state")},
	}
}

// Env is the environment for running OpenCode offline with home as HOME
// (see WriteHome): the XDG base directories under it (OpenCode keeps its
// SQLite database, logs and snapshots in XDG_DATA_HOME/opencode), TMPDIR
// home/tmp, OPENCODE_CONFIG configPath (omitted when ""), the switches
// that stop OpenCode's own network traffic (models.dev catalog,
// autoupdate, sharing, LSP downloads, default plugins) and its reading of
// ~/.claude and external skills, and npm's registry pointed at a dead
// local port. Only PATH is taken from os.Environ. Add
// OPENCODE_SERVER_PASSWORD for a server, and set cmd.Dir to the
// workspace.
func Env(home, configPath string) []string {
	env := []string{"HOME=" + home}
	for _, d := range xdgDirs(home) {
		env = append(env, d[0]+"="+d[1])
	}
	env = append(env, "TMPDIR="+filepath.Join(home, "tmp"))
	if configPath != "" {
		env = append(env, "OPENCODE_CONFIG="+configPath)
	}
	return append(env,
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
		"npm_config_registry="+deadRegistry,
		"NPM_CONFIG_REGISTRY="+deadRegistry,
		"PATH="+os.Getenv("PATH"),
	)
}

// InstalledBin is where scripts/install-tools.sh puts the native opencode
// binary for this platform under the repository root: inside the npm
// package's platform-specific optional dependency (a Bun single-file
// executable; for glibc on Linux). "" on a platform OpenCode has no such
// package for.
func InstalledBin(repoRoot string) string {
	var pkg string
	switch runtime.GOOS + "/" + runtime.GOARCH {
	case "linux/amd64":
		pkg = "opencode-linux-x64"
	case "linux/arm64":
		pkg = "opencode-linux-arm64"
	case "darwin/amd64":
		pkg = "opencode-darwin-x64"
	case "darwin/arm64":
		pkg = "opencode-darwin-arm64"
	default:
		return ""
	}
	return filepath.Join(repoRoot, ".tools", "opencode", "node_modules", pkg, "bin", "opencode")
}

// OpencodeBin finds the real opencode binary for a test: $OPENCODE_BIN,
// else InstalledBin under the repository root (see toolbin.Find).
func OpencodeBin(t testing.TB) string {
	t.Helper()
	return toolbin.Find(t, "opencode", "OPENCODE_BIN", InstalledBin)
}
