package opencode

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
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
// fake opencode serve of fakeserver_test.go (this test binary,
// re-executed), so they run everywhere, under -short and -race.

// fakeOC is one fake opencode installation (see nativetest.Fake): the
// log of what its servers were asked and sent, and its sessions "on
// disk", which every backend made from it shares. Its servers exit when
// their stdin closes, unless env unsets fakeEOFEnv.
type fakeOC struct{ *nativetest.Fake }

func newFakeOC(t *testing.T, env ...string) *fakeOC {
	t.Helper()
	vars := nativetest.FakeVars{Play: fakeEnv, Log: fakeLogEnv, State: fakeStateEnv}
	return &fakeOC{nativetest.NewFake(t, "the fake opencode", vars, append([]string{fakeEOFEnv + "=1"}, env...)...)}
}

// backend makes a Backend running the fake; the test closes it.
func (fc *fakeOC) backend(t *testing.T) *Backend {
	t.Helper()
	b := New(Options{Path: nativetest.TestBinary(), Env: fc.Env, Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { b.Close() })
	return b
}

// waitReady waits until the session exists on the server and returns its
// id.
func waitReady(t *testing.T, s agent.Native) string {
	t.Helper()
	deadline := time.Now().Add(nativetest.WaitGuard)
	for s.NativeID() == "" {
		if time.Now().After(deadline) {
			t.Fatal("the session was not created")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return s.NativeID()
}

// wireRec is one record of the fake's log.
type wireRec struct {
	Dir string `json:"dir"`
	Msg struct {
		// start
		Args []string `json:"args"`
		Pid  int      `json:"pid"`
		URL  string   `json:"url"`
		// request, refused, error
		Method      string         `json:"method"`
		Path        string         `json:"path"`
		Directory   string         `json:"directory"`
		Body        map[string]any `json:"body"`
		ContentType string         `json:"contentType"`
		Status      int            `json:"status"`
		Message     string         `json:"message"`
		// event
		Event *Event `json:"event"`
		// connect, disconnect
		Stream  int  `json:"stream"`
		Dropped bool `json:"dropped"`
	} `json:"msg"`
	raw string
}

// KeepLine keeps the record's line.
func (w *wireRec) KeepLine(line string) { w.raw = line }

// records reads the log so far: its complete lines, as a server may be
// writing one.
func (fc *fakeOC) records(t *testing.T) []wireRec { return nativetest.ReadRecords[wireRec](t, fc.Log) }

// requests returns the requests of method whose path matches (path.Match
// style, with * for one segment) that the servers took.
func (fc *fakeOC) requests(t *testing.T, method, pattern string) []wireRec {
	t.Helper()
	var out []wireRec
	for _, w := range fc.records(t) {
		if w.Dir == "request" && w.Msg.Method == method && pathMatch(pattern, w.Msg.Path) {
			out = append(out, w)
		}
	}
	return out
}

func pathMatch(pattern, path string) bool {
	ps, xs := strings.Split(pattern, "/"), strings.Split(path, "/")
	if len(ps) != len(xs) {
		return false
	}
	for i := range ps {
		if ps[i] != "*" && ps[i] != xs[i] {
			return false
		}
	}
	return true
}

// bodies returns the bodies of the requests.
func bodies(ws []wireRec) []map[string]any {
	var out []map[string]any
	for _, w := range ws {
		out = append(out, w.Msg.Body)
	}
	return out
}

// errors returns the error answers the servers gave.
func (fc *fakeOC) errors(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, w := range fc.records(t) {
		if w.Dir == "error" || w.Dir == "refused" {
			out = append(out, w.raw)
		}
	}
	return out
}

// waitLog waits until the log satisfies ok.
func (fc *fakeOC) waitLog(t *testing.T, what string, ok func([]wireRec) bool) {
	t.Helper()
	nativetest.Poll(t, what, func() bool { return ok(fc.records(t)) })
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// ocRun is a suite test's run on the fake opencode serve.
type ocRun = nativetest.Run[*fakeOC]

// TestFake_suite runs nativetest's suite of a backend on one shared
// server on the fake opencode serve; the hooks below check what opencode
// was asked.
func TestFake_suite(t *testing.T) {
	nativetest.RunServerSuite(t, nativetest.ServerSuite[*fakeOC]{
		Agent: "opencode", EnvVar: EnvVar, Fake: newFakeOC, Backend: func(path string, env []string) nativetest.Checked {
			return New(Options{Path: path, Env: env, Logger: slog.New(slog.DiscardHandler)})
		},
		Ready: waitReady, Allow: "once", Reply: "Hello from fake. You said: ", ExitEnv: fakeExitEnv,

		Options: nativetest.Options{Agent: "opencode", IDs: "mode,model,effort",
			Mode: "build", Model: "fake/fake-model", Effort: agentkit.EffortDefault,
			Modes:  "build,plan", // the primary agents that are not hidden
			Models: "fake/fake-fast,fake/fake-model", Efforts: "default,low,medium,high", Other: "fake/fake-fast"},
		Args: "serve --port 0 --hostname 127.0.0.1", Opened: ocOpened,
		Used: 42, Size: 128000, Answered: ocAnswered,
		AskPrompt: "run: rm -rf build", Cancelled: ocCancelled,
		FailPrompt: "fail400 now", FailError: "APIError: fake bad request (HTTP 400)",
		AuthPrompt: "authfail", AuthError: []string{"Invalid API key", "opencode auth login"},
		CrashStderr: "fake opencode: boom, the model stream broke", Restarted: ocRestarted,
		MCPSent: ocMCPSent,
		NextTurns: []nativetest.Prompt{
			{Text: "one epilogue", Config: map[string]string{agent.ConfigMode: "plan", agent.ConfigModel: "fake/fake-fast", agent.ConfigEffort: "high"}},
			{Text: "two epilogue"},
			{Text: "three epilogue", Config: map[string]string{agent.ConfigEffort: agentkit.EffortDefault, agent.ConfigModel: "fake/fake-model", agent.ConfigMode: "build"}},
			{Text: "four epilogue", Config: map[string]string{agent.ConfigModel: "nobody/nothing"}}, // not offered: ignored
		},
		NextTurned: ocEpilogue, NextSent: ocNextSent,
		NextOptions: map[string]string{agent.ConfigMode: "build", agent.ConfigModel: "fake/fake-model", agent.ConfigEffort: agentkit.EffortDefault},
		Warmed:      ocWarmed, Catalogued: ocCatalogued,
		CloseEnv: []string{fakeEOFEnv + "="}, Stopped: ocStopped,
		Together: "run: echo %s", Said: "Output was: %s", Unsaid: "%s", TogetherRan: ocTogetherRan,
		Inputs: ocInputs, ForkNotice: "OpenCode could not fork the parent's session",
		ParentPrompt: "hello there", ForkPrompt: "run: echo from-the-fork", Forked: ocForked, ForkRan: ocForkRan,
		Unforkable: ocUnforkable, ForksTold: ocForksTold,
		SystemPrompts: []agent.SystemPrompt{{Text: "Answer tersely."}}, SetUp: ocSetUp, SetUpTurn: ocSetUpTurn,
	})
}

// ocOpened: the session is created with the rules that make opencode
// ask; every call but the health check is for the session's directory,
// and the server refused none.
func ocOpened(t *testing.T, r ocRun) {
	fc, cwd := r.Fake, r.Opts.Cwd
	if id := r.Session.NativeID(); !strings.HasPrefix(id, "ses_") {
		t.Errorf("session id %q", id)
	}
	creates := fc.requests(t, "POST", "/session")
	if len(creates) != 1 || jsonOf(creates[0].Msg.Body) != `{"permission":[{"action":"ask","pattern":"*","permission":"bash"},`+
		`{"action":"ask","pattern":"*","permission":"edit"},{"action":"ask","pattern":"*","permission":"webfetch"}]}` {
		t.Errorf("POST /session %s", jsonOf(bodies(creates)))
	}
	var calls []string
	for _, w := range fc.records(t) {
		switch w.Dir {
		case "request":
			calls = append(calls, w.Msg.Method+" "+w.Msg.Path)
			if w.Msg.Path != "/global/health" && w.Msg.Directory != cwd {
				t.Errorf("%s %s for directory %q, want %q", w.Msg.Method, w.Msg.Path, w.Msg.Directory, cwd)
			}
		case "connect":
			calls = append(calls, "connected")
		}
	}
	if got := strings.Join(calls, ", "); got != "GET /global/health, GET /agent, GET /config/providers, GET /config, GET /event, connected, POST /session, GET /command" {
		t.Errorf("the client called %s", got)
	}
	if errs := fc.errors(t); len(errs) != 0 {
		t.Errorf("the server refused: %v", errs)
	}
}

// ocAnswered: the turn's usage is opencode's; the prompt goes as JSON
// with the bridge's agent and model; the echoed prompt is not shown.
func ocAnswered(t *testing.T, r ocRun, res agent.TurnResult) {
	if u := res.Usage; u == nil || u.InputTokens != 42 || u.OutputTokens != 7 || u.TotalTokens != 49 {
		t.Errorf("turn usage %+v", u)
	}
	prompts := r.Fake.requests(t, "POST", "/session/*/prompt_async")
	if len(prompts) != 1 || prompts[0].Msg.Path != "/session/"+r.Session.NativeID()+"/prompt_async" {
		t.Fatalf("prompt_async %v", prompts)
	}
	if got := jsonOf(prompts[0].Msg.Body); got != `{"agent":"build","model":{"modelID":"fake-model","providerID":"fake"},"parts":[{"text":"hello there","type":"text"}]}` {
		t.Errorf("prompt %s", got)
	}
	if ct := prompts[0].Msg.ContentType; ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
}

// ocCancelled: the cancel aborts the session.
func ocCancelled(t *testing.T, r ocRun) {
	if n := len(r.Fake.requests(t, "POST", "/session/*/abort")); n != 1 {
		t.Errorf("%d aborts", n)
	}
}

// ocRestarted: the second server was asked about the session, not to
// make another, and given the session's permission rules again.
func ocRestarted(t *testing.T, r ocRun, next string) {
	// The dead server's last events may still be read after the crash
	// ended the turn (or may be lost): the partial answer's end can come
	// late.
	late, ok := strings.CutPrefix(strings.TrimSuffix(next, "Hello from fake. You said: hello again\n"), "\nagent: ")
	if !ok || !strings.HasSuffix(next, "Hello from fake. You said: hello again\n") || !strings.HasSuffix("partial answer", late) {
		t.Errorf("after the restart %q", next)
	}
	id := r.Session.NativeID()
	var second []string
	starts := 0
	for _, w := range r.Fake.records(t) {
		if w.Dir == "start" {
			starts++
		}
		if starts == 2 && w.Dir == "request" && w.Msg.Path != "/global/health" {
			second = append(second, w.Msg.Method+" "+w.Msg.Path)
		}
	}
	if got := strings.Join(second, ", "); got != "GET /event, GET /config/providers, GET /session/"+id+", PATCH /session/"+id+", GET /command, POST /session/"+id+"/prompt_async" {
		t.Errorf("the second server was called %s", got)
	}
}

// ocMCPSent: the client's MCP servers, of every transport, are added to
// the directory's instance before the session starts.
func ocMCPSent(t *testing.T, r ocRun) {
	var got []string
	for _, b := range bodies(r.Fake.requests(t, "POST", "/mcp")) {
		got = append(got, jsonOf(b))
	}
	slices.Sort(got)
	want := []string{
		`{"config":{"command":["/usr/bin/tool","--stdio"],"environment":{"TOKEN":"x"},"type":"local"},"name":"tools"}`,
		`{"config":{"headers":{"Authorization":"Bearer y"},"type":"remote","url":"http://127.0.0.1:9/mcp"},"name":"docs"}`,
		`{"config":{"headers":{},"type":"remote","url":"http://127.0.0.1:9/sse"},"name":"old"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("MCP servers\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if errs := r.Fake.errors(t); len(errs) != 0 {
		t.Errorf("the server refused: %v", errs)
	}
}

// ocEpilogue waits for turn i's epilogue. opencode reports the session's
// agent and model once more after a turn's idle. Taken after the next
// turn's options were applied, that report would flip them back (the
// bridge does not tell it from a switch opencode made); each turn waits
// for its epilogue, which follows the report, to keep nextTurnOptions
// about what the prompts carry.
func ocEpilogue(t *testing.T, r ocRun, i int) {
	r.Events.WaitFor(t, "the epilogue", func(us []acp.SessionUpdate, _ []nativetest.Ask) bool {
		n := 0
		for _, u := range us {
			if u.Plan != nil {
				n++
			}
		}
		return n == i+1
	})
}

// ocNextSent: the mode, model and effort picked go with the prompt as
// agent, model and variant, and stay; a model not offered is ignored.
func ocNextSent(t *testing.T, r ocRun) {
	var got []string
	for _, b := range bodies(r.Fake.requests(t, "POST", "/session/*/prompt_async")) {
		delete(b, "parts")
		got = append(got, jsonOf(b))
	}
	want := []string{
		`{"agent":"plan","model":{"modelID":"fake-fast","providerID":"fake"},"variant":"high"}`,
		`{"agent":"plan","model":{"modelID":"fake-fast","providerID":"fake"},"variant":"high"}`,
		`{"agent":"build","model":{"modelID":"fake-model","providerID":"fake"}}`,
		`{"agent":"build","model":{"modelID":"fake-model","providerID":"fake"}}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("prompts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// ocWarmed waits for the warm-up's catalog.
func ocWarmed(t *testing.T, fc *fakeOC) {
	fc.waitLog(t, "the catalog", func(ws []wireRec) bool {
		return slices.ContainsFunc(ws, func(w wireRec) bool { return w.Dir == "request" && w.Msg.Path == "/config" })
	})
}

// ocCatalogued: the session found the warmed server's catalog.
func ocCatalogued(t *testing.T, r ocRun) {
	if n := len(r.Fake.requests(t, "GET", "/agent")); n != 1 {
		t.Errorf("%d GET /agent; want one", n)
	}
}

// ocStopped: Close stops the server by SIGTERM, as opencode does not read
// its stdin.
func ocStopped(t *testing.T, r ocRun) {
	for _, w := range r.Fake.records(t) {
		if w.Dir == "exit" && !strings.Contains(w.raw, "terminated") {
			t.Errorf("exit %s; want by SIGTERM", w.raw)
		}
	}
}

// ocSetUp: a session's additional directories are external_directory
// rules it is allowed, on POST /session.
func ocSetUp(t *testing.T, r ocRun) {
	lib := r.Opts.Directories[0]
	want := jsonOf(sessionRules([]string{lib}))
	if creates := r.Fake.requests(t, "POST", "/session"); len(creates) != 1 || jsonOf(creates[0].Msg.Body["permission"]) != want ||
		!strings.Contains(want, `{"action":"allow","pattern":"`+lib+`/*","permission":"external_directory"}`) {
		t.Errorf("POST /session %s; want the rules %s", jsonOf(bodies(creates)), want)
	}
}

// ocSetUpTurn: the system prompt goes with each prompt; a resume sets
// the session's rules again (its directories may have changed).
func ocSetUpTurn(t *testing.T, r ocRun) {
	if ps := r.Fake.requests(t, "POST", "/session/*/prompt_async"); len(ps) != 1 || ps[0].Msg.Body["system"] != r.Opts.SystemPrompt.Text {
		t.Errorf("prompt_async %s; want the system prompt", jsonOf(bodies(ps)))
	}
	opts := r.Opts
	opts.NativeID, opts.Directories = r.Session.NativeID(), nil
	resumed := nativetest.OpenSession(t, r.Backend, opts, nativetest.NewRecorder("once"))
	if _, err := resumed.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("again")}}); err != nil {
		t.Fatal(err)
	}
	if patches := r.Fake.requests(t, "PATCH", "/session/*"); len(patches) != 1 || jsonOf(patches[0].Msg.Body["permission"]) != jsonOf(rules) {
		t.Errorf("the resume PATCHed %s; want the bridge's rules alone", jsonOf(bodies(patches)))
	}
}

// ocTogetherRan: each session was asked about its command, on a stream
// of its directory's.
func ocTogetherRan(t *testing.T, fc *fakeOC, runs []ocRun) {
	var dirs []string
	for i, r := range runs {
		if _, asks, _ := r.Events.Snapshot(); len(asks) != 1 {
			t.Errorf("session %d asked %d times", i, len(asks))
		}
		dirs = append(dirs, r.Opts.Cwd)
	}
	var streams []string
	for _, w := range fc.records(t) {
		if w.Dir == "connect" {
			streams = append(streams, w.Msg.Directory)
		}
	}
	slices.Sort(streams)
	if want := slices.Sorted(slices.Values(dirs)); !slices.Equal(streams, want) {
		t.Errorf("streams for %v, want %v", streams, want)
	}
}

// ocInputs are the parts of the session's prompts.
func ocInputs(t *testing.T, r ocRun) []string {
	var out []string
	for _, p := range r.Fake.requests(t, "POST", "/session/"+r.Session.NativeID()+"/prompt_async") {
		out = append(out, jsonOf(p.Msg.Body["parts"]))
	}
	return out
}

// ocForked: the fork is OpenCode's fork of the parent's session, not a
// new session, given the bridge's permission rules (a fork does not
// inherit them).
func ocForked(t *testing.T, r ocRun, parent agent.Native) {
	forks := r.Fake.requests(t, "POST", "/session/*/fork")
	if len(forks) != 1 || forks[0].Msg.Path != "/session/"+parent.NativeID()+"/fork" || len(r.Fake.requests(t, "POST", "/session")) != 1 {
		t.Fatalf("forks %v; want one fork of the parent and no new session", forks)
	}
	patches := r.Fake.requests(t, "PATCH", "/session/*")
	if len(patches) != 1 || patches[0].Msg.Path != "/session/"+r.Session.NativeID() || jsonOf(patches[0].Msg.Body["permission"]) != jsonOf(rules) {
		t.Errorf("updates %v; want the fork given the bridge's rules", bodies(patches))
	}
}

// ocForkRan: the fork's command was asked about, by the bridge's rules.
func ocForkRan(t *testing.T, r ocRun) {
	if _, asks, _ := r.Events.Snapshot(); len(asks) != 1 {
		t.Errorf("%d asks in the fork; want its command asked about", len(asks))
	}
}

// ocUnforkable are a parent OpenCode no longer has, and one in another
// directory (OpenCode would keep the fork there).
func ocUnforkable(t *testing.T, b nativetest.Checked) map[string]string {
	other := nativetest.OpenSession(t, b, agent.OpenOptions{}, nativetest.NewRecorder("once"))
	nativetest.MustPrompt(t, other, "hello there", nil)
	return map[string]string{"gone": "ses_gone", "elsewhere": other.NativeID()}
}

// ocForksTold: no fork was asked of OpenCode; every session was created
// with the bridge's rules.
func ocForksTold(t *testing.T, fc *fakeOC) {
	if n := len(fc.requests(t, "POST", "/session/*/fork")); n != 0 {
		t.Errorf("%d forks; want none", n)
	}
	for _, c := range bodies(fc.requests(t, "POST", "/session")) {
		if jsonOf(c["permission"]) != jsonOf(rules) {
			t.Errorf("a session created without the bridge's rules: %v", c)
		}
	}
}

// TestFake_runCommand: the command's tool call is shown, the user asked,
// and the reply goes back to opencode; the command's output streams.
func TestFake_runCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		choice, reply, status string
	}{
		{"once", "once", "completed"},
		{"always", "always", "completed"},
		{"reject", "reject", "failed"},
		{"", "reject", "failed"}, // the client cancelled the ask: the turn ends cancelled
	} {
		t.Run(tc.reply+"/"+tc.choice, func(t *testing.T) {
			t.Parallel()
			fc := newFakeOC(t)
			ev := nativetest.NewRecorder(tc.choice)
			s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
			res, err := nativetest.RunPrompt(t, s, "run: echo hello-from-bash", nil)
			if want := map[bool]acp.StopReason{true: acp.StopReasonCancelled, false: acp.StopReasonEndTurn}[tc.choice == ""]; err != nil || res.StopReason != want {
				t.Errorf("turn ended %+v, %v; want %s", res, err, want)
			}
			us, asks, _ := ev.Snapshot()
			if len(asks) != 1 {
				t.Fatalf("asks %+v", asks)
			}
			a := asks[0]
			if a.Call.ToolCallId != "call_1" || a.Call.Title == nil || *a.Call.Title != "echo hello-from-bash" ||
				a.Call.Kind == nil || *a.Call.Kind != acp.ToolKindExecute {
				t.Errorf("ask %+v", a.Call)
			}
			if got := jsonOf(a.Call.RawInput); got != `{"always":["echo *"],"metadata":{"command":"echo hello-from-bash"},"patterns":["echo hello-from-bash"],"permission":"bash"}` {
				t.Errorf("raw input %s", got)
			}
			if got := strings.Join(a.Options, ","); got != "once,always,reject" {
				t.Errorf("options %s", got)
			}
			got := acptest.Conversation(us)
			if !strings.Contains(got, "\ntool call_1 execute "+tc.status+" echo hello-from-bash\n") {
				t.Errorf("conversation:%s", got)
			}
			replies := fc.requests(t, "POST", "/permission/*/reply")
			if len(replies) != 1 || jsonOf(replies[0].Msg.Body) != `{"reply":"`+tc.reply+`"}` {
				t.Errorf("replies %v; want %s", bodies(replies), tc.reply)
			}
			if tc.status == "failed" {
				if strings.Contains(got, "Tool finished") {
					t.Errorf("the turn went on after a reject:%s", got)
				}
				var failure string
				for _, u := range us {
					if tu := u.ToolCallUpdate; tu != nil && tu.RawOutput != nil {
						failure = jsonOf(tu.RawOutput)
					}
				}
				if failure != `{"error":"The user rejected permission to use this specific tool call."}` {
					t.Errorf("raw output %s", failure)
				}
				return
			}
			if !strings.Contains(got, "Tool finished. Output was: hello-from-bash") {
				t.Errorf("conversation:%s", got)
			}
			var live, raw string
			for _, u := range us {
				if tu := u.ToolCallUpdate; tu != nil {
					if tu.Status == nil && len(tu.Content) > 0 && tu.Content[0].Content != nil && tu.Content[0].Content.Content.Text != nil {
						live = tu.Content[0].Content.Content.Text.Text
					}
					if tu.RawOutput != nil {
						raw = jsonOf(tu.RawOutput)
					}
				}
			}
			if !strings.Contains(live, "hello-from-bash") {
				t.Errorf("no live output of the running command; last %q", live)
			}
			if !strings.Contains(raw, `"output":"hello-from-bash\n"`) {
				t.Errorf("raw output %s", raw)
			}
			if tc.reply == "always" { // opencode asks no more about echo
				nativetest.MustPrompt(t, s, "run: echo again", nil)
				if _, asks, _ := ev.Snapshot(); len(asks) != 1 {
					t.Errorf("asked %d times after always", len(asks))
				}
				if got := ev.Conversation(); !strings.Contains(got, "tool call_2 execute completed echo again\n") {
					t.Errorf("conversation:%s", got)
				}
			}
		})
	}
}

// TestFake_writeAsksWithTheDiff: an edit permission shows the file's diff.
func TestFake_writeAsksWithTheDiff(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	cwd := t.TempDir()
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{Cwd: cwd}, ev)
	nativetest.MustPrompt(t, s, "write: notes.txt", nil)
	us, asks, _ := ev.Snapshot()
	if len(asks) != 1 {
		t.Fatalf("asks %+v", asks)
	}
	a := asks[0].Call
	if a.Title == nil || *a.Title != "Edit notes.txt" || a.Kind == nil || *a.Kind != acp.ToolKindEdit {
		t.Errorf("ask %+v", a)
	}
	var diff *acp.ToolCallContentDiff
	for _, c := range a.Content {
		if c.Diff != nil {
			diff = c.Diff
		}
	}
	if diff == nil || diff.Path != filepath.Join(cwd, "notes.txt") || diff.NewText != "written by fake model\n" {
		t.Errorf("diff %+v", diff)
	}
	if len(a.Locations) != 1 || a.Locations[0].Path != filepath.Join(cwd, "notes.txt") {
		t.Errorf("locations %+v", a.Locations)
	}
	if got := acptest.Conversation(us); !strings.Contains(got, "tool call_1 edit completed Write notes.txt\n") ||
		!strings.Contains(got, "Output was: Wrote file successfully.") {
		t.Errorf("conversation:%s", got)
	}
}

// TestFake_fetchAsks: a webfetch permission is a fetch.
func TestFake_fetchAsks(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.MustPrompt(t, s, "fetch: https://example.com/doc", nil)
	_, asks, _ := ev.Snapshot()
	if len(asks) != 1 || *asks[0].Call.Title != "Fetch https://example.com/doc" || *asks[0].Call.Kind != acp.ToolKindFetch {
		t.Fatalf("asks %+v", asks)
	}
	if got := ev.Conversation(); !strings.Contains(got, "tool call_1 fetch completed Fetch https://example.com/doc\n") {
		t.Errorf("conversation:%s", got)
	}
}

// TestFake_question: a question is put to the user with its options; the
// chosen label goes back, and a cancelled ask rejects the question.
func TestFake_question(t *testing.T) {
	t.Parallel()
	t.Run("answered", func(t *testing.T) {
		t.Parallel()
		fc := newFakeOC(t)
		ev := nativetest.NewRecorder("answer-1")
		s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
		nativetest.MustPrompt(t, s, "ask me", nil)
		_, asks, _ := ev.Snapshot()
		if len(asks) != 1 || asks[0].Call.Title == nil || *asks[0].Call.Title != "Pick a colour?" ||
			strings.Join(asks[0].Options, ",") != "answer-0,answer-1,reject" {
			t.Fatalf("asks %+v", asks)
		}
		replies := fc.requests(t, "POST", "/question/*/reply")
		if len(replies) != 1 || jsonOf(replies[0].Msg.Body) != `{"answers":[["blue"]]}` {
			t.Errorf("replies %v", bodies(replies))
		}
		if got := ev.Conversation(); !strings.Contains(got, "You picked: blue") || !strings.Contains(got, "tool call_1 other completed Pick a colour?\n") {
			t.Errorf("conversation:%s", got)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		fc := newFakeOC(t)
		ev := nativetest.NewRecorder("")
		s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
		nativetest.MustPrompt(t, s, "ask me", nil)
		if rejects := fc.requests(t, "POST", "/question/*/reject"); len(rejects) != 1 {
			t.Errorf("rejects %v", rejects)
		}
		if replies := fc.requests(t, "POST", "/question/*/reply"); len(replies) != 0 {
			t.Errorf("replies %v", bodies(replies))
		}
		if got := ev.Conversation(); strings.Contains(got, "You picked") || !strings.Contains(got, "tool call_1 other failed Pick a colour?\n") {
			t.Errorf("conversation:%s", got)
		}
		if errs := fc.errors(t); len(errs) != 0 {
			t.Errorf("the server refused: %v", errs)
		}
	})
}

// TestFake_questionAsksAboutItsToolCall: a question's ask is about the
// question's tool call, which the client was shown.
func TestFake_questionAsksAboutItsToolCall(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("answer-0")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.MustPrompt(t, s, "ask me", nil)
	us, asks, _ := ev.Snapshot()
	var shown []acp.ToolCallId
	for _, u := range us {
		if u.ToolCall != nil {
			shown = append(shown, u.ToolCall.ToolCallId)
		}
	}
	if len(asks) != 1 || !slices.Contains(shown, asks[0].Call.ToolCallId) {
		var about []acp.ToolCallId
		for _, a := range asks {
			about = append(about, a.Call.ToolCallId)
		}
		t.Errorf("asks about %v; the tool calls shown are %v", about, shown)
	}
}

// TestFake_todoIsThePlan: the todo list is the plan; its tool call is not
// shown.
func TestFake_todoIsThePlan(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.MustPrompt(t, s, "todo", nil)
	if got := ev.Conversation(); got != "\nagent: Planned.\nplan first step in_progress\nplan second step pending\n" {
		t.Errorf("conversation %q", got)
	}
}

// TestFake_thoughtsRetriesAndTitles: reasoning streams as thoughts, a
// retry is a warning notice, a new title is a session info update.
func TestFake_thoughtsRetriesAndTitles(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.MustPrompt(t, s, "think then retry and title", nil)
	us := ev.Take()
	got := acptest.Conversation(us)
	want := "\nnotice warning: OpenCode is retrying the model request (attempt 1): Rate limited, the fake says" +
		"\nnotice warning: OpenCode is retrying the model request (attempt 2): Rate limited, the fake says\nthought: Thinking about it." +
		"\nagent: Hello from fake. You said: think then retry and title\n"
	if got != want {
		t.Errorf("conversation %q\nwant %q", got, want)
	}
	var titles []string
	for _, u := range us {
		if u.SessionInfoUpdate != nil && u.SessionInfoUpdate.Title != nil {
			titles = append(titles, *u.SessionInfoUpdate.Title)
		}
	}
	if strings.Join(titles, ",") != "Fake title" {
		t.Errorf("titles %v; want the new title once (not the default one)", titles)
	}
}

// TestFake_theBridgesOptionsStand: the agent and model are the bridge's,
// sent with every prompt; what opencode reports back for a session does
// not change them.
func TestFake_theBridgesOptionsStand(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.MustPrompt(t, s, "switch", nil)
	opts := s.Config()
	mode, _ := nativetest.FindOption(opts, agent.ConfigMode)
	model, _ := nativetest.FindOption(opts, agent.ConfigModel)
	if mode.Current != "build" || model.Current != "fake/fake-model" {
		t.Errorf("mode %q model %q; want the bridge's", mode.Current, model.Current)
	}
	if _, _, changed := ev.Snapshot(); changed != 0 {
		t.Errorf("%d ConfigChanged, want none", changed)
	}
	nativetest.MustPrompt(t, s, "hello again", nil)
	prompts := fc.requests(t, "POST", "/session/*/prompt_async")
	if last := prompts[len(prompts)-1].Msg.Body; last["agent"] != "build" || jsonOf(last["model"]) != `{"modelID":"fake-model","providerID":"fake"}` {
		t.Errorf("the next prompt %v", last)
	}
}

// TestFake_lateSessionInfoKeepsTheNextTurnsOptions: the session.updated
// opencode sends after a turn's idle, if it is read after the next turn
// applied new options, does not flip them back.
func TestFake_lateSessionInfoKeepsTheNextTurnsOptions(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.MustPrompt(t, s, "hello lateinfo", nil)
	nativetest.MustPrompt(t, s, "hello again", map[string]string{agent.ConfigModel: "fake/fake-fast", agent.ConfigMode: "plan"})
	if _, _, changed := ev.Snapshot(); changed != 0 {
		t.Errorf("%d ConfigChanged; opencode reported what the bridge sent", changed)
	}
	b := bodies(fc.requests(t, "POST", "/session/*/prompt_async"))
	if len(b) != 2 || b[1]["agent"] != "plan" || jsonOf(b[1]["model"]) != `{"modelID":"fake-fast","providerID":"fake"}` {
		t.Errorf("prompts %v", b)
	}
}

// nextTurn is what the fake answers to "hello again", a turn after a
// cancel.
const nextTurn = "\nagent: Hello from fake. You said: hello again\n"

// TestFake_cancelSlowTurn: a cancelled prompt aborts the session and
// returns cancelled once opencode is idle; the idle opencode repeats after
// an abort does not end the next turn early.
func TestFake_cancelSlowTurn(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	// The fake's turns start 50 ms after prompt_async's answer, and its
	// deltas are 50 ms apart: the answer has been read by the third (see
	// TestFake_cancelBeforePromptAnswered).
	nativetest.CancelTurn(t, s, ev, "slow please", "three deltas", func(us []acp.SessionUpdate, _ []nativetest.Ask) bool {
		return strings.Count(acptest.Conversation(us), "tick") >= 3
	})
	aborts := fc.requests(t, "POST", "/session/*/abort")
	if len(aborts) != 1 || aborts[0].Msg.Path != "/session/"+s.NativeID()+"/abort" {
		t.Fatalf("aborts %v", aborts)
	}
	nativetest.CheckNextTurn(t, s, ev, nextTurn)
	// The fake holds the duplicate idle until the next prompt came (a
	// while at most): it then falls between that prompt and its turn.
	idles, prompts, dupAfterPrompt := 0, 0, false
	for _, w := range fc.records(t) {
		switch {
		case w.Dir == "event" && w.Msg.Event.Type == "session.idle":
			idles++
			if idles == 2 && prompts == 2 {
				dupAfterPrompt = true
			}
		case w.Dir == "request" && strings.HasSuffix(w.Msg.Path, "/prompt_async"):
			prompts++
		}
	}
	if idles != 3 {
		t.Errorf("%d idles; want the abort's two and the next turn's", idles)
	}
	t.Logf("the duplicate idle came after the next prompt: %v", dupAfterPrompt)
}

// TestFake_cancelBeforePromptAnswered: a prompt cancelled while
// prompt_async has not been answered yet (opencode's first events may come
// before its answer) aborts the turn and ends cancelled.
func TestFake_cancelBeforePromptAnswered(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.CancelTurn(t, s, ev, "slow eager", "the first delta", nativetest.HasAgentText)
	if n := len(fc.requests(t, "POST", "/session/*/abort")); n != 1 {
		t.Errorf("%d aborts, want 1", n)
	}
	nativetest.CheckNextTurn(t, s, ev, nextTurn)
}

// TestFake_presetAtOpen: options recorded for a session are its values
// from Open on.
func TestFake_presetAtOpen(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{Config: map[string]string{agent.ConfigMode: "plan", agent.ConfigEffort: "low"}}, nativetest.NewRecorder("once"))
	nativetest.MustPrompt(t, s, "hello", nil)
	b := bodies(fc.requests(t, "POST", "/session/*/prompt_async"))
	if len(b) != 1 || b[0]["agent"] != "plan" || b[0]["variant"] != "low" {
		t.Errorf("prompt %v", b)
	}
}

// TestFake_resume: a session opened with a native id is looked up, not
// created, and continues; an unknown one fails its prompts.
func TestFake_resume(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	b := fc.backend(t)
	cwd := t.TempDir()
	s1 := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: cwd}, nativetest.NewRecorder("once"))
	nativetest.MustPrompt(t, s1, "hello there", nil)
	id := s1.NativeID()
	s1.Close()

	ev := nativetest.NewRecorder("once")
	s2 := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: cwd, NativeID: id}, ev)
	if s2.NativeID() != id {
		t.Errorf("resumed %q, want %q", s2.NativeID(), id)
	}
	nativetest.MustPrompt(t, s2, "hello again", nil)
	if got := ev.Conversation(); got != "\nagent: Hello from fake. You said: hello again\n" {
		t.Errorf("conversation %q", got)
	}
	if n := len(fc.requests(t, "POST", "/session")); n != 1 {
		t.Errorf("%d sessions created, want 1", n)
	}
	if gets := fc.requests(t, "GET", "/session/*"); len(gets) != 1 || gets[0].Msg.Path != "/session/"+id {
		t.Errorf("lookups %v", gets)
	}
	if n := fc.Count(t, "connect"); n != 1 {
		t.Errorf("%d event streams; sessions of one directory share one", n)
	}

	s3 := nativetest.OpenSession(t, b, agent.OpenOptions{NativeID: "ses_unknown"}, nativetest.NewRecorder("once"))
	_, err := nativetest.RunPrompt(t, s3, "hello", nil)
	if err == nil || !strings.Contains(err.Error(), "no session ses_unknown") || !strings.Contains(err.Error(), "404") {
		t.Errorf("prompt on an unknown session: %v", err)
	}
}

