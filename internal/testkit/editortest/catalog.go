package editortest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/coder/acp-go-sdk"
)

// KeptCatalog is a backend that keeps its server's catalog of models on
// disk (agentkit.Options.Catalogs), for CheckKeptCatalog.
type KeptCatalog struct {
	Backend func(catalogs string) agent.Backend // a new one keeping its catalogs there
	Dir     func() string                       // a new working directory
	// Stale adds the model value to the catalog kept in file, as if the
	// server had listed it last time.
	Stale func(t *testing.T, file string, model string)
}

// waitKept waits for a catalog to be kept in catalogs (a minute at most:
// a deadline for a hang) and returns the files there.
func waitKept(t *testing.T, catalogs string) []string {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if files, _ := filepath.Glob(filepath.Join(catalogs, "*.json")); len(files) > 0 {
			return files
		}
	}
	t.Fatalf("no catalog kept in %s", catalogs)
	return nil
}

// CheckKeptCatalog checks that a bridge keeps the catalog its server gave;
// that the next bridge's session/new answers with the catalog kept (a
// model the server no longer lists included) without waiting for the
// server; and that once the server has listed its models, the session
// offers those (a config_option_update) and the file is brought up to
// date.
func CheckKeptCatalog(t *testing.T, c KeptCatalog) {
	t.Helper()
	catalogs := t.TempDir()
	e := StartEditor(t, c.Backend(catalogs), t.TempDir(), bridge.PersistAuto)
	if _, err := e.Prompt(e.NewSession(c.Dir()), "Say hello"); err != nil {
		t.Fatal(err)
	}
	files := waitKept(t, catalogs)
	e.Stop()
	if files, _ = filepath.Glob(filepath.Join(catalogs, "*.json")); len(files) != 1 {
		t.Fatalf("catalogs kept %v; want the server's, kept in one file", files)
	}
	const stale = "stale/model-of-last-time"
	c.Stale(t, files[0], stale)

	e = StartEditor(t, c.Backend(catalogs), t.TempDir(), bridge.PersistAuto)
	start := time.Now()
	resp := e.NewSessionResponse(c.Dir())
	took := time.Since(start)
	if got := acptest.Choices(resp.ConfigOptions)[agent.ConfigModel]; !slices.Contains(got, stale) {
		t.Fatalf("session/new took %v and offers %v; want the models kept on disk, %s among them", took, got, stale)
	}
	t.Logf("session/new from the catalog kept on disk: %v", took)
	if _, err := e.Prompt(resp.SessionId, "Say hello"); err != nil {
		t.Fatal(err)
	}
	e.WaitFor(func(u acp.SessionUpdate) bool {
		if u.ConfigOptionUpdate == nil {
			return false
		}
		got := acptest.Choices(u.ConfigOptionUpdate.ConfigOptions)[agent.ConfigModel]
		return len(got) > 0 && !slices.Contains(got, stale)
	})
	e.Stop()
	if b, err := os.ReadFile(files[0]); err != nil || strings.Contains(string(b), stale) {
		t.Errorf("the catalog kept after the server listed its models: %v\n%s", err, b)
	}
}
