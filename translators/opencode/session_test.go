package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
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

// records reads the log so far: its complete lines, as a server may be
// writing one.
func (fc *fakeOC) records(t *testing.T) []wireRec {
	recs, lines := nativetest.ReadLog[wireRec](t, fc.Log)
	for i := range recs {
		recs[i].raw = lines[i]
	}
	return recs
}

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

// TestFake_openHasEveryOptionAtOnce: the first Open starts the server and
// reads the catalog before it returns, so the session's options are
// complete in the session/new response; the session is created with the
// rules that make opencode ask.
func TestFake_openHasEveryOptionAtOnce(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	b := fc.backend(t)
	cwd := t.TempDir()
	s := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: cwd}, nativetest.NewRecorder("once"))
	nativetest.CheckOptionsAtOpen(t, b, s, nativetest.Options{Agent: "opencode", IDs: "mode,model,effort",
		Mode: "build", Model: "fake/fake-model", Effort: agentkit.EffortDefault,
		Modes:  "build,plan", // the primary agents that are not hidden
		Models: "fake/fake-fast,fake/fake-model", Efforts: "default,low,medium,high", Other: "fake/fake-fast"})
	id := waitReady(t, s)
	if !strings.HasPrefix(id, "ses_") {
		t.Errorf("session id %q", id)
	}
	creates := fc.requests(t, "POST", "/session")
	if len(creates) != 1 || jsonOf(creates[0].Msg.Body) != `{"permission":[{"action":"ask","pattern":"*","permission":"bash"},`+
		`{"action":"ask","pattern":"*","permission":"edit"},{"action":"ask","pattern":"*","permission":"webfetch"}]}` {
		t.Errorf("POST /session %s", jsonOf(bodies(creates)))
	}
	w := fc.records(t)
	if len(w) == 0 || w[0].Dir != "start" || strings.Join(w[0].Msg.Args, " ") != "serve --port 0 --hostname 127.0.0.1" {
		t.Fatalf("the server was started as %+v", w[0].Msg)
	}
	var calls []string
	for _, r := range w {
		switch r.Dir {
		case "request":
			calls = append(calls, r.Msg.Method+" "+r.Msg.Path)
			if r.Msg.Path != "/global/health" && r.Msg.Directory != cwd {
				t.Errorf("%s %s for directory %q, want %q", r.Msg.Method, r.Msg.Path, r.Msg.Directory, cwd)
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

// TestFake_textTurn streams a message by its deltas, with the usage; the
// echoed prompt is not shown.
func TestFake_textTurn(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	res := nativetest.MustPrompt(t, s, "hello there", nil)
	nativetest.CheckStreamedAnswer(t, ev.Take(), "\nagent: Hello from fake. You said: hello there\n", 42, 128000)
	if u := res.Usage; u == nil || u.InputTokens != 42 || u.OutputTokens != 7 || u.TotalTokens != 49 {
		t.Errorf("turn usage %+v", u)
	}
	prompts := fc.requests(t, "POST", "/session/*/prompt_async")
	if len(prompts) != 1 || prompts[0].Msg.Path != "/session/"+s.NativeID()+"/prompt_async" {
		t.Fatalf("prompt_async %v", prompts)
	}
	if got := jsonOf(prompts[0].Msg.Body); got != `{"agent":"build","model":{"modelID":"fake-model","providerID":"fake"},"parts":[{"text":"hello there","type":"text"}]}` {
		t.Errorf("prompt %s", got)
	}
	if ct := prompts[0].Msg.ContentType; ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	nativetest.MustPrompt(t, s, "hello again", nil)
	if got := ev.Conversation(); got != "\nagent: Hello from fake. You said: hello again\n" {
		t.Errorf("second turn %q", got)
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

// TestFake_cancelWhileAsking: a turn cancelled while the user is asked
// ends cancelled, and the session takes the next prompt.
func TestFake_cancelWhileAsking(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("wait")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	nativetest.CancelTurn(t, s, ev, "run: rm -rf build", "the ask", nativetest.HasAsk)
	if n := len(fc.requests(t, "POST", "/session/*/abort")); n != 1 {
		t.Errorf("%d aborts", n)
	}
	nativetest.CheckNextTurn(t, s, ev, nextTurn)
}

// TestFake_failedTurn: a session error fails the turn with opencode's
// message; its repeated idle does not end the next turn.
func TestFake_failedTurn(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	_, err := nativetest.RunPrompt(t, s, "fail400 now", nil)
	if err == nil || err.Error() != "APIError: fake bad request (HTTP 400)" {
		t.Fatalf("err %v", err)
	}
	if errors.Is(err, agent.ErrAuthRequired) {
		t.Errorf("%v is not an auth error", err)
	}
	ev.Take()
	nativetest.MustPrompt(t, s, "hello again", nil)
	if got := ev.Conversation(); got != "\nagent: Hello from fake. You said: hello again\n" {
		t.Errorf("the next turn %q", got)
	}
}

// TestFake_authFailure: a provider that refuses the key asks the user to
// log in.
func TestFake_authFailure(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, nativetest.NewRecorder("once"))
	_, err := nativetest.RunPrompt(t, s, "authfail", nil)
	if !errors.Is(err, agent.ErrAuthRequired) || !strings.Contains(err.Error(), "Invalid API key") || !strings.Contains(err.Error(), "opencode auth login") {
		t.Fatalf("err %v; want ErrAuthRequired with opencode's message", err)
	}
}

// TestFake_serverCrashMidTurn: the turn ends with the exit and its stderr;
// the next prompt restarts the server and continues the session.
func TestFake_serverCrashMidTurn(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	cwd := t.TempDir()
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{Cwd: cwd}, ev)
	_, got := nativetest.CheckCrashMidTurn(t, s, ev, "fake opencode: boom, the model stream broke")
	id := s.NativeID()
	// The dead server's last events may still be read after the crash
	// ended the turn (or may be lost): the partial answer's end can come
	// late.
	late, ok := strings.CutPrefix(strings.TrimSuffix(got, "Hello from fake. You said: hello again\n"), "\nagent: ")
	if !ok || !strings.HasSuffix(got, "Hello from fake. You said: hello again\n") || !strings.HasSuffix("partial answer", late) {
		t.Errorf("after the restart %q", got)
	}
	if n := fc.Count(t, "start"); n != 2 {
		t.Errorf("%d servers started, want 2", n)
	}
	// The second server was asked about the session, not to make another,
	// and given the session's permission rules again.
	var second []string
	starts := 0
	for _, w := range fc.records(t) {
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

// TestFake_nextTurnOptions: the mode, model and effort picked go with the
// prompt as agent, model and variant, and stay.
func TestFake_nextTurnOptions(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	ev := nativetest.NewRecorder("once")
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{}, ev)
	// opencode reports the session's agent and model once more after a
	// turn's idle. Taken after the next turn's options were applied, that
	// report would flip them back (the bridge does not tell it from a
	// switch opencode made); each turn waits for its epilogue, which
	// follows the report, to keep this test about what the prompts carry.
	for i, turn := range []struct {
		text string
		cfg  map[string]string
	}{
		{"one", map[string]string{agent.ConfigMode: "plan", agent.ConfigModel: "fake/fake-fast", agent.ConfigEffort: "high"}},
		{"two", nil},
		{"three", map[string]string{agent.ConfigEffort: agentkit.EffortDefault, agent.ConfigModel: "fake/fake-model", agent.ConfigMode: "build"}},
		{"four", map[string]string{agent.ConfigModel: "nobody/nothing"}}, // not offered: ignored
	} {
		nativetest.MustPrompt(t, s, turn.text+" epilogue", turn.cfg)
		ev.WaitFor(t, "the epilogue", func(us []acp.SessionUpdate, _ []nativetest.Ask) bool {
			n := 0
			for _, u := range us {
				if u.Plan != nil {
					n++
				}
			}
			return n == i+1
		})
	}
	var got []string
	for _, b := range bodies(fc.requests(t, "POST", "/session/*/prompt_async")) {
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
	opts := s.Config()
	for id, want := range map[string]string{agent.ConfigMode: "build", agent.ConfigModel: "fake/fake-model", agent.ConfigEffort: agentkit.EffortDefault} {
		if o, _ := nativetest.FindOption(opts, id); o.Current != want {
			t.Errorf("%s = %q, want %q", id, o.Current, want)
		}
	}
	if _, _, changed := ev.Snapshot(); changed != 0 {
		t.Errorf("%d ConfigChanged; opencode reported what the bridge sent", changed)
	}
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

// TestFake_mcpServers: the client's MCP servers are added to the
// directory's instance before the session starts.
func TestFake_mcpServers(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	s := nativetest.OpenSession(t, fc.backend(t), agent.OpenOptions{MCPServers: []acp.McpServer{
		{Stdio: &acp.McpServerStdio{Name: "tools", Command: "/usr/bin/tool", Args: []string{"--stdio"}, Env: []acp.EnvVariable{{Name: "TOKEN", Value: "x"}}}},
		{Http: &acp.McpServerHttpInline{Name: "docs", Url: "http://127.0.0.1:9/mcp", Headers: []acp.HttpHeader{{Name: "Authorization", Value: "Bearer y"}}}},
		{Sse: &acp.McpServerSseInline{Name: "old", Url: "http://127.0.0.1:9/sse", Headers: []acp.HttpHeader{}}},
	}}, nativetest.NewRecorder("once"))
	waitReady(t, s)
	var got []string
	for _, b := range bodies(fc.requests(t, "POST", "/mcp")) {
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
	if errs := fc.errors(t); len(errs) != 0 {
		t.Errorf("the server refused: %v", errs)
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

// TestFake_backendCloseStopsTheServer: Close ends the server (by SIGTERM:
// opencode does not read its stdin) and leaves no process.
func TestFake_backendCloseStopsTheServer(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t, fakeEOFEnv+"=")
	b := fc.backend(t)
	s := nativetest.OpenSession(t, b, agent.OpenOptions{}, nativetest.NewRecorder("once"))
	nativetest.MustPrompt(t, s, "hello", nil)
	s.Close()
	b.Close()
	w := fc.records(t)
	if n := fc.Count(t, "exit"); n != 1 {
		t.Fatalf("the server exited %d times by Close, want 1", n)
	}
	for _, r := range w {
		if r.Dir == "exit" && !strings.Contains(r.raw, "terminated") {
			t.Errorf("exit %s; want by SIGTERM", r.raw)
		}
	}
	if testproc.Alive(w[0].Msg.Pid) {
		t.Errorf("the server's process %d is still there", w[0].Msg.Pid)
	}
	b.Close()
	// The catalog was read: Open after Close returns a session, whose
	// prompts fail.
	if s, err := b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir()}, nativetest.NewRecorder("once")); err == nil {
		defer s.Close()
		if _, err := nativetest.RunPrompt(t, s, "hello", nil); !errors.Is(err, agent.ErrAgentUnavailable) {
			t.Errorf("prompt after Close: %v", err)
		}
	} else if !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("Open after Close: %v", err)
	}
	if n := fc.Count(t, "start"); n != 1 {
		t.Errorf("%d servers started", n)
	}
}

// TestFake_closedBackendLeavesNoServer: whatever Open does after Close,
// no server is left running.
func TestFake_closedBackendLeavesNoServer(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	nativetest.CheckClosedBackendLeavesNoServer(t, fc.backend(t), func(dir string) int { return fc.Count(t, dir) })
}

// TestFake_twoDirectoriesAtOnce: two turns at once in two directories, on
// one server with a stream each; each session sees its own.
func TestFake_twoDirectoriesAtOnce(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	b := fc.backend(t)
	evs := []*nativetest.Recorder{nativetest.NewRecorder("once"), nativetest.NewRecorder("once")}
	dirs := []string{t.TempDir(), t.TempDir()}
	ss := []agent.Native{nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: dirs[0]}, evs[0]), nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: dirs[1]}, evs[1])}
	var wg sync.WaitGroup
	for i, s := range ss {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), nativetest.WaitGuard)
			defer cancel()
			if res, err := s.Prompt(ctx, nativetest.TextTurn([]string{"run: echo one", "run: echo two"}[i], nil)); err != nil || res.StopReason != acp.StopReasonEndTurn {
				t.Errorf("session %d: %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	for i, ev := range evs {
		got := ev.Conversation()
		want, other := []string{"one", "two"}[i], []string{"two", "one"}[i]
		if !strings.Contains(got, "Output was: "+want) || strings.Contains(got, other) {
			t.Errorf("session %d:%s", i, got)
		}
		if _, asks, _ := ev.Snapshot(); len(asks) != 1 {
			t.Errorf("session %d asked %d times", i, len(asks))
		}
	}
	if n := fc.Count(t, "start"); n != 1 {
		t.Errorf("%d servers, want 1", n)
	}
	var streams []string
	for _, w := range fc.records(t) {
		if w.Dir == "connect" {
			streams = append(streams, w.Msg.Directory)
		}
	}
	slices.Sort(streams)
	want := slices.Sorted(slices.Values(dirs))
	if !slices.Equal(streams, want) {
		t.Errorf("streams for %v, want %v", streams, want)
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

// TestFake_serverDoesNotStart: a server that exits at start fails Open
// with its stderr.
func TestFake_serverDoesNotStart(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t, fakeExitEnv+"=fake opencode: the config is broken")
	b := fc.backend(t)
	_, err := b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir()}, nativetest.NewRecorder("once"))
	if err == nil || !strings.Contains(err.Error(), "fake opencode: the config is broken") || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("Open: %v; want the server's exit and stderr", err)
	}
}