// TestFake_eventStreamReconnects: a dropped event stream is connected
// again, and the next turn works.
func TestFake_eventStreamReconnects(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t, fakeDropEnv+"=1") // the first stream drops right after server.connected
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, nativetest.NewRecorder("once"))
	waitReady(t, s)
	fc.waitLog(t, "the second stream", func(ws []wireRec) bool {
		return slices.ContainsFunc(ws, func(w wireRec) bool { return w.Dir == "connect" && w.Msg.Stream == 2 })
	})
	nativetest.MustPrompt(t, s, "hello there", nil)
	var drops []bool
	for _, w := range fc.records(t) {
		if w.Dir == "disconnect" {
			drops = append(drops, w.Msg.Dropped)
		}
	}
	if len(drops) != 1 || !drops[0] {
		t.Errorf("disconnects %v; want the one drop", drops)
	}
}

// TestFake_instanceDisposedAfterItsLastSession: OpenCode's instance of a
// directory is disposed of once the last session there closes (here
// without lingering), and not before; the directory the catalog was read
// in is kept while the bridge runs.
func TestFake_instanceDisposedAfterItsLastSession(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	b := fc.backend(t)
	b.linger = 0
	first, other := t.TempDir(), t.TempDir()
	open := func(dir string) agent.Native {
		s := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: dir}, nativetest.NewRecorder("once"))
		waitReady(t, s)
		return s
	}
	s0 := open(first) // reads the catalog in first
	s1, s2 := open(other), open(other)
	disposed := func() []string {
		var dirs []string
		for _, w := range fc.requests(t, http.MethodPost, "/instance/dispose") {
			dirs = append(dirs, w.Msg.Directory)
		}
		return dirs
	}
	s1.Close()
	if got := disposed(); len(got) != 0 {
		t.Fatalf("disposed of %v while a session is still in %s", got, other)
	}
	s2.Close()
	if got := disposed(); !slices.Equal(got, []string{other}) {
		t.Errorf("disposed of %v after the last session in %s closed", got, other)
	}
	s0.Close()
	if got := disposed(); !slices.Equal(got, []string{other}) {
		t.Errorf("disposed of %v; the catalog's directory %s is kept while the bridge runs", got, first)
	}
}

