package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
)

// codexRun is a suite test's run on the fake app-server.
type codexRun = nativetest.Run[*fakeCodex]

// TestFake_suite runs nativetest's suite of a backend on one shared
// server on the fake app-server; the hooks below check what codex was
// sent.
func TestFake_suite(t *testing.T) {
	nativetest.RunServerSuite(t, nativetest.ServerSuite[*fakeCodex]{
		Agent: "codex", EnvVar: EnvVar,
		New: func(t *testing.T, env ...string) (*fakeCodex, nativetest.Checked) {
			fc := newFakeCodex(t, env...)
			return fc, fc.backend(t)
		},
		OnPath: func(path string) nativetest.Checked {
			return New(Options{Path: path, Logger: slog.New(slog.DiscardHandler)})
		},
		Ready: waitReady, Allow: "accept", Reply: "Hello from fake model. You said: ", ExitEnv: fakeExitEnv,

		Options: nativetest.Options{Agent: "codex", IDs: "mode,model,effort,collaboration",
			Mode: modeConfig, Model: "fake-model", Effort: agentkit.EffortDefault,
			Models:  "fake-model,fake-fast", // the listed ones but the hidden
			Efforts: "default,low,medium,high,minimal", Other: "fake-fast"},
		Args: "app-server -c tools.update_plan={enabled=true}", Opened: codexOpened,
		Used: 49, Size: 258400, Answered: codexAnswered,
		AskPrompt: "approve this", Cancelled: codexCancelled,
		FailPrompt: "fail500", FailError: "We’re currently experiencing high demand, which may cause temporary errors. (internalServerError)",
		AuthPrompt: "unauthorized", AuthError: []string{"401 Unauthorized", "codex login"}, // reported by the error notification only
		CrashStderr: "fake codex: boom, the model stream broke", Restarted: codexRestarted,
		MCPRefused: []string{"sse"}, MCPSent: codexMCPSent,
		NextTurns: []nativetest.Prompt{
			{Text: "one", Config: map[string]string{agent.ConfigMode: "ask", agent.ConfigModel: "fake-fast", agent.ConfigEffort: "high"}},
			{Text: "two"},
			{Text: "three", Config: map[string]string{agent.ConfigEffort: agentkit.EffortDefault}},
		},
		NextSent:    codexNextSent,
		NextOptions: map[string]string{agent.ConfigMode: "ask", agent.ConfigModel: "fake-fast", agent.ConfigEffort: agentkit.EffortDefault},
		Warmed:      codexWarmed, Catalogued: codexCatalogued,
		Together: "hello %s", Said: "You said: hello %s", Unsaid: "hello %s",
		Inputs: codexInputs, ForkNotice: "Codex could not fork the parent's thread",
		ParentPrompt: "Remember the word apricot", ForkPrompt: "Which word was it", ForkMoves: true, Forked: codexForked,
		Unforkable: func(*testing.T, nativetest.Checked) map[string]string {
			return map[string]string{"unknown": "01a1ffff-0000-7000-8000-000000000000"} // never prompted, or its CODEX_HOME lost it
		},
		ForkTold:      codexForkTold,
		SystemPrompts: []agent.SystemPrompt{{Text: "Answer tersely."}, {Override: true, Text: "Be a pirate."}},
		SetUpConfig:   map[string]string{agent.ConfigMode: "auto"}, SetUp: codexSetUp, SetUpTurn: codexSetUpTurn,
	})
}

