package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
	"github.com/acpbridge/acpbridge/serve/sandbox"
	"github.com/acpbridge/acpbridge/translators/mock"
)

// sandboxRun is what testdata/sandboxclient.mjs prints.
type sandboxRun struct {
	Agents         []string `json:"agents"`
	Health         string   `json:"health"`
	SessionID      string   `json:"sessionId"`
	AgentSessionID string   `json:"agentSessionId"`
	ConfigIDs      []string `json:"configIds"`
	Asks           []struct {
		Title   string   `json:"title"`
		Replies []string `json:"replies"`
	} `json:"asks"`
	RespondError          string   `json:"respondError"`
	First                 string   `json:"first"`
	EventsAtAnswer        int      `json:"eventsAtAnswer"`
	Kinds                 []string `json:"kinds"`
	Answer                string   `json:"answer"`
	Models                []string `json:"models"`
	CurrentModel          string   `json:"currentModel"`
	Listed                []string `json:"listed"`
	ResumedAgentSessionID string   `json:"resumedAgentSessionId"`
	Again                 string   `json:"again"`
	AgainAnswer           string   `json:"againAnswer"`
	BridgeListed          []string `json:"bridgeListed"`
	LoadedConfigIDs       []string `json:"loadedConfigIds"`
	AfterLoad             string   `json:"afterLoad"`
	Destroyed             bool     `json:"destroyed"`
}

// TestSandboxHandler_sdk drives /v1 with sandbox-agent 0.4.2's own SDK,
// unchanged, through the whole server (its token, Host and Origin checks)
// against the real bridge (ServeConn, the mock agent): createSession, a
// turn streamed to onEvent whose permission ask onPermissionRequest
// answers, list_models, listSessions, resumeSession from a second client
// and a turn there, session/list, session/load of the first session and a
// turn, destroySession, dispose. With a hold of 1 ms, the answers but
// initialize's come on the SSE stream instead of in the POSTs' bodies.
func TestSandboxHandler_sdk(t *testing.T) {
	node, dir := sandboxScript(t)
	for _, hold := range []time.Duration{0, time.Millisecond} {
		t.Run("hold="+hold.String(), func(t *testing.T) {
			r, held := startSandboxServer(t, sandbox.Options{Hold: hold})
			run := runSandboxSDK(t, node, dir, r)
			checkSandboxRun(t, run)
			if n := held.Load(); (hold == time.Millisecond) != (n > 0) {
				t.Errorf("%d requests answered 202", n)
			}
			if resp, body := r.do(t, http.MethodGet, "/v1/acp", map[string]string{"Authorization": r.bearer()}); resp.StatusCode != 200 || body != `{"servers":[]}` {
				t.Errorf("servers after dispose: %d %s", resp.StatusCode, body)
			}
			if resp, _ := r.do(t, http.MethodGet, "/v1/health", nil); resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("/v1 without the token: %d", resp.StatusCode)
			}
		})
	}
}

