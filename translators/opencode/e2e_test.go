package opencode

import (
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakechat"
	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// The tests in this file run the real, pinned opencode (installed by
// scripts/install-tools.sh) against the fake Chat Completions API,
// isolated in its own HOME, through the bridge, driven by an ACP client.
// They skip loudly when opencode is missing, and fail instead under
// ACPBRIDGE_REQUIRE_E2E=1. Most share one server (a start costs seconds);
// each test works in a directory of its own, or, if it leaves nothing
// there, in one they share (sharedWorkspace).

// world is one fake model and one OpenCode home.
type world struct {
	bin  string
	srv  *fakechat.Server
	home string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{bin: fakechat.OpencodeBin(t), srv: fakechat.New(fakechat.Directives())}
	t.Cleanup(w.srv.Close)
	w.home = fakechat.Home(t, w.srv.URL)
	return w
}

func (w *world) backend() *Backend {
	return New(Options{Path: w.bin, Env: fakechat.Env(w.home, fakechat.ConfigPath(w.home))})
}

// shared is the backend most tests share: one server for them all.
var shared struct {
	once sync.Once
	w    *world
	b    *Backend

	dirOnce sync.Once
	dir     string // sharedWorkspace
}

// removeSharedHome stops the shared server and removes its home, once
// every test has run (TestMain).
func removeSharedHome() {
	if shared.b == nil {
		return
	}
	shared.b.Close()
	shared.w.srv.Close()
	os.RemoveAll(shared.w.home)
}

// kept is a Backend whose Close leaves the shared server running: it
// dies with the test binary (its process group is killed when the bridge
// process goes).
type kept struct{ *Backend }

func (kept) Close() error { return nil }

// sharedEditor starts a bridge on the shared server.
func sharedEditor(t *testing.T) (*editortest.Editor, *world) {
	t.Helper()
	return sharedEditorOffering(t, acp.ClientCapabilities{})
}

// sharedEditorOffering is sharedEditor for an editor that offers caps.
func sharedEditorOffering(t *testing.T, caps acp.ClientCapabilities) (*editortest.Editor, *world) {
	t.Helper()
	b, w := sharedBackend(t)
	return editortest.StartEditorOffering(t, b, t.TempDir(), bridge.PersistAuto, caps), w
}

// sharedBackend is the backend on the shared server, and its world.
func sharedBackend(t *testing.T) (agent.Backend, *world) {
	t.Helper()
	bin := fakechat.OpencodeBin(t) // skips before anything is shared
	shared.once.Do(func() {
		srv := fakechat.New(fakechat.Directives())
		home, err := os.MkdirTemp("", "acpbridge-opencode-e2e-")
		if err != nil {
			t.Fatal(err)
		}
		if err := fakechat.WriteHome(home, srv.URL); err != nil {
			t.Fatal(err)
		}
		shared.w = &world{bin: bin, srv: srv, home: home}
		shared.b = shared.w.backend()
	})
	return kept{shared.b}, shared.w
}

// sharedWorkspace is the git repository that the shared-server tests
// which leave nothing behind in it work in (in the shared home): OpenCode
// bootstraps an instance for each directory it serves, at seconds of CPU
// each.
func sharedWorkspace(t *testing.T) string {
	t.Helper()
	shared.dirOnce.Do(func() {
		shared.dir = filepath.Join(shared.w.home, "work")
		if err := os.Mkdir(shared.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("git", "init", "-q", shared.dir).CombinedOutput(); err != nil {
			t.Logf("git init: %v: %s (continuing without git)", err, out)
		}
	})
	return shared.dir
}

// workspace is a fresh git repository to work in.
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", dir).CombinedOutput(); err != nil {
		t.Logf("git init: %v: %s (continuing without git)", err, out)
	}
	return dir
}

