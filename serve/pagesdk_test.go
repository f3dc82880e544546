package serve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// TestPage_readsStreamsAsTheAISDK checks the page's stream reader
// (page/assets/stream.js) against the AI SDK's own, in node, on /api/chat's real
// streams from the mock (testdata/page/stream_vs_sdk.mjs): the message
// each folds every response into must be the same.
func TestPage_readsStreamsAsTheAISDK(t *testing.T) {
	ws := startWebServer(t, webtest.StartBridge(t), "")
	node, mods := webtest.NodeBin(t), webtest.AISDK.Modules(t)
	dir := t.TempDir()
	for dst, src := range map[string]string{
		"stream_vs_sdk.mjs": filepath.Join("testdata", "page", "stream_vs_sdk.mjs"),
		"lib.mjs":           filepath.Join(webtest.Scripts(), "lib.mjs"),
		"stream.mjs":        filepath.Join("page", "assets", "stream.js"), // .mjs: node reads it as the module it is
	} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(mods, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(dir, "stream_vs_sdk.mjs"))
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WEB_URL="+ws.URL)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.CombinedOutput()
	t.Logf("node stream_vs_sdk.mjs:\n%s", out)
	if err != nil {
		t.Fatalf("node stream_vs_sdk.mjs: %v", err)
	}
}