// codexOpened: a new thread has no history; thread/start carries the cwd
// alone (config.toml decides the rest); the client speaks as codex does
// (no "jsonrpc" member), and lists the skills after thread/start.
func codexOpened(t *testing.T, r codexRun) {
	if h, err := r.Session.Caps().History(context.Background()); err != nil || len(h) != 0 {
		t.Errorf("a new thread's history: %v, %v", h, err)
	}
	starts := r.Fake.sent(t, "thread/start")
	if len(starts) != 1 || len(starts[0]) != 1 || starts[0]["cwd"] == nil {
		t.Errorf("thread/start %v; want the cwd alone (config.toml decides the rest)", starts)
	}
	var got string // skills/list comes after thread/start, in the background
	for deadline := time.Now().Add(time.Minute); !strings.HasSuffix(got, "skills/list") && time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var methods []string
		for _, m := range r.Fake.messages(t) {
			if m.Dir == "client->server" {
				methods = append(methods, m.Msg.Method)
				if strings.Contains(m.raw, `"jsonrpc"`) {
					t.Errorf("the client sent the version member codex leaves out: %s", m.raw)
				}
			}
		}
		got = strings.Join(methods, ",")
	}
	if got != "initialize,initialized,model/list,thread/start,skills/list" {
		t.Errorf("the client sent %s", got)
	}
}

// codexAnswered: turn/start carries the thread and the input, and no
// option, as none was picked.
func codexAnswered(t *testing.T, r codexRun, _ agent.TurnResult) {
	turns := r.Fake.sent(t, "turn/start")
	if len(turns) != 1 || turns[0]["threadId"] != r.Session.NativeID() {
		t.Fatalf("turn/start %v", turns)
	}
	for _, k := range []string{"approvalPolicy", "sandboxPolicy", "model", "effort"} {
		if _, ok := turns[0][k]; ok {
			t.Errorf("turn/start carries %s though nothing was picked: %v", k, turns[0])
		}
	}
	in, _ := json.Marshal(turns[0]["input"])
	if string(in) != `[{"text":"hello there","text_elements":[],"type":"text"}]` {
		t.Errorf("input %s", in)
	}
}

// codexCancelled: the cancelled ask is answered cancel, and codex's turn
// ends with it.
func codexCancelled(t *testing.T, r codexRun) {
	// The answer may reach codex after the interrupt has ended the turn.
	r.Fake.waitLog(t, "the answer to the ask", func([]wireMsg) bool { return len(r.Fake.answers(t)) > 0 })
	if ans := r.Fake.answers(t); len(ans) != 1 || ans[0] != `{"decision":"cancel"}` {
		t.Errorf("answers %v; want cancel", ans)
	}
}

// codexRestarted: the restarted server resumes the thread, whose history
// holds the crashed turn's partial answer.
func codexRestarted(t *testing.T, r codexRun, _ string) {
	thread := r.Session.NativeID()
	resumes := r.Fake.sent(t, "thread/resume")
	if len(resumes) != 1 || resumes[0]["threadId"] != thread {
		t.Errorf("thread/resume %v; want thread %s resumed", resumes, thread)
	}
	h, err := r.Session.Caps().History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := acptest.Conversation(h); !strings.Contains(got, "user: hello there\nagent: Hello from fake model. You said: hello there\nuser: crash now\nagent: partial answer") {
		t.Errorf("history after the restart:%s", got)
	}
}

// codexMCPSent: stdio and http servers go to codex as a config override
// of the thread.
func codexMCPSent(t *testing.T, r codexRun) {
	starts := r.Fake.sent(t, "thread/start")
	cfg, _ := json.Marshal(starts[0]["config"])
	if string(cfg) != `{"mcp_servers":{"docs":{"http_headers":{"Authorization":"Bearer y"},"url":"http://127.0.0.1:9/mcp"},`+
		`"tools":{"args":["--stdio"],"command":"/usr/bin/tool","env":{"TOKEN":"x"}}}}` {
		t.Errorf("config %s", cfg)
	}
}

// codexNextSent: options picked between turns go with the next
// turn/start, once; config.toml's policy is no longer offered once a
// preset was sent.
func codexNextSent(t *testing.T, r codexRun) {
	turns := r.Fake.sent(t, "turn/start")
	if len(turns) != 3 {
		t.Fatalf("turn/start %v", turns)
	}
	first := turns[0]
	policy, _ := json.Marshal(first["sandboxPolicy"])
	if first["approvalPolicy"] != "untrusted" || string(policy) != `{"type":"workspaceWrite"}` || first["model"] != "fake-fast" || first["effort"] != "high" {
		t.Errorf("first turn/start %v", first)
	}
	for i, p := range turns[1:] {
		for _, k := range []string{"approvalPolicy", "sandboxPolicy", "model", "effort"} {
			if _, ok := p[k]; ok {
				t.Errorf("turn/start %d sends %s again: %v", i+2, k, p)
			}
		}
	}
	if mode, _ := nativetest.FindOption(r.Session.Config(), agent.ConfigMode); slices.Contains(nativetest.ChoiceValues(mode), modeConfig) {
		t.Errorf("config.toml's policy still offered once a preset was sent")
	}
}