// TestE2E_sharedServer runs, one after the other, the end-to-end tests
// that share one opencode server (each in a session of its own), while
// the tests with a server of their own run beside it: all three are
// parallel top-level tests.
func TestE2E_sharedServer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		test func(*testing.T)
	}{
		{"textTurnAndOptions", e2eTextTurnAndOptions},
		{"bashPermission", e2eBashPermission},
		{"writeAskShowsTheDiff", e2eWriteAskShowsTheDiff},
		{"editsThroughTheEditor", e2eEditsThroughTheEditor},
		{"todoIsThePlan", e2eTodoIsThePlan},
		{"questionIsAChoice", e2eQuestionIsAChoice},
		{"questionIsAFormWhereTheEditorTakesThem", e2eQuestionIsAForm},
		{"imageReachesTheModel", e2eImageReachesTheModel},
		{"cancelThenTheNextTurn", e2eCancelThenTheNextTurn},
		{"modelError", e2eModelError},
		{"reasoningIsAThought", e2eReasoningIsAThought},
		{"forkIsOpenCodesOwnFork", e2eForkIsOpenCodesOwnFork},
		{"forkReopenedBeforeItsFirstPrompt", e2eForkReopenedBeforeItsFirstPrompt},
		{"forkIntoAnotherDirectoryIsTold", e2eForkIntoAnotherDirectoryIsTold},
		{"slashCommand", e2eSlashCommand},
		{"subagentChildSession", e2eSubagentChildSession},
		{"subagentFlattened", e2eSubagentFlattened},
		{"subagentCancel", e2eSubagentCancel},
	} {
		t.Run(tc.name, tc.test)
	}
}

func e2eTextTurnAndOptions(t *testing.T) {
	e, _ := sharedEditor(t)
	resp := e.NewSessionResponse(sharedWorkspace(t))
	choices := acptest.Choices(resp.ConfigOptions)
	if !contains(choices[agent.ConfigMode], "build") || !contains(choices[agent.ConfigMode], "plan") || !contains(choices[agent.ConfigModel], fakechat.ModelRef) {
		t.Errorf("session/new options %v; want modes build and plan and the fake model", choices)
	}
	if cur := acptest.Current(resp.ConfigOptions); cur[agent.ConfigMode] != "build" || cur[agent.ConfigModel] != fakechat.ModelRef {
		t.Errorf("current options %v", cur)
	}
	pr, err := e.Prompt(resp.SessionId, "hello there")
	if err != nil || pr.StopReason != acp.StopReasonEndTurn || pr.Usage == nil {
		t.Fatalf("prompt: %+v, %v", pr, err)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, "agent: "+fakechat.AnswerTextPrefix+"hello there") {
		t.Errorf("conversation:%s", got)
	}
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

func e2eBashPermission(t *testing.T) {
	for _, option := range []string{"once", "reject", "cancelled"} {
		t.Run(option, func(t *testing.T) {
			e, _ := sharedEditor(t)
			e.Client.Option = option
			cwd, made := sharedWorkspace(t), "made-"+option+".txt" // a file of its own: a new directory costs OpenCode seconds of CPU
			editortest.CheckCommandAsk(t, e, e.NewSession(cwd), cwd, "touch "+made+" && echo made", made, option == "once")
		})
	}
}

// e2eWriteAskShowsTheDiff: the permission ask for a write carries
// the diff the editor reviews, and the file is written once allowed.
func e2eWriteAskShowsTheDiff(t *testing.T) {
	e, _ := sharedEditor(t)
	e.Client.Option = "once"
	cwd := sharedWorkspace(t)
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "write: asked.txt hello world"); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cwd, "asked.txt")
	asks := e.Client.Asks()
	if len(asks) != 1 {
		t.Fatalf("%d asks, want 1", len(asks))
	}
	var diff *acp.ToolCallContentDiff
	for _, c := range asks[0].ToolCall.Content {
		if c.Diff != nil {
			diff = c.Diff
		}
	}
	if diff == nil || diff.Path != path || !strings.Contains(diff.NewText, "hello world") {
		t.Errorf("ask %+v; want the diff of %s", asks[0].ToolCall, path)
	}
	if b, err := os.ReadFile(path); err != nil || strings.TrimSpace(string(b)) != "hello world" {
		t.Errorf("file: %q, %v", b, err)
	}
}