// TestFake_refusesWithoutAuth: the server the bridge starts takes no
// request without its password.
func TestFake_refusesWithoutAuth(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	b := fc.backend(t)
	s := nativetest.OpenSession(t, b, agent.OpenOptions{}, nativetest.NewRecorder("once"))
	waitReady(t, s)
	url := fc.records(t)[0].Msg.URL
	for _, auth := range []func(*http.Request){
		func(*http.Request) {},
		func(r *http.Request) { r.SetBasicAuth("opencode", "guess") },
	} {
		req, _ := http.NewRequest(http.MethodGet, url+"/global/health", nil)
		auth(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without the password: %s", url, resp.Status)
		}
	}
	if n := fc.Count(t, "refused"); n != 2 {
		t.Errorf("%d refused, want 2", n)
	}
}

// TestFake_promptContent: an image goes as a file part with a data URL;
// content opencode can't take is refused before anything is sent; a
// prompt cancelled before it starts is cancelled.
func TestFake_promptContent(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, nativetest.NewRecorder("once"))
	nativetest.CheckPromptRefusals(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), nativetest.WaitGuard)
	defer cancel()
	res, err := s.Prompt(ctx, agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("look"), acp.ImageBlock("aGk=", "image/png")}})
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", res, err)
	}
	b := bodies(fc.requests(t, "POST", "/session/*/prompt_async"))
	if len(b) != 1 || jsonOf(b[0]["parts"]) != `[{"text":"look","type":"text"},{"filename":"image","mime":"image/png","type":"file","url":"data:image/png;base64,aGk="}]` {
		t.Errorf("prompts %v", b)
	}
}

func TestAsCommand(t *testing.T) {
	s := &session{commands: map[string]bool{"hello": true}}
	for _, tc := range []struct {
		prompt    []acp.ContentBlock
		name, arg string
		ok        bool
	}{
		{[]acp.ContentBlock{acp.TextBlock("/hello the team ")}, "hello", "the team", true},
		{[]acp.ContentBlock{acp.TextBlock("/hello")}, "hello", "", true},
		{[]acp.ContentBlock{acp.TextBlock("/unknown x")}, "unknown", "x", false},
		{[]acp.ContentBlock{acp.TextBlock("hello")}, "", "", false},
		{[]acp.ContentBlock{acp.TextBlock("/hello"), acp.TextBlock("more")}, "", "", false},
	} {
		name, arg, ok := s.asCommand(tc.prompt)
		if ok != tc.ok || (ok && (name != tc.name || arg != tc.arg)) {
			t.Errorf("asCommand(%v) = %q %q %v", tc.prompt, name, arg, ok)
		}
	}
}