// codexWarmed waits for the warm-up's model list.
func codexWarmed(t *testing.T, fc *fakeCodex) {
	fc.waitLog(t, "the model list", func(ws []wireMsg) bool {
		return slices.ContainsFunc(ws, func(w wireMsg) bool { return w.Dir == "server->client" && strings.Contains(w.raw, `"fake-fast"`) })
	})
}

// codexCatalogued: the session found the warmed server's models.
func codexCatalogued(t *testing.T, r codexRun) {
	if n, m := len(r.Fake.sent(t, "initialize")), len(r.Fake.sent(t, "model/list")); n != 1 || m != 1 {
		t.Errorf("%d initialize, %d model/list; want one each", n, m)
	}
}

// codexSetUp: the writable roots go with thread/start as a config
// override; the system prompt as developer instructions (append) or base
// instructions (override).
func codexSetUp(t *testing.T, r codexRun) {
	p, lib := r.Opts.SystemPrompt, r.Opts.Directories[0]
	starts := r.Fake.sent(t, "thread/start")
	key := map[bool]string{false: "developerInstructions", true: "baseInstructions"}[p.Override]
	cfg, _ := starts[0]["config"].(map[string]any)
	if len(starts) != 1 || starts[0][key] != p.Text || fmt.Sprint(cfg["sandbox_workspace_write.writable_roots"]) != "["+lib+"]" {
		t.Errorf("thread/start %v; want %s %q and writable roots [%s]", starts, key, p.Text, lib)
	}
}

// codexSetUpTurn: the writable roots go with a later turn's sandbox
// policy.
func codexSetUpTurn(t *testing.T, r codexRun) {
	lib := r.Opts.Directories[0]
	turns := r.Fake.sent(t, "turn/start")
	if sp := fmt.Sprint(turns[len(turns)-1]["sandboxPolicy"]); sp != "map[type:workspaceWrite writableRoots:["+lib+"]]" {
		t.Errorf("turn/start's sandboxPolicy %s; want workspaceWrite with the writable roots", sp)
	}
}

// codexInputs are the inputs of the turn/starts on the session's thread.
func codexInputs(t *testing.T, r codexRun) []string {
	var out []string
	for _, p := range r.Fake.sent(t, "turn/start") {
		if p["threadId"] == r.Session.NativeID() {
			in, _ := json.Marshal(p["input"])
			out = append(out, string(in))
		}
	}
	return out
}

// codexForked: the fork is thread/fork of the parent's thread with the
// fork's directory, whose history holds the parent's turns.
func codexForked(t *testing.T, r codexRun, parent agent.Native) {
	forks := r.Fake.sent(t, "thread/fork")
	if len(forks) != 1 || forks[0]["threadId"] != parent.NativeID() || forks[0]["cwd"] != r.Opts.Cwd || len(r.Fake.sent(t, "thread/start")) != 1 {
		t.Fatalf("thread/fork %v, %d thread/start; want one fork of the parent in %s", forks, len(r.Fake.sent(t, "thread/start")), r.Opts.Cwd)
	}
	h, err := r.Session.Caps().History(context.Background())
	if got := acptest.Conversation(h); err != nil || !strings.Contains(got, "user: Remember the word apricot") {
		t.Errorf("the fork's history %q, %v; want the parent's turn", got, err)
	}
}

// codexForkTold: the fork of a thread codex lacks is a new thread.
func codexForkTold(t *testing.T, r codexRun) {
	if starts := r.Fake.sent(t, "thread/start"); len(starts) != 1 {
		t.Errorf("thread/start %v; want the fork's", starts)
	}
}