// e2eEditsThroughTheEditor: with edits = editor, OpenCode's write and
// edit reach the editor's buffer through fs/write_text_file, each with the
// file on disk as it was before; the edit, allowed always, runs unasked.
func e2eEditsThroughTheEditor(t *testing.T) {
	e, _ := sharedEditorOffering(t, acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
	e.Client.Option, e.Client.Disk = "always", true
	cwd := sharedWorkspace(t)
	id := e.NewSession(cwd)
	e.EditsThroughEditor(id)
	e.Say(id, "write: edited.txt hello world", "edit: edited.txt world => editor")
	path := filepath.Join(cwd, "edited.txt")
	e.CheckWrites([]editortest.Write{{Path: path, Content: "hello world\n", Existed: true}, {Path: path, Content: "hello editor\n", OnDisk: "hello world\n", Existed: true}})
}

func e2eTodoIsThePlan(t *testing.T) {
	e, _ := sharedEditor(t)
	id := e.NewSession(sharedWorkspace(t))
	if _, err := e.Prompt(id, "todo"); err != nil {
		t.Fatal(err)
	}
	got := e.Client.Conversation()
	if !strings.Contains(got, "plan first step in_progress\nplan second step pending\n") || strings.Contains(got, "todowrite") {
		t.Errorf("conversation:%s\nwant the todo list as the plan", got)
	}
}

// e2eQuestionIsAChoice: OpenCode's question becomes a permission ask
// whose options are the answers; the answer picked reaches the model.
func e2eQuestionIsAChoice(t *testing.T) {
	e, w := sharedEditor(t)
	e.Client.Option = "answer-1"
	id := e.NewSession(sharedWorkspace(t))
	if _, err := e.Prompt(id, "ask"); err != nil {
		t.Fatal(err)
	}
	asks := e.Client.Asks()
	if len(asks) != 1 || len(asks[0].Options) != 3 || asks[0].Options[1].OptionId != "answer-1" {
		t.Fatalf("asks %+v; want the question with red, blue and a way out", asks)
	}
	if !strings.Contains(lastResult(w), `"blue"`) {
		t.Errorf("the model got %q; want the answer blue", lastResult(w))
	}
}

// e2eQuestionIsAForm: to an editor that takes forms, OpenCode's question is
// an elicitation form, and the answer filled in reaches the model.
func e2eQuestionIsAForm(t *testing.T) {
	e, w := sharedEditorOffering(t, acp.ClientCapabilities{Elicitation: &acp.ElicitationCapabilities{Form: &acp.ElicitationFormCapabilities{}}})
	e.Client.Elicit = func(acp.CreateElicitationRequest) acp.CreateElicitationResponse {
		return acp.CreateElicitationResponse{Accept: &acp.CreateElicitationAccept{Action: "accept", Content: map[string]any{"answer": "blue"}}}
	}
	id := e.NewSession(sharedWorkspace(t))
	if _, err := e.Prompt(id, "ask"); err != nil {
		t.Fatal(err)
	}
	if forms := e.Client.Elicited(); len(forms) != 1 || len(e.Client.Asks()) != 0 {
		t.Fatalf("forms %+v and %d permission asks; want one form", forms, len(e.Client.Asks()))
	}
	if !strings.Contains(lastResult(w), `"blue"`) {
		t.Errorf("the model got %q; want the answer blue", lastResult(w))
	}
}

// lastResult is the content of the tool result the model last got.
func lastResult(w *world) string {
	reqs := w.srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if len(reqs[i].Results) > 0 {
			return reqs[i].Results[0].Content
		}
	}
	return ""
}

func e2eImageReachesTheModel(t *testing.T) {
	e, _ := sharedEditor(t)
	id := e.NewSession(sharedWorkspace(t))
	png := "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
	_, err := e.CS.Prompt(e.Ctx(), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock("look at this"), acp.ImageBlock(png, "image/png")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, fakechat.ImagesText(1)) {
		t.Errorf("conversation:%s", got)
	}
}

// e2eCancelThenTheNextTurn: a cancelled slow turn answers cancelled,
// and the idle OpenCode repeats after an abort does not end the next turn
// early.
func e2eCancelThenTheNextTurn(t *testing.T) {
	e, _ := sharedEditor(t)
	editortest.CheckCancelMidTurn(t, e, e.NewSession(sharedWorkspace(t)))
}

func e2eModelError(t *testing.T) {
	e, _ := sharedEditor(t)
	_, err := e.Prompt(e.NewSession(sharedWorkspace(t)), "fail400")
	if re, ok := err.(*acp.RequestError); !ok || re.Code != -32603 || !strings.Contains(re.Message, fakechat.Fail400Message) {
		t.Errorf("HTTP 400 from the model: %v; want -32603 with its message", err)
	}
}

// TestE2E_serverKilledMidTurn: the turn fails with the server's exit, and
// the next prompt starts another server and continues the session.
func TestE2E_serverKilledMidTurn(t *testing.T) {
	t.Parallel() // a server of its own: it runs beside the shared-server tests
	w := newWorld(t)
	b := w.backend()
	e := editortest.StartEditor(t, b, t.TempDir(), bridge.PersistAuto)
	editortest.CheckServerKilledMidTurn(t, e, e.NewSession(workspace(t)), "killed", func() {
		srv, _ := b.shared.Running()
		testproc.KillGroup(srv.l.Pid())
	})
}

