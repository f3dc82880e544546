// Package sdkclient runs the official ACP TypeScript SDK (2.4.0, its
// unstable v1 entry point, installed by scripts/install-tools.sh) as the
// client of a bridge served in the test: over the script's stdin and
// stdout, opted into every client capability, checking every message the
// bridge sends against the SDK's own schemas (unstable.mjs says what it
// does).
package sdkclient

import (
	"context"
	_ "embed"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	"github.com/acpbridge/acpbridge/persist"
)

//go:embed unstable.mjs
var script []byte

// Plan is what the client does: a session in Cwd with Dirs and a system
// prompt, then each of Prompts.
type Plan struct {
	Cwd          string   `json:"cwd"`
	Dirs         []string `json:"dirs"`
	Mode         string   `json:"mode"` // the system prompt's: append or override
	SystemPrompt string   `json:"systemPrompt"`
	Prompts      []string `json:"prompts"`
}

// Result is what the client saw.
type Result struct {
	Capabilities map[string]any   `json:"capabilities"` // initialize's agentCapabilities
	SessionID    string           `json:"sessionId"`
	Stops        []string         `json:"stops"`   // each prompt's stop reason
	Updates      []map[string]any `json:"updates"` // the turns' updates
	Replay       []map[string]any `json:"replay"`  // session/load's
	Asks         int              `json:"asks"`
	Listed       map[string]any   `json:"listed"` // the session in session/list
	// Invalid is each message the SDK's schemas refused.
	Invalid []map[string]any `json:"invalid"`
}

// Kinds is the sessionUpdate kinds of us, in order, once each.
func Kinds(us []map[string]any) []string {
	var ks []string
	seen := map[string]bool{}
	for _, u := range us {
		k, _ := u["sessionUpdate"].(string)
		if !seen[k] {
			seen[k] = true
			ks = append(ks, k)
		}
	}
	return ks
}

// JSON is v as JSON.
func JSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Run serves a bridge on backend b (persisting into a new directory) to
// the SDK client, which follows p; it fails the test if the SDK refused
// a message.
func Run(t *testing.T, b agent.Backend, p Plan) Result {
	t.Helper()
	node, dir := toolbin.NodeModules(t, "the ACP TypeScript SDK", "ACP_SDK_DIR", "acp-sdk", "@agentclientprotocol/sdk")
	if err := os.WriteFile(filepath.Join(dir, "unstable.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAuto, Logger: log, CancelGrace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	plan, _ := json.Marshal(p)
	out := filepath.Join(t.TempDir(), "seen.json")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // only a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "unstable.mjs")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "ACP_SDK_PLAN="+string(plan), "ACP_SDK_OUT="+out)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	toBridge, clientOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	clientIn, fromBridge, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = clientIn, clientOut
	err = cmd.Start()
	clientIn.Close()
	clientOut.Close()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- edge.NewServer(m, "test", log).Serve(ctx, toBridge, fromBridge) }()
	err = cmd.Wait()
	<-served // the client's stdout ended with it
	toBridge.Close()
	fromBridge.Close()
	if err != nil {
		t.Fatalf("node unstable.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	var r Result
	seen, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(seen, &r)
	}
	if err != nil {
		t.Fatalf("the client's report: %v\nstderr:\n%s", err, stderr.String())
	}
	for _, bad := range r.Invalid {
		t.Errorf("the SDK's schema refused %s", JSON(bad))
	}
	return r
}

// Text is the text of the updates of kind in us, joined.
func Text(us []map[string]any, kind string) string {
	var b strings.Builder
	for _, u := range us {
		if c, ok := u["content"].(map[string]any); ok && u["sessionUpdate"] == kind {
			t, _ := c["text"].(string)
			b.WriteString(t)
		}
	}
	return b.String()
}

// Want is what a Result is to show.
type Want struct {
	Said     []string // each in the turns' updates, as JSON
	Replayed []string // each a kind of the replay's updates
	Listed   string   // in the session as session/list shows it (its directory, say)
	Asked    bool     // a permission was asked
}

// Check fails the test for each thing w wants that r lacks.
func Check(t *testing.T, r Result, w Want) {
	t.Helper()
	said := JSON(r.Updates)
	for _, s := range w.Said {
		if !strings.Contains(said, s) {
			t.Errorf("the turns sent no %s:\n%s", s, said)
		}
	}
	kinds := Kinds(r.Replay)
	for _, k := range w.Replayed {
		if !slices.Contains(kinds, k) {
			t.Errorf("the replay's kinds %v lack %s", kinds, k)
		}
	}
	if listed := JSON(r.Listed); !strings.Contains(listed, w.Listed) {
		t.Errorf("session/list shows %s, want %s in it", listed, w.Listed)
	}
	if w.Asked && r.Asks == 0 {
		t.Errorf("no permission was asked")
	}
}