// TestFake_warm starts the server and reads the catalog before any
// session; Open then finds it.
func TestFake_warm(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	b := fc.backend(t)
	b.Warm("")
	fc.waitLog(t, "the catalog", func(ws []wireRec) bool {
		return slices.ContainsFunc(ws, func(w wireRec) bool { return w.Dir == "request" && w.Msg.Path == "/config" })
	})
	s := nativetest.OpenSession(t, b, agent.OpenOptions{}, nativetest.NewRecorder("once"))
	if model, ok := nativetest.FindOption(s.Config(), agent.ConfigModel); !ok || model.Current != "fake/fake-model" {
		t.Errorf("model option %+v", model)
	}
	nativetest.MustPrompt(t, s, "hello", nil)
	if n, m := len(fc.requests(t, "GET", "/agent")), fc.Count(t, "start"); n != 1 || m != 1 {
		t.Errorf("%d GET /agent, %d servers; want one each", n, m)
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

// TestFake_missingExecutable: no opencode is ErrAgentUnavailable, at Open;
// Warm does nothing.
func TestFake_missingExecutable(t *testing.T) {
	nativetest.CheckMissingExecutable(t, "opencode", EnvVar, func(path string) nativetest.Checked {
		return New(Options{Path: path, Logger: slog.New(slog.DiscardHandler)})
	})
}

// TestFake_forkIsOpenCodesOwnFork: a session opened with ForkOf forks the
// parent's OpenCode session, gives the fork the bridge's permission rules
// (a fork does not inherit them), and goes on on the fork; the parent's
// session goes on as it was.
func TestFake_forkIsOpenCodesOwnFork(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	b := fc.backend(t)
	if !b.Info().Caps.Forks {
		t.Fatal("opencode does not fork")
	}
	cwd := t.TempDir()
	parent := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: cwd}, nativetest.NewRecorder("once"))
	nativetest.MustPrompt(t, parent, "hello there", nil)
	told := false
	ev := nativetest.NewRecorder("once")
	fork := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: cwd, ForkOf: parent.NativeID(),
		History: func() []acp.SessionUpdate { told = true; return nil }}, ev)
	id := waitReady(t, fork)
	if id == parent.NativeID() {
		t.Fatalf("the fork is on the parent's session %s", id)
	}
	forks := fc.requests(t, "POST", "/session/*/fork")
	if len(forks) != 1 || forks[0].Msg.Path != "/session/"+parent.NativeID()+"/fork" || len(fc.requests(t, "POST", "/session")) != 1 {
		t.Fatalf("forks %v; want one fork of the parent and no new session", forks)
	}
	patches := fc.requests(t, "PATCH", "/session/*")
	if len(patches) != 1 || patches[0].Msg.Path != "/session/"+id || jsonOf(patches[0].Msg.Body["permission"]) != jsonOf(rules) {
		t.Errorf("updates %v; want the fork given the bridge's rules", bodies(patches))
	}
	nativetest.MustPrompt(t, fork, "run: echo from-the-fork", nil)
	if _, asks, _ := ev.Snapshot(); len(asks) != 1 {
		t.Errorf("%d asks in the fork; want its command asked about", len(asks))
	}
	prompts := fc.requests(t, "POST", "/session/*/prompt_async")
	if len(prompts) != 2 || prompts[1].Msg.Path != "/session/"+id+"/prompt_async" {
		t.Errorf("prompts %v", prompts)
	}
	if got := jsonOf(prompts[1].Msg.Body["parts"]); strings.Contains(got, "forked from") || told {
		t.Errorf("the fork's first prompt %s (the transcript read: %v); want the prompt alone", got, told)
	}
}

