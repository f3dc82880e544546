package opencode

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// ocRun is a suite test's run on the fake opencode serve.
type ocRun = nativetest.Run[*fakeOC]

// TestFake_suite runs nativetest's suite of a backend on one shared
// server on the fake opencode serve; the hooks below check what opencode
// was asked.
func TestFake_suite(t *testing.T) {
	nativetest.RunServerSuite(t, nativetest.ServerSuite[*fakeOC]{
		Agent: "opencode", EnvVar: EnvVar,
		New: func(t *testing.T, env ...string) (*fakeOC, nativetest.Checked) {
			fc := newFakeOC(t, env...)
			return fc, fc.backend(t)
		},
		OnPath: func(path string) nativetest.Checked {
			return New(Options{Path: path, Logger: slog.New(slog.DiscardHandler)})
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
