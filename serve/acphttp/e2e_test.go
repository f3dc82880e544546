package acphttp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// sdkRun is what testdata/acpclient.mjs prints.
type sdkRun struct {
	Agent       string   `json:"agent"`
	SessionID   string   `json:"sessionId"`
	First       string   `json:"first"`
	Second      string   `json:"second"`
	Asks        []string `json:"asks"`
	Kinds       []string `json:"kinds"`
	Answer      string   `json:"answer"`
	Listed      []string `json:"listed"`
	Other       string   `json:"other"`
	Replayed    string   `json:"replayed"`
	Third       string   `json:"third"`
	ThirdAnswer string   `json:"thirdAnswer"`
}

// TestACPHandler_typeScriptSDK drives /acp with the ACP TypeScript SDK's
// own clients, over Streamable HTTP and over WebSocket, against the real
// bridge (ServeConn, the mock agent): initialize, session/new, a turn with
// streamed updates and a permission ask the client answers, a cancelled
// turn (in a second session), session/list, and a second connection
// loading the first session and prompting it.
func TestACPHandler_typeScriptSDK(t *testing.T) {
	node, dir := sdkScript(t)
	connect := servetest.BridgeConnector(t)
	s := newACPServer(t, core.Limits{}, connect)
	for _, mode := range []string{"http", "ws"} {
		t.Run(mode, func(t *testing.T) {
			run := runSDK(t, node, dir, mode, s.URL+"/acp")
			checkSDKRun(t, run)
		})
	}
	settle(t, s, 0)
}

// sdkScript finds node and the installed ACP TypeScript SDK, and puts
// testdata/acpclient.mjs beside it.
func sdkScript(t *testing.T) (node, dir string) {
	t.Helper()
	node, dir = toolbin.NodeModules(t, "the ACP TypeScript SDK", "ACP_SDK_DIR", "acp-sdk", "@agentclientprotocol/sdk")
	script, err := os.ReadFile(filepath.Join("testdata", "acpclient.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "acpclient.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return node, dir
}

func runSDK(t *testing.T, node, dir, mode, url string, env ...string) sdkRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "acpclient.mjs", mode, url, t.TempDir())
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node acpclient.mjs %s: %v\nstdout:\n%s\nstderr:\n%s", mode, err, stdout.String(), stderr.String())
	}
	var run sdkRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		t.Fatalf("the script printed %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	t.Logf("%s: %+v", mode, run)
	return run
}

func checkSDKRun(t *testing.T, run sdkRun) {
	t.Helper()
	if run.Agent != "acpbridge" || run.SessionID == "" {
		t.Errorf("agent %q, session %q", run.Agent, run.SessionID)
	}
	if run.First != "end_turn" || run.Second != "cancelled" || run.Third != "end_turn" {
		t.Errorf("stop reasons %q, %q (cancelled), %q; want end_turn, cancelled, end_turn", run.First, run.Second, run.Third)
	}
	if len(run.Asks) != 1 || !strings.Contains(run.Asks[0], "mock.txt") {
		t.Errorf("permission asks %q, want the edit of mock.txt", run.Asks)
	}
	for _, kind := range []string{"agent_thought_chunk", "plan", "tool_call", "tool_call_update", "agent_message_chunk"} {
		if !slices.Contains(run.Kinds, kind) {
			t.Errorf("updates %v lack %s", run.Kinds, kind)
		}
	}
	if !strings.Contains(run.Answer, "You said: Please think") {
		t.Errorf("answer %q", run.Answer)
	}
	if !slices.Contains(run.Listed, run.SessionID) || !slices.Contains(run.Listed, run.Other) {
		t.Errorf("session/list %v lacks %s or %s", run.Listed, run.SessionID, run.Other)
	}
	if !strings.Contains(run.Replayed, "Please think") {
		t.Errorf("the load replayed the prompts %q", run.Replayed)
	}
	if !strings.Contains(run.ThirdAnswer, "hello again") {
		t.Errorf("the loaded session's answer %q", run.ThirdAnswer)
	}
}