// TestFake_forkOpenCodeCannotMake: a parent OpenCode no longer has, or
// one in another directory (OpenCode would keep the fork there), is
// forked as a new session with the bridge's rules, whose first prompt
// tells it the conversation from the bridge's transcript, once; the
// client sees a thought saying so.
func TestFake_forkOpenCodeCannotMake(t *testing.T) {
	t.Parallel()
	fc := newFakeOC(t)
	b := fc.backend(t)
	other := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: t.TempDir()}, nativetest.NewRecorder("once"))
	nativetest.MustPrompt(t, other, "hello there", nil)
	recorded := []acp.SessionUpdate{acp.UpdateUserMessageText("Remember the word apricot"),
		acp.UpdateAgentMessageText("I will."), acp.UpdateUserMessageText("Which word was it")}
	for name, parent := range map[string]string{"gone": "ses_gone", "elsewhere": other.NativeID()} {
		t.Run(name, func(t *testing.T) {
			ev := nativetest.NewRecorder("once")
			fork := nativetest.OpenSession(t, b, agent.OpenOptions{Cwd: t.TempDir(), ForkOf: parent,
				History: func() []acp.SessionUpdate { return recorded }}, ev)
			id := waitReady(t, fork)
			nativetest.MustPrompt(t, fork, "Which word was it", nil)
			nativetest.MustPrompt(t, fork, "And again", nil)
			var mine []wireRec
			for _, p := range fc.requests(t, "POST", "/session/*/prompt_async") {
				if p.Msg.Path == "/session/"+id+"/prompt_async" {
					mine = append(mine, p)
				}
			}
			if len(mine) != 2 {
				t.Fatalf("prompts %v", mine)
			}
			first := jsonOf(mine[0].Msg.Body["parts"])
			if !strings.Contains(first, "which it was forked from") || !strings.Contains(first, "Remember the word apricot") ||
				strings.Count(first, "Which word was it") != 1 {
				t.Errorf("the first prompt %s; want the conversation told once, then the prompt", first)
			}
			if second := jsonOf(mine[1].Msg.Body["parts"]); strings.Contains(second, "forked from") {
				t.Errorf("the second prompt %s; want the prompt alone", second)
			}
			if got := ev.Conversation(); !strings.Contains(got, "OpenCode could not fork the parent's session") {
				t.Errorf("conversation:%s", got)
			}
		})
	}
	if n := len(fc.requests(t, "POST", "/session/*/fork")); n != 0 {
		t.Errorf("%d forks; want none", n)
	}
	for _, c := range bodies(fc.requests(t, "POST", "/session")) {
		if jsonOf(c["permission"]) != jsonOf(rules) {
			t.Errorf("a session created without the bridge's rules: %v", c)
		}
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

// TestFake_directoriesAndSystemPrompt: a session's additional directories
// are external_directory rules it is allowed, on POST /session and again
// on a resume (whose directories may have changed); its system prompt
// goes with each prompt.
func TestFake_directoriesAndSystemPrompt(t *testing.T) {
	fc := newFakeOC(t)
	b := fc.backend(t)
	cwd, lib := t.TempDir(), t.TempDir()
	opts := agent.OpenOptions{Cwd: cwd, Directories: []string{lib}, SystemPrompt: &agent.SystemPrompt{Text: "Answer tersely."}}
	s := nativetest.OpenSession(t, b, opts, nativetest.NewRecorder("once"))
	id := waitReady(t, s)
	want := jsonOf(sessionRules([]string{lib}))
	if creates := fc.requests(t, "POST", "/session"); len(creates) != 1 || jsonOf(creates[0].Msg.Body["permission"]) != want ||
		!strings.Contains(want, `{"action":"allow","pattern":"`+lib+`/*","permission":"external_directory"}`) {
		t.Errorf("POST /session %s; want the rules %s", jsonOf(bodies(creates)), want)
	}
	if _, err := s.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("hello")}}); err != nil {
		t.Fatal(err)
	}
	if ps := fc.requests(t, "POST", "/session/*/prompt_async"); len(ps) != 1 || ps[0].Msg.Body["system"] != "Answer tersely." {
		t.Errorf("prompt_async %s; want the system prompt", jsonOf(bodies(ps)))
	}
	opts.NativeID, opts.Directories = id, nil
	resumed := nativetest.OpenSession(t, b, opts, nativetest.NewRecorder("once"))
	if _, err := resumed.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("again")}}); err != nil {
		t.Fatal(err)
	}
	if patches := fc.requests(t, "PATCH", "/session/*"); len(patches) != 1 || jsonOf(patches[0].Msg.Body["permission"]) != jsonOf(rules) {
		t.Errorf("the resume PATCHed %s; want the bridge's rules alone", jsonOf(bodies(patches)))
	}
}
