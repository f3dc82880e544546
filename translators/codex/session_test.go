package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// The tests in this file drive the Backend and its sessions against the
// fake app-server of fakeappserver_test.go (this test binary, re-executed),
// so they run everywhere, under -short and -race.

// fakeCodex is one fake codex installation (see nativetest.Fake): the
// log of what its servers were sent and sent back, and its threads "on
// disk", which every backend made from it shares.
type fakeCodex struct{ *nativetest.Fake }

func newFakeCodex(t *testing.T, env ...string) *fakeCodex {
	t.Helper()
	vars := nativetest.FakeVars{Play: fakeEnv, Log: fakeLogEnv, State: fakeStateEnv}
	return &fakeCodex{nativetest.NewFake(t, "the fake app-server", vars, env...)}
}

// backend makes a Backend running the fake; the test closes it.
func (fc *fakeCodex) backend(t *testing.T) *Backend {
	t.Helper()
	b := New(Options{Path: nativetest.TestBinary(), Env: fc.Env, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { b.Close() })
	return b
}

// waitReady waits for the session's thread (History waits for it) and returns
// its id.
func waitReady(t *testing.T, s agent.Native) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nativetest.WaitGuard)
	defer cancel()
	if _, err := s.Caps().History(ctx); err != nil {
		t.Fatalf("the thread did not start: %v", err)
	}
	return s.NativeID()
}

