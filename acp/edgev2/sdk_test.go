package edgev2_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/acp/edgev2"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// manager is a Manager of the mock agent persisting into dir.
func manager(t *testing.T, dir string) *bridge.Manager {
	t.Helper()
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := mock.New()
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAlways, Logger: testLogger(t), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// serve runs the stdio edge with v2 on r and w, as acpbridge does.
func serve(ctx context.Context, m *bridge.Manager, r io.Reader, w io.Writer) error {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s := edge.NewServer(m, "test", log)
	s.ServeV2(edgev2.New(s, m, "test", log).Serve)
	return s.Serve(ctx, r, w)
}

// TestV2_typeScriptSDK drives the bridge over stdio with the TS SDK
// 2.4.0's experimental v2 client (testdata/v2client.mjs).
func TestV2_typeScriptSDK(t *testing.T) {
	node, dir := toolbin.NodeModules(t, "the ACP TypeScript SDK", "ACP_SDK_DIR", "acp-sdk", "@agentclientprotocol/sdk")
	script, err := os.ReadFile(filepath.Join("testdata", "v2client.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "v2client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "seen.json")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // only a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "v2client.mjs")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "ACP_V2_OUT="+out, "ACP_V2_CWD="+t.TempDir())
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
	go func() { served <- serve(ctx, manager(t, t.TempDir()), toBridge, fromBridge) }()
	err = cmd.Wait()
	toBridge.Close()
	if serr := <-served; serr != nil {
		t.Errorf("serve: %v", serr)
	}
	fromBridge.Close()
	if err != nil {
		t.Fatalf("node v2client.mjs: %v\nstderr:\n%s", err, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var seen struct {
		Init struct {
			ProtocolVersion int `json:"protocolVersion"`
		}
		SessionID string `json:"sessionId"`
		Other     string
		First     struct {
			MessageID string `json:"messageId"`
		}
		List, After []string
		BadCursor   int
		Asks        []json.RawMessage
		Updates     []map[string]any
		Cancelled   []map[string]any
		Replay      []map[string]any
	}
	if err := json.Unmarshal(b, &seen); err != nil {
		t.Fatal(err)
	}
	if seen.Init.ProtocolVersion != 2 {
		t.Errorf("initialize answered protocol %d, want 2", seen.Init.ProtocolVersion)
	}
	if seen.First.MessageID == "" {
		t.Error("session/prompt's result has no messageId")
	}
	if len(seen.Asks) != 1 {
		t.Errorf("got %d permission asks, want 1 (the edit's)", len(seen.Asks))
	}
	kinds := func(us []map[string]any) string {
		var ks []string
		for _, u := range us {
			k := u["sessionUpdate"].(string)
			if s, ok := u["state"].(string); ok {
				k += ":" + s
				if r, ok := u["stopReason"].(string); ok {
					k += ":" + r
				}
			}
			ks = append(ks, k)
		}
		return strings.Join(ks, " ")
	}
	turn := kinds(seen.Updates)
	for _, want := range []string{"state_update:running user_message", "agent_thought_chunk", "tool_call_update",
		"state_update:requires_action state_update:running", "agent_message_chunk", "state_update:idle:end_turn"} {
		if !strings.Contains(turn, want) {
			t.Errorf("the turn's updates lack %q:\n%s", want, turn)
		}
	}
	if u := seen.Updates[1]; u["messageId"] != seen.First.MessageID {
		t.Errorf("user_message has messageId %v, the prompt's result %q", u["messageId"], seen.First.MessageID)
	}
	if !strings.HasSuffix(kinds(seen.Cancelled), "state_update:idle:cancelled") {
		t.Errorf("the cancelled turn did not end idle+cancelled:\n%s", kinds(seen.Cancelled))
	}
	replay := kinds(seen.Replay)
	if !strings.HasPrefix(replay, "user_message_chunk") || !strings.Contains(replay, "tool_call_update") || !strings.HasSuffix(replay, "state_update:idle") {
		t.Errorf("resume's replay: got\n%s\nwant the user message, the turn, then the state", replay)
	}
	if id := seen.Replay[0]["messageId"]; id != seen.First.MessageID {
		t.Errorf("the replayed user message has id %v, the prompt's result %q", id, seen.First.MessageID)
	}
	if seen.BadCursor != -32602 {
		t.Errorf("an unknown replayFrom cursor got %d, want -32602", seen.BadCursor)
	}
	if !contains(seen.List, seen.Other) || contains(seen.After, seen.Other) || !contains(seen.After, seen.SessionID) {
		t.Errorf("session/list before the delete %v, after %v; deleted %s, kept %s", seen.List, seen.After, seen.Other, seen.SessionID)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