// TestE2E_restartLoadsAndContinues: after a bridge restart, session/load
// replays acpbridge's transcript, and the next prompt continues the same
// OpenCode session (the model sees the earlier turn).
func TestE2E_restartLoadsAndContinues(t *testing.T) {
	t.Parallel() // a server of its own: it runs beside the shared-server tests
	w, state := newWorld(t), t.TempDir()
	start := func() *editortest.Editor { return editortest.StartEditor(t, w.backend(), state, bridge.PersistAuto) }
	editortest.CheckRestart(t, start, workspace(t), "hello there", "second prompt")
	reqs := w.srv.Requests()
	last := reqs[len(reqs)-1]
	if !strings.Contains(strings.Join(userTexts(last), "\n"), "hello there") {
		t.Errorf("the continued session's request lacks the first turn: %q", userTexts(last))
	}
}

func userTexts(r fakechat.Request) []string {
	var out []string
	for _, m := range r.Messages {
		if m.Role == "user" {
			out = append(out, m.Text)
		}
	}
	return out
}

func e2eReasoningIsAThought(t *testing.T) {
	e, _ := sharedEditor(t)
	id := e.NewSession(sharedWorkspace(t))
	if _, err := e.Prompt(id, "think about it"); err != nil {
		t.Fatal(err)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, "thought: "+fakechat.ReasoningText+"\nagent: "+fakechat.AnswerTextPrefix) {
		t.Errorf("conversation:%s\nwant the reasoning as a thought, then the answer", got)
	}
}

// e2eForkIsOpenCodesOwnFork: a fork continues on an OpenCode session
// forked from the parent's: the model sees the parent's turn as
// OpenCode's own history, not retold, the fork still asks before a
// command runs, and the parent goes on without the fork's turns.
// e2eForkReopenedBeforeItsFirstPrompt: a fork reopened by a new bridge
// before its first prompt continues the parent's conversation.
func e2eForkReopenedBeforeItsFirstPrompt(t *testing.T) {
	_, w := sharedEditor(t)
	state := t.TempDir()
	var e *editortest.Editor
	start := func() *editortest.Editor {
		e = editortest.StartEditorOffering(t, kept{shared.b}, state, bridge.PersistAuto, acp.ClientCapabilities{})
		return e
	}
	editortest.CheckForkReopened(t, start, sharedWorkspace(t), editortest.OwnFork{Said: func(id acp.SessionId) string {
		return strings.Join(userTexts(lastRequestOf(t, w, e.NativeIDs()[id])), "\n")
	}})
}

func e2eForkIsOpenCodesOwnFork(t *testing.T) {
	e, w := sharedEditor(t)
	_, fork := editortest.CheckOwnFork(t, e, sharedWorkspace(t), editortest.OwnFork{Retold: "which it was forked from",
		Said: func(id acp.SessionId) string {
			return strings.Join(userTexts(lastRequestOf(t, w, e.NativeIDs()[id])), "\n")
		}})
	e.Client.Option = "reject"
	if _, err := e.Prompt(fork, "run: echo from-the-fork"); err != nil {
		t.Fatal(err)
	}
	if e.Client.Asked() != 1 {
		t.Errorf("%d asks; want the fork's command asked about", e.Client.Asked())
	}
}

// e2eForkIntoAnotherDirectoryIsTold: OpenCode keeps a fork in its
// parent's directory, so a fork into another one is a new session there,
// told the conversation from the bridge's transcript with its first
// prompt.
func e2eForkIntoAnotherDirectoryIsTold(t *testing.T) {
	e, w := sharedEditor(t)
	parent := e.NewSession(sharedWorkspace(t))
	if _, err := e.Prompt(parent, "Remember the word plum"); err != nil {
		t.Fatal(err)
	}
	elsewhere := workspace(t)
	fork := e.Fork(parent, elsewhere)
	if _, err := e.Prompt(fork, "run: pwd"); err != nil {
		t.Fatal(err)
	}
	req := lastRequestOf(t, w, e.NativeIDs()[fork])
	said := strings.Join(userTexts(req), "\n")
	if !strings.Contains(said, "which it was forked from") || !strings.Contains(said, "Remember the word plum") {
		t.Errorf("the fork's model request does not tell the parent's conversation: %q", said)
	}
	if req.Cwd != elsewhere {
		t.Errorf("the fork works in %s, want %s", req.Cwd, elsewhere)
	}
}