// wireMsg is one logged message.
type wireMsg struct {
	Dir string `json:"dir"`
	Msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params map[string]any  `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Message string `json:"message"`
		} `json:"error"`
		Args []string `json:"args"`
	} `json:"msg"`
	raw string
}

// KeepLine keeps the message's line.
func (w *wireMsg) KeepLine(line string) { w.raw = line }

// messages reads the log so far: its complete lines, as a server may be
// writing one.
func (fc *fakeCodex) messages(t *testing.T) []wireMsg {
	return nativetest.ReadRecords[wireMsg](t, fc.Log)
}

// sent returns the params of every request or notification of method the
// servers received.
func (fc *fakeCodex) sent(t *testing.T, method string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, w := range fc.messages(t) {
		if w.Dir == "client->server" && w.Msg.Method == method {
			out = append(out, w.Msg.Params)
		}
	}
	return out
}

// answers returns the results the client sent for the servers' requests.
func (fc *fakeCodex) answers(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, w := range fc.messages(t) {
		if w.Dir == "client->server" && w.Msg.Method == "" {
			out = append(out, string(w.Msg.Result))
		}
	}
	return out
}

// waitLog waits until the log satisfies ok.
func (fc *fakeCodex) waitLog(t *testing.T, what string, ok func([]wireMsg) bool) {
	t.Helper()
	nativetest.Poll(t, what, func() bool { return ok(fc.messages(t)) })
}

// codexRun is a suite test's run on the fake app-server.
type codexRun = nativetest.Run[*fakeCodex]

// TestFake_suite runs nativetest's suite of a backend on one shared
// server on the fake app-server; the hooks below check what codex was
// sent.
func TestFake_suite(t *testing.T) {
	nativetest.RunServerSuite(t, nativetest.ServerSuite[*fakeCodex]{
		Agent: "codex", EnvVar: EnvVar, Fake: newFakeCodex, Backend: func(path string, env []string) nativetest.Checked {
			return New(Options{Path: path, Env: env, Logger: slog.New(slog.DiscardHandler)})
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

// TestFake_commandApproval: the tool call is announced, the user asked,
// and the answer goes back to codex as its decision.
func TestFake_commandApproval(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		choice, decision, status string
		stop                     acp.StopReason
	}{
		{"accept", "accept", "completed", acp.StopReasonEndTurn},
		{"acceptForSession", "acceptForSession", "completed", acp.StopReasonEndTurn},
		{"decline", "decline", "failed", acp.StopReasonEndTurn},
		{"", "cancel", "failed", acp.StopReasonCancelled}, // the client cancelled the ask: codex ends the turn
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			fc := newFakeCodex(t)
			ev := nativetest.NewRecorder(tc.choice)
			cwd := t.TempDir()
			s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{Cwd: cwd}, ev)
			res, err := nativetest.RunPrompt(t, s, "approve: mkdir -p made", nil)
			if err != nil || res.StopReason != tc.stop {
				t.Fatalf("prompt: %+v, %v; want %s", res, err, tc.stop)
			}
			us, asks, _ := ev.Snapshot()
			if len(asks) != 1 || asks[0].Call.ToolCallId != "call_2" || asks[0].Call.Title == nil || *asks[0].Call.Title != "mkdir -p made" {
				t.Fatalf("asks %+v", asks)
			}
			got := acptest.Conversation(us)
			if !strings.Contains(got, "tool call_2 execute "+tc.status+" mkdir -p made\n") {
				t.Errorf("conversation:%s", got)
			}
			if ans := fc.answers(t); len(ans) != 1 || ans[0] != `{"decision":"`+tc.decision+`"}` {
				t.Errorf("answers %v; want decision %s", ans, tc.decision)
			}
			if tc.decision == "accept" {
				var out string
				for _, u := range us {
					if tu := u.ToolCallUpdate; tu != nil && tu.RawOutput != nil {
						b, _ := json.Marshal(tu.RawOutput)
						out = string(b)
					}
				}
				if !strings.Contains(out, `"exitCode":0`) || !strings.Contains(out, `"output":"made\n"`) {
					t.Errorf("raw output %s", out)
				}
				if !strings.Contains(got, "Tool finished. Output was: made (accept)") {
					t.Errorf("conversation:%s", got)
				}
			}
		})
	}
}

// TestFake_approvalBeforeItsItem: an approval for an item not announced
// yet announces it, pending, before the ask.
func TestFake_approvalBeforeItsItem(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	ev := nativetest.NewRecorder("accept")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.MustPrompt(t, s, "approve early", nil)
	us := ev.Take()
	i := slices.IndexFunc(us, func(u acp.SessionUpdate) bool { return u.ToolCall != nil })
	if i < 0 || us[i].ToolCall.Status != acp.ToolCallStatusPending || us[i].ToolCall.Kind != acp.ToolKindExecute {
		t.Fatalf("first tool update %+v; want the call announced pending by the approval", us)
	}
	if got := acptest.Conversation(us); !strings.Contains(got, "tool call_2 execute completed mkdir -p made\n") {
		t.Errorf("conversation:%s", got)
	}
}

// TestFake_patchApproval shows the file change as a diff and asks.
func TestFake_patchApproval(t *testing.T) {
	t.Parallel()
	for choice, status := range map[string]string{"accept": "completed", "decline": "failed"} {
		t.Run(choice, func(t *testing.T) {
			t.Parallel()
			fc := newFakeCodex(t)
			ev := nativetest.NewRecorder(choice)
			cwd := t.TempDir()
			s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{Cwd: cwd}, ev)
			nativetest.MustPrompt(t, s, "patch: hello.txt", nil)
			us, asks, _ := ev.Snapshot()
			if len(asks) != 1 || asks[0].Call.Title == nil || *asks[0].Call.Title != "Create hello.txt" || len(asks[0].Call.Content) != 1 {
				t.Errorf("asks %+v", asks)
			}
			var diff *acp.ToolCallContentDiff
			for _, u := range us {
				if tc := u.ToolCall; tc != nil {
					for _, c := range tc.Content {
						if c.Diff != nil {
							diff = c.Diff
						}
					}
				}
			}
			if diff == nil || diff.Path != filepath.Join(cwd, "hello.txt") || diff.NewText != "hello from apply_patch\n" {
				t.Errorf("diff %+v", diff)
			}
			if got := acptest.Conversation(us); !strings.Contains(got, "tool call_2 edit "+status+" Create hello.txt\n") {
				t.Errorf("conversation:%s", got)
			}
		})
	}
}

// TestFake_cancelInterruptsTheTurn: a cancelled prompt sends turn/interrupt
// for the running turn and returns cancelled once codex completes it; the
// thread then takes the next prompt.
func TestFake_cancelInterruptsTheTurn(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	ev := nativetest.NewRecorder("accept")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.CancelTurn(t, s, ev, "slow please", "the first delta", nativetest.HasAgentText)
	ints := fc.sent(t, "turn/interrupt")
	if len(ints) != 1 || ints[0]["threadId"] != s.NativeID() || ints[0]["turnId"] == "" {
		t.Fatalf("turn/interrupt %v", ints)
	}
	for _, w := range fc.messages(t) {
		if w.Dir == "server->client" && w.Msg.Error != nil {
			t.Errorf("codex refused: %s", w.raw) // e.g. the interrupt named the wrong turn
		}
	}
	nativetest.CheckNextTurn(t, s, ev, "\nagent: Hello from fake model. You said: hello again\n")
}

// TestFake_historyOfAResumedThread: a session that resumes a thread
// replays it as the live turns showed it, and continues it.
func TestFake_historyOfAResumedThread(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	b := fc.backend(t)
	cwd := t.TempDir()
	ev := nativetest.NewRecorder("accept")
	s1 := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: cwd}, ev)
	var live []acp.SessionUpdate
	for _, p := range []string{"hello there", "approve: mkdir -p made", "think first", "patch: hello.txt", "mcp ping"} {
		nativetest.MustPrompt(t, s1, p, nil)
		live = append(append(live, acp.UpdateUserMessageText(p)), ev.Take()...)
	}
	thread := s1.NativeID()
	s1.Close()

	ev2 := nativetest.NewRecorder("accept")
	s2 := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: cwd, NativeID: thread}, ev2)
	ctx, cancel := context.WithTimeout(context.Background(), nativetest.WaitGuard)
	defer cancel()
	h, err := s2.Caps().History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, want := acptest.Conversation(h), acptest.Conversation(live)
	if got != want {
		t.Errorf("history:%s\nwant (live):%s", got, want)
	}
	if !strings.Contains(got, " other completed rpc: forward\n") {
		t.Errorf("history lacks the MCP call, whose arguments hold a \"jsonrpc\" key:%s", got)
	}
	if s2.NativeID() != thread {
		t.Errorf("resumed thread %s, want %s", s2.NativeID(), thread)
	}
	nativetest.MustPrompt(t, s2, "hello again", nil)
	if n := fc.Count(t, "start"); n != 1 {
		t.Errorf("%d servers; the sessions share one", n)
	}
}

// TestFake_resumeTakesTheRecordedOptions: a resumed session shows the
// options recorded for it and resumes the thread with them.
func TestFake_resumeTakesTheRecordedOptions(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	b := fc.backend(t)
	s1 := nativetest.OpenSession(t, b, agent.OpenOptions{}, nativetest.NewRecorder("accept"))
	nativetest.MustPrompt(t, s1, "hello there", nil)
	thread := s1.NativeID()
	s1.Close()

	ev := nativetest.NewRecorder("accept")
	cfg := map[string]string{agent.ConfigMode: "auto", agent.ConfigModel: "fake-fast", agent.ConfigEffort: "low"}
	s2 := nativetest.OpenSession(t, b, agent.OpenOptions{NativeID: thread, Config: cfg}, ev)
	waitReady(t, s2)
	opts := s2.Config()
	for id, want := range cfg {
		if o, _ := nativetest.FindOption(opts, id); o.Current != want {
			t.Errorf("%s = %q, want %q", id, o.Current, want)
		}
	}
	if mode, _ := nativetest.FindOption(opts, agent.ConfigMode); slices.Contains(nativetest.ChoiceValues(mode), modeConfig) {
		t.Errorf("config.toml's policy offered for a thread that had a preset: %v", nativetest.ChoiceValues(mode))
	}
	resumes := fc.sent(t, "thread/resume")
	if len(resumes) != 1 {
		t.Fatalf("thread/resume %v", resumes)
	}
	r := resumes[0]
	if r["threadId"] != thread || r["approvalPolicy"] != "on-request" || r["sandbox"] != "workspace-write" || r["model"] != "fake-fast" {
		t.Errorf("thread/resume %v", r)
	}
	if _, _, changed := ev.Snapshot(); changed != 0 {
		t.Errorf("%d ConfigChanged; codex reported what was restored", changed)
	}
}

// TestFake_presetAtStart: a mode and model known at Open go with
// thread/start.
func TestFake_presetAtStart(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{Config: map[string]string{agent.ConfigMode: "read-only", agent.ConfigModel: "fake-fast"}}, nativetest.NewRecorder("accept"))
	waitReady(t, s)
	starts := fc.sent(t, "thread/start")
	if len(starts) != 1 || starts[0]["approvalPolicy"] != "on-request" || starts[0]["sandbox"] != "read-only" || starts[0]["model"] != "fake-fast" {
		t.Errorf("thread/start %v", starts)
	}
}

// TestFake_followsTheThreadsModel: the model and effort codex reports for
// a new thread (its config.toml's) become the options' values.
func TestFake_followsTheThreadsModel(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t, fakeModelEnv+"=fake-fast", fakeEffortEnv+"=low")
	ev := nativetest.NewRecorder("accept")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	waitReady(t, s)
	opts := s.Config()
	model, _ := nativetest.FindOption(opts, agent.ConfigModel)
	effort, _ := nativetest.FindOption(opts, agent.ConfigEffort)
	if model.Current != "fake-fast" || effort.Current != "low" {
		t.Errorf("model %q effort %q; want codex's", model.Current, effort.Current)
	}
	if _, _, changed := ev.Snapshot(); changed != 1 {
		t.Errorf("%d ConfigChanged, want 1", changed)
	}
}

// TestFake_closeUnregisters: the server's requests about a thread reach
// its session while it is open, and no longer once it is closed.
func TestFake_closeUnregisters(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	b := fc.backend(t)
	evA, evB := nativetest.NewRecorder("accept"), nativetest.NewRecorder("accept")
	sA := nativetest.OpenSession(t, b, agent.OpenOptions{}, evA)
	sB := nativetest.OpenSession(t, b, agent.OpenOptions{}, evB)
	threadA := waitReady(t, sA)
	nativetest.MustPrompt(t, sB, "askthread:"+threadA, nil)
	if _, asks, _ := evA.Snapshot(); len(asks) != 1 {
		t.Errorf("session A was asked %d times, want 1", len(asks))
	}
	if got := evB.Conversation(); !strings.Contains(got, "answered: accept") {
		t.Errorf("B:%s", got)
	}
	sA.Close()
	evB.Take()
	nativetest.MustPrompt(t, sB, "askthread:"+threadA, nil)
	if _, asks, _ := evA.Snapshot(); len(asks) != 1 {
		t.Errorf("the closed session was asked")
	}
	if got := evB.Conversation(); !strings.Contains(got, "answered: error: acpbridge has no session for this thread") {
		t.Errorf("B:%s", got)
	}
}

// TestFake_notifications: plans, reasoning, MCP calls and thread names.
func TestFake_notifications(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	ev := nativetest.NewRecorder("accept")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.MustPrompt(t, s, "plan it", nil)
	if got := ev.Conversation(); !strings.Contains(got, "agent: Planning.Plan updated.\n") || !strings.HasSuffix(got, "plan first step in_progress\nplan second step pending\n") {
		t.Errorf("plan:%s", got)
	}
	ev.Take()
	nativetest.MustPrompt(t, s, "think", nil)
	if got := ev.Conversation(); got != "\nthought: Planning the answer.\n\nChecking twice.\nagent: Thought it through.\n" {
		t.Errorf("reasoning %q", got)
	}
	ev.Take()
	nativetest.MustPrompt(t, s, "mcp", nil)
	if got := ev.Conversation(); !strings.Contains(got, " other completed rpc: forward\n") {
		t.Errorf("mcp:%s", got)
	}
	ev.Take()
	nativetest.MustPrompt(t, s, "browse", nil)
	if got := ev.Conversation(); !strings.Contains(got, ` fetch completed Search the web for "acp protocol"`) ||
		!strings.Contains(got, " fetch completed Open https://agentclientprotocol.com\n") {
		t.Errorf("web:%s", got)
	}
	ev.Take()
	nativetest.MustPrompt(t, s, "question", nil) // a request the bridge does not take is refused, and the turn goes on
	if got := ev.Conversation(); !strings.Contains(got, "answered: error: acpbridge does not handle item/tool/requestUserInput") {
		t.Errorf("question:%s", got)
	}
	ev.Take()
	nativetest.MustPrompt(t, s, "rename", nil)
	us := ev.Take()
	if !slices.ContainsFunc(us, func(u acp.SessionUpdate) bool {
		return u.SessionInfoUpdate != nil && u.SessionInfoUpdate.Title != nil && *u.SessionInfoUpdate.Title == "Fake thread"
	}) {
		t.Errorf("no title update in %+v", us)
	}
}

// TestFake_promptErrors: content codex can't take is refused before any
// turn starts; a prompt cancelled before it starts is cancelled.
func TestFake_promptErrors(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, nativetest.NewRecorder("accept"))
	nativetest.CheckPromptRefusals(t, s)
	waitReady(t, s)
	if turns := fc.sent(t, "turn/start"); len(turns) != 0 {
		t.Errorf("turn/start sent: %v", turns)
	}
	nativetest.MustPrompt(t, s, "hello", nil)
}

// TestFake_imagesAndResources: an image goes to codex as a data URL, and
// comes back in the history as a placeholder.
func TestFake_imagesAndResources(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	b := fc.backend(t)
	s := nativetest.OpenSession(t, b, agent.OpenOptions{}, nativetest.NewRecorder("accept"))
	ctx, cancel := context.WithTimeout(context.Background(), nativetest.WaitGuard)
	defer cancel()
	res, err := s.Prompt(ctx, agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("look"), acp.ImageBlock("aGk=", "image/png")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", res, err)
	}
	thread := s.NativeID()
	s.Close()
	s2 := nativetest.OpenSession(t, b, agent.OpenOptions{NativeID: thread}, nativetest.NewRecorder("accept"))
	h, err := s2.Caps().History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := acptest.Conversation(h); !strings.HasPrefix(got, "\nuser: look[image attached]\nagent: Hello from fake model. You said: look\n") {
		t.Errorf("history %q", got)
	}
}

// TestFake_resumeUnknownThread: a thread codex does not have fails the
// session's prompts and history with codex's error.
func TestFake_resumeUnknownThread(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{NativeID: "01a1ffff-0000-7000-8000-000000000000"}, nativetest.NewRecorder("accept"))
	if _, err := nativetest.RunPrompt(t, s, "hello", nil); err == nil || !strings.Contains(err.Error(), "no rollout found") {
		t.Errorf("prompt: %v", err)
	}
	if _, err := s.Caps().History(context.Background()); err == nil || !strings.Contains(err.Error(), "no rollout found") {
		t.Errorf("history: %v", err)
	}
}

// TestFake_noModelList: a server that can't list its models still runs
// sessions, which offer the mode (and the collaboration mode) only.
func TestFake_noModelList(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t, fakeNoModels+"=1")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, nativetest.NewRecorder("accept"))
	if opts := s.Config(); len(opts) != 2 || opts[0].ID != agent.ConfigMode || opts[1].ID != ConfigCollaboration {
		t.Errorf("options %+v; want the mode and the collaboration mode alone", opts)
	}
	nativetest.MustPrompt(t, s, "hello", nil)
}

// TestFake_resumeAfterACrashKeepsThePickedModel: the model picked in a
// turn, not the one recorded at Open, goes with the thread/resume that
// follows a crash.
func TestFake_resumeAfterACrashKeepsThePickedModel(t *testing.T) {
	t.Parallel()
	fc := newFakeCodex(t)
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{Config: map[string]string{agent.ConfigModel: "fake-fast"}}, nativetest.NewRecorder("accept"))
	nativetest.MustPrompt(t, s, "hello there", map[string]string{agent.ConfigModel: "fake-model"})
	if _, err := nativetest.RunPrompt(t, s, "crash now", nil); err == nil {
		t.Fatal("the crash was not reported")
	}
	nativetest.MustPrompt(t, s, "hello again", nil)
	resumes := fc.sent(t, "thread/resume")
	if len(resumes) != 1 || resumes[0]["model"] != "fake-model" {
		t.Errorf("thread/resume %v; want the model picked last", resumes)
	}
	if o, _ := nativetest.FindOption(s.Config(), agent.ConfigModel); o.Current != "fake-model" {
		t.Errorf("model after the restart %q", o.Current)
	}
}

func TestSlashCommand(t *testing.T) {
	for _, tc := range []struct {
		text, name, args string
		ok               bool
	}{
		{"/review focus on errors", "review", "focus on errors", true},
		{"/compact", "compact", "", true},
		{"/unknown", "", "", false},
		{"/$lint now", "", "", false},
		{"review", "", "", false},
	} {
		name, args, ok := slashCommand([]acp.ContentBlock{acp.TextBlock(tc.text)})
		if name != tc.name || args != tc.args || ok != tc.ok {
			t.Errorf("slashCommand(%q) = %q %q %v", tc.text, name, args, ok)
		}
	}
	if got := skillMention([]acp.ContentBlock{acp.TextBlock("/$lint now")}); got[0].Text.Text != "$lint now" {
		t.Errorf("skillMention: %q", got[0].Text.Text)
	}
}