// sandboxScript finds node and the installed sandbox-agent SDK, and puts
// testdata/sandboxclient.mjs beside it.
func sandboxScript(t *testing.T) (node, dir string) {
	t.Helper()
	node, dir = toolbin.NodeModules(t, "sandbox-agent's SDK", "SANDBOX_AGENT_SDK_DIR", "sandbox-agent", "sandbox-agent")
	script, err := os.ReadFile(filepath.Join("testdata", "sandboxclient.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "sandboxclient.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	return node, dir
}

// startSandboxServer runs a Server with a token, the real bridge (the mock
// agent) as its Connector and sandbox.NewHandler mounted at /v1/; held
// counts the requests (not notifications nor responses) answered 202.
func startSandboxServer(t *testing.T, o sandbox.Options) (r *running, held *atomic.Int64) {
	t.Helper()
	return startSandboxServerOn(t, o, mock.New())
}

// startSandboxServerOn is startSandboxServer with backend b as the
// bridge's one agent.
func startSandboxServerOn(t *testing.T, o sandbox.Options, b agent.Backend) (r *running, held *atomic.Int64) {
	t.Helper()
	connect := servetest.BridgeConnectorOn(t, b)
	info := b.Info()
	o.Agents = func(context.Context) []sandbox.AgentStatus {
		return []sandbox.AgentStatus{{ID: info.Name, Title: info.Title, Installed: true, Version: "test", CredentialsAvailable: true}}
	}
	s, stderr := newServer(t, Options{Token: "sandbox-e2e-token-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Connector: connect, Agents: o.Agents, Logger: servetest.Logger(), Sandbox: o})
	held = &atomic.Int64{}
	h := s.http.Handler
	s.http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/") || r.Method != http.MethodPost {
			h.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		m, _ := core.Parse(body)
		h.ServeHTTP(&statusWriter{ResponseWriter: w, accepted: func() {
			if m.Kind == core.Request {
				held.Add(1)
			}
		}}, r)
	})
	return start(t, s, stderr), held
}

// statusWriter calls accepted when its response is 202.
type statusWriter struct {
	http.ResponseWriter
	accepted func()
}

func (w *statusWriter) WriteHeader(status int) {
	if status == http.StatusAccepted {
		w.accepted()
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// runSandboxSDK runs sandboxclient.mjs against r and returns what it saw.
func runSandboxSDK(t *testing.T, node, dir string, r *running, env ...string) sandboxRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "sandboxclient.mjs", r.URL(), r.Token(), t.TempDir())
	cmd.Dir, cmd.Env = dir, append(os.Environ(), env...)
	var stdout, errout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &errout
	if err := cmd.Run(); err != nil {
		t.Fatalf("node sandboxclient.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), errout.String())
	}
	var run sandboxRun
	if err := json.Unmarshal(stdout.Bytes(), &run); err != nil {
		t.Fatalf("the script printed %q: %v\nstderr:\n%s", stdout.String(), err, errout.String())
	}
	logged := run
	if n := len(logged.AgainAnswer); n > 200 {
		logged.AgainAnswer = "…" + logged.AgainAnswer[n-200:]
	}
	t.Logf("%+v", logged)
	return run
}

func checkSandboxRun(t *testing.T, run sandboxRun) {
	t.Helper()
	if !slices.Equal(run.Agents, []string{"mock"}) || run.Health != "ok" {
		t.Errorf("agents %v, health %q", run.Agents, run.Health)
	}
	if run.SessionID == "" || run.AgentSessionID == "" || !slices.Contains(run.ConfigIDs, "model") {
		t.Errorf("createSession: %q (agent session %q), config options %v", run.SessionID, run.AgentSessionID, run.ConfigIDs)
	}
	if len(run.Asks) != 1 || !strings.Contains(run.Asks[0].Title, "mock.txt") || !slices.Contains(run.Asks[0].Replies, "once") || run.RespondError != "" {
		t.Errorf("permission asks %+v (respondPermission: %q), want the edit of mock.txt", run.Asks, run.RespondError)
	}
	if run.First != "end_turn" || run.Again != "end_turn" || run.AfterLoad != "end_turn" {
		t.Errorf("stop reasons %q, %q (resumed), %q (loaded); want end_turn", run.First, run.Again, run.AfterLoad)
	}
	for _, kind := range []string{"agent_thought_chunk", "tool_call", "tool_call_update", "agent_message_chunk"} {
		if !slices.Contains(run.Kinds, kind) {
			t.Errorf("events %v lack %s", run.Kinds, kind)
		}
	}
	if run.EventsAtAnswer == 0 {
		t.Errorf("no event had reached onEvent when the prompt was answered")
	}
	if !strings.Contains(run.Answer, "You said: Please think") {
		t.Errorf("answer %q", run.Answer)
	}
	if !slices.Equal(run.Models, []string{"mock-small", "mock-large"}) || run.CurrentModel != "mock-small" {
		t.Errorf("list_models %v (current %q)", run.Models, run.CurrentModel)
	}
	if !slices.Contains(run.Listed, run.SessionID) {
		t.Errorf("listSessions %v lacks %s", run.Listed, run.SessionID)
	}
	if run.ResumedAgentSessionID == "" || run.ResumedAgentSessionID == run.AgentSessionID || !strings.Contains(run.AgainAnswer, "hello again") {
		t.Errorf("resumeSession: agent session %q, answer %q", run.ResumedAgentSessionID, run.AgainAnswer)
	}
	if !slices.Contains(run.BridgeListed, run.AgentSessionID) || !slices.Contains(run.BridgeListed, run.ResumedAgentSessionID) {
		t.Errorf("session/list %v lacks %s or %s", run.BridgeListed, run.AgentSessionID, run.ResumedAgentSessionID)
	}
	if !slices.Contains(run.LoadedConfigIDs, "model") || !run.Destroyed {
		t.Errorf("session/load's config options %v; destroyed %v", run.LoadedConfigIDs, run.Destroyed)
	}
}