// lastRequestOf is the fake model's last answer request (not a title's)
// for OpenCode session id.
func lastRequestOf(t *testing.T, w *world, id string) fakechat.Request {
	t.Helper()
	reqs := w.srv.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		if reqs[i].SessionID == id && !reqs[i].Title {
			return reqs[i]
		}
	}
	t.Fatalf("the model got no request for %s", id)
	return fakechat.Request{}
}

// e2eSlashCommand: OpenCode's commands, the project's own included,
// come as available commands, and "/name arguments" runs one: the model
// gets the command's template with the arguments.
func e2eSlashCommand(t *testing.T) {
	e, w := sharedEditor(t)
	cwd := workspace(t)
	dir := filepath.Join(cwd, ".opencode", "command")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\ndescription: say hello to someone\n---\nSay hello to $ARGUMENTS please\n"
	if err := os.WriteFile(filepath.Join(dir, "hello.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	id := e.NewSession(cwd)
	var listed []acp.AvailableCommand
	e.WaitFor(func(u acp.SessionUpdate) bool {
		if u.AvailableCommandsUpdate != nil {
			listed = u.AvailableCommandsUpdate.AvailableCommands
		}
		return listed != nil
	})
	var names []string
	for _, c := range listed {
		names = append(names, c.Name)
	}
	if !slices.Contains(names, "hello") || !slices.Contains(names, "init") {
		t.Errorf("available commands %v; want the project's hello and the built-in init", names)
	}
	r, err := e.Prompt(id, "/hello the team")
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("/hello: %+v, %v", r, err)
	}
	reqs := w.srv.Requests()
	if got := strings.Join(userTexts(reqs[len(reqs)-1]), "\n"); !strings.Contains(got, "Say hello to the team please") {
		t.Errorf("the model got %q; want the command's template with its arguments", got)
	}
}

// TestE2E_daemonSharedByBridges: with Shared, bridges share one opencode
// serve (see editortest.CheckSharedServer), their sessions in one
// directory, each asked only for its own session's permissions.
func TestE2E_daemonSharedByBridges(t *testing.T) {
	t.Parallel() // servers of its own
	w, root := newWorld(t), t.TempDir()
	t.Cleanup(func() { daemon.StopAll(root) })
	env := append(fakechat.Env(w.home, fakechat.ConfigPath(w.home)), daemon.RootEnv+"="+root)
	editortest.CheckSharedServer(t, editortest.SharedServer{
		Backend: func() agent.Backend { return New(Options{Path: w.bin, Env: env, Shared: time.Minute}) },
		Server: func(b agent.Backend) (int, <-chan struct{}) {
			srv := running(t, b)
			return srv.l.Pid(), srv.Done()
		},
		Dir:     func() string { return workspace(t) },
		Asking:  func(e *editortest.Editor, _ acp.SessionId) { e.Client.Option = "once" },
		Command: "run: touch made.txt && echo made", Runs: "touch made.txt && echo made", File: "made.txt",
		OneDir: true,
	})
}

// running is the opencode serve b runs on.
func running(t *testing.T, b agent.Backend) *server {
	t.Helper()
	srv, ok := b.(*Backend).shared.Running()
	if !ok {
		t.Fatal("no server")
	}
	return srv
}

// TestE2E_keeperKilled: the keeper of a shared opencode serve SIGKILLed
// while two bridges' turns run on it (see editortest.CheckKeeperKilled).
func TestE2E_keeperKilled(t *testing.T) {
	t.Parallel() // servers of its own
	w, root := newWorld(t), t.TempDir()
	t.Cleanup(func() { daemon.StopAll(root) })
	env := append(fakechat.Env(w.home, fakechat.ConfigPath(w.home)), daemon.RootEnv+"="+root)
	editortest.CheckKeeperKilled(t, editortest.KeeperKilled{
		Backend: func() agent.Backend { return New(Options{Path: w.bin, Env: env, Shared: time.Minute}) },
		Keeper:  func(b agent.Backend) int { return running(t, b).l.(*agentkit.Leased).Keeper() },
		Dir:     func() string { return workspace(t) },
		Slow:    "slow",
	})
}

// TestE2E_noDaemonFallsBack: with its daemons' directory read-only, a
// bridge runs its own opencode serve (see editortest.CheckNoDaemon).
func TestE2E_noDaemonFallsBack(t *testing.T) {
	t.Parallel() // a server of its own
	w := newWorld(t)
	editortest.CheckNoDaemon(t, editortest.NoDaemon{
		Backend: func(root string, log *slog.Logger) agent.Backend {
			env := append(fakechat.Env(w.home, fakechat.ConfigPath(w.home)), daemon.RootEnv+"="+root)
			return New(Options{Path: w.bin, Env: env, Shared: time.Minute, Logger: log})
		},
		Dir: func() string { return workspace(t) },
	})
}

// TestE2E_keptCatalog: session/new answers from the catalog kept on disk,
// then offers the server's (see editortest.CheckKeptCatalog).
func TestE2E_keptCatalog(t *testing.T) {
	t.Parallel() // servers of its own
	w := newWorld(t)
	editortest.CheckKeptCatalog(t, editortest.KeptCatalog{
		Backend: func(catalogs string) agent.Backend {
			return New(Options{Path: w.bin, Env: fakechat.Env(w.home, fakechat.ConfigPath(w.home)), Catalogs: catalogs})
		},
		Dir: func() string { return workspace(t) },
		Stale: func(t *testing.T, file, model string) {
			var k keptCatalog
			if !agentkit.LoadCatalog(file, &k) {
				t.Fatalf("no catalog in %s", file)
			}
			k.Models = append(k.Models, keptModel{Ref: model, Name: model})
			b, _ := json.Marshal(k)
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// firstSession is a new user's OpenCode (see editortest.FirstSession):
// the fake's opencode.json names its model; the server's catalog adds
// the model's variants (efforts).
func firstSession(t *testing.T) editortest.FirstSession {
	w := newWorld(t)
	return editortest.FirstSession{
		Backend: func(path, catalogs string, log *slog.Logger) agent.Backend {
			return New(Options{Path: path, Env: fakechat.Env(w.home, fakechat.ConfigPath(w.home)), Catalogs: catalogs, Logger: log})
		},
		Real: w.bin, Serve: "serve", Dir: func() string { return workspace(t) }, Model: fakechat.ModelRef,
		Listed: func(opts []acp.SessionConfigOption) bool {
			return len(acptest.Choices(opts)[agent.ConfigEffort]) > 1
		},
	}
}

// TestE2E_firstSession: with no catalog kept and the server held back,
// session/new answers from opencode.json; the server's catalog follows
// (see editortest.CheckFirstSession).
func TestE2E_firstSession(t *testing.T) {
	t.Parallel() // a server of its own
	editortest.CheckFirstSession(t, firstSession(t))
}

// TestE2E_firstSessionServerFails: the server of a session answered from
// opencode.json fails to start; the first prompt says why, the next one
// runs (see editortest.CheckFirstSessionFails).
func TestE2E_firstSessionServerFails(t *testing.T) {
	t.Parallel() // a server of its own
	editortest.CheckFirstSessionFails(t, firstSession(t))
}

// The system prompt reaches the model as a system message (OpenCode
// appends it to its own); the additional directory is allowed, not told.
func TestE2E_directoriesAndSystemPrompt(t *testing.T) {
	e, w := sharedEditor(t)
	editortest.CheckSetup(t, editortest.Setup{Editor: e, Cwd: sharedWorkspace(t), Mode: acp.SystemPromptModeAppend, Sent: editortest.SentBy(w.srv.Requests,
		func(r fakechat.Request) map[string]any { return r.Raw }, func(body map[string]any) any {
			return editortest.WithRole(body["messages"], "system")
		})})
}

// The official TS SDK's unstable v1 client, opted into every capability,
// accepts every message of an OpenCode session with a directory and a
// system prompt that runs a command it asks for, live and replayed; the
// model was sent the system prompt.
func TestE2E_sdkUnstableClient(t *testing.T) {
	b, w := sharedBackend(t)
	lib := t.TempDir()
	r := sdkclient.Run(t, b, sdkclient.Plan{Cwd: sharedWorkspace(t), Dirs: []string{lib}, Mode: "append", SystemPrompt: "Speak like a pirate, sdk.",
		Prompts: []string{"run: echo sdk-unstable", "hello sdk"}})
	sdkclient.Check(t, r, sdkclient.Want{Said: []string{`"name":"bash"`}, Replayed: []string{"tool_call", "agent_message_chunk"}, Listed: lib, Asked: true})
	if !strings.Contains(sdkclient.JSON(w.srv.Requests()), "Speak like a pirate, sdk.") {
		t.Errorf("the model was not sent the system prompt")
	}
}
