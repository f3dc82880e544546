package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
	"github.com/coder/acp-go-sdk"
)

// The tests in this file run the real, pinned claude CLI (installed by
// scripts/install-tools.sh) against the fake Messages API, through the
// bridge, driven by an ACP client. They skip loudly when the CLI is
// missing, and fail instead under ACPBRIDGE_REQUIRE_E2E=1.

// realEditor starts a bridge whose Claude backend runs the real CLI against
// a fake model, isolated in its own HOME.
func realEditor(t *testing.T, state string) (*editortest.Editor, *fakemessages.Server) {
	return realEditorIn(t, state, t.TempDir())
}

// realEditorIn is realEditor with Claude's HOME (and so its own session
// files) in home.
func realEditorIn(t *testing.T, state, home string) (*editortest.Editor, *fakemessages.Server) {
	t.Helper()
	return realEditorOffering(t, state, home, acp.ClientCapabilities{})
}

// realEditorOffering is realEditorIn for an editor that offers caps.
func realEditorOffering(t *testing.T, state, home string, caps acp.ClientCapabilities) (*editortest.Editor, *fakemessages.Server) {
	t.Helper()
	bin := fakemessages.ClaudeBin(t)
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	b := New(Options{Path: bin, Env: fakemessages.Env(srv.URL, home), ExtraArgs: []string{"--setting-sources", ""}})
	return editortest.StartEditorOffering(t, b, state, bridge.PersistAuto, caps), srv
}

func TestE2E_textTurn(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	id := e.NewSession(t.TempDir())
	resp, err := e.Prompt(id, "Say hello")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn || resp.Usage == nil {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, "agent: "+fakemessages.AnswerTextPrefix+"Say hello") {
		t.Errorf("conversation:%s", got)
	}
}

func TestE2E_bashPermission(t *testing.T) {
	for _, option := range []string{"allow", "reject"} {
		t.Run(option, func(t *testing.T) {
			e, _ := realEditor(t, t.TempDir())
			e.Client.Option = option
			cwd := t.TempDir()
			editortest.CheckCommandAsk(t, e, e.NewSession(cwd), cwd, "touch made.txt && echo made", "made.txt", option == "allow")
		})
	}
}

func TestE2E_writeShowsADiff(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "write: notes.txt hello world"); err != nil {
		t.Fatal(err)
	}
	var diff *acp.ToolCallContentDiff
	for _, u := range e.Client.Take() {
		if tu := u.ToolCallUpdate; tu != nil {
			for _, c := range tu.Content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
		}
	}
	path := filepath.Join(cwd, "notes.txt")
	if diff == nil || diff.Path != path || diff.NewText != "hello world" || diff.OldText != nil {
		t.Errorf("diff %+v; want a new file %s with hello world", diff, path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello world" {
		t.Errorf("file: %q, %v", b, err)
	}
}

// TestE2E_editsThroughTheEditor: with edits = editor, Claude's Write and
// Edit reach the editor's buffer through fs/write_text_file, each with
// the file on disk as it was before (so the editor can show the change).
func TestE2E_editsThroughTheEditor(t *testing.T) {
	e, _ := realEditorOffering(t, t.TempDir(), t.TempDir(), acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
	e.Client.Disk = true
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	e.EditsThroughEditor(id)
	e.Say(id, "write: notes.txt hello world", "edit: notes.txt world => editor")
	path := filepath.Join(cwd, "notes.txt")
	want := []editortest.Write{
		{Path: path, Content: "hello world", Existed: true}, // a new file: empty until the editor writes it
		{Path: path, Content: "hello editor", OnDisk: "hello world", Existed: true},
	}
	// Claude watches the files it wrote; now and then it sees the file
	// emptied before the editor's write and wants it read again before
	// an edit, which a model does. The fake model doesn't: the first write
	// is all there is to check then.
	if conv := e.Client.Conversation(); len(e.Client.Writes()) == 1 &&
		(strings.Contains(conv, "Read it first") || strings.Contains(conv, "modified since read")) {
		t.Logf("Claude wanted the file read again before its edit:%s", conv)
		want = want[:1]
	}
	e.CheckWrites(want)
}

// TestE2E_spareProcess: a bridge started in a directory starts a claude
// there at initialize; the first session/new in that directory takes it
// and its first turn runs on it; a spare nobody takes is stopped with the
// bridge.
func TestE2E_spareProcess(t *testing.T) {
	bin := fakemessages.ClaudeBin(t)
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	start := func(cwd string) (*editortest.Editor, *Backend, int) {
		b := New(Options{Path: bin, Env: fakemessages.Env(srv.URL, t.TempDir()), ExtraArgs: []string{"--setting-sources", ""}})
		e := editortest.StartEditorIn(t, b, t.TempDir(), bridge.PersistAuto, cwd)
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if p, ok := b.spare.Peek(); ok {
				return e, b, p.Pid()
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Fatal("initialize started no spare claude")
		return nil, nil, 0
	}
	gone := func(pid int) bool {
		deadline := time.Now().Add(time.Minute)
		for time.Now().Before(deadline) {
			if !testproc.Alive(pid) {
				return true
			}
			time.Sleep(10 * time.Millisecond)
		}
		return false
	}

	cwd := t.TempDir()
	e, b, pid := start(cwd)
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "Say hello"); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.spare.Peek(); ok || !testproc.Alive(pid) {
		t.Errorf("the session did not take the spare claude (pid %d)", pid)
	}
	e.Stop()
	if !gone(pid) {
		t.Errorf("the session's claude (the spare, pid %d) outlived the bridge", pid)
	}

	e2, _, unused := start(t.TempDir())
	e2.Stop()
	if !gone(unused) {
		t.Errorf("a spare claude nobody took (pid %d) outlived the bridge", unused)
	}
}

// With --shared, a bridge's first session runs on a claude that a daemon
// started before the bridge did (left by the last bridge's take), and
// nothing stays once the daemon has stopped.
func TestE2E_sharedSpares(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the check reads processes' parents and directories in /proc")
	}
	bin := fakemessages.ClaudeBin(t)
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	root, cwd := t.TempDir(), t.TempDir()
	env := append(fakemessages.Env(srv.URL, t.TempDir()), daemon.RootEnv+"="+root)
	t.Cleanup(func() { daemon.StopAll(root) })
	in := func(pid int) (pids []int) { // pid's claude descendants that run in cwd (not their supervisors)
		for _, d := range proc.Descendants(pid) {
			comm, _ := os.ReadFile("/proc/" + strconv.Itoa(d) + "/comm")
			if proc.Cwd(d) == cwd && strings.TrimSpace(string(comm)) == "claude" {
				pids = append(pids, d)
			}
		}
		return pids
	}
	run := func(prompt string) (mine, daemons []int) {
		b := New(Options{Path: bin, Env: env, ExtraArgs: []string{"--setting-sources", ""}, Shared: time.Minute})
		e := editortest.StartEditorIn(t, b, t.TempDir(), bridge.PersistAuto, cwd)
		id := e.NewSession(cwd)
		if _, err := e.Prompt(id, prompt); err != nil {
			t.Fatal(err)
		}
		server := daemonServer(t, root)
		// The daemon starts the next spare a moment after a take.
		for deadline := time.Now().Add(time.Minute); len(in(server)) < 2 && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		mine, daemons = in(os.Getpid()), in(server)
		e.Stop()
		return mine, daemons
	}

	run("Say hello") // starts the daemon
	mine, lent := run("Say hello again")
	if len(mine) > 0 || len(lent) < 2 {
		t.Fatalf("the second bridge's claude: %v of its own, %v the daemon's; want none of its own, "+
			"the one it took and the next spare the daemon's", mine, lent)
	}
	server := daemonServer(t, root)
	for deadline := time.Now().Add(time.Minute); len(in(server)) > 1 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if left := in(server); len(left) != 1 {
		t.Errorf("after the bridge stopped, the daemon runs %v in the project; want only the next spare", left)
	}
	daemon.StopAll(root)
	// A claude killed with the daemon may take a moment to exit under load;
	// one still there after a minute outlived it.
	for _, pid := range lent {
		for deadline := time.Now().Add(time.Minute); proc.Cwd(pid) == cwd && time.Now().Before(deadline); {
			time.Sleep(20 * time.Millisecond)
		}
		if proc.Cwd(pid) == cwd {
			t.Errorf("claude (pid %d) outlived the stopped daemon", pid)
		}
	}
}

// daemonServer is the pid of the one spares server under root.
func daemonServer(t *testing.T, root string) int {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(root, "claude-spares-*"))
	if len(dirs) != 1 {
		t.Fatalf("spares daemons under %s: %v; want one", root, dirs)
	}
	b, _ := os.ReadFile(filepath.Join(dirs[0], "pid"))
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the spares server's pid: %v", err)
	}
	return pid
}

func TestE2E_tasksBecomeThePlan(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	id := e.NewSession(t.TempDir())
	if _, err := e.Prompt(id, "todo"); err != nil {
		t.Fatal(err)
	}
	got := e.Client.Conversation()
	if !strings.Contains(got, "plan "+fakemessages.TaskActiveForm+" in_progress") || strings.Contains(got, "tool ") {
		t.Errorf("conversation:%s\nwant the task as the plan, in progress, and no tool calls", got)
	}
}

func TestE2E_cancelMidStream(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	editortest.CheckCancelMidTurn(t, e, e.NewSession(t.TempDir()))
}

// TestE2E_restartLoadsAndContinuesTheConversation: after a bridge
// restart, session/load replays from acpbridge's transcript, and the next
// prompt reaches the model with the earlier turn in the same Claude
// session.
func TestE2E_restartLoadsAndContinuesTheConversation(t *testing.T) {
	state, cwd, home := t.TempDir(), t.TempDir(), t.TempDir()
	e, _ := realEditorIn(t, state, home)
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "run: echo first"); err != nil {
		t.Fatal(err)
	}
	live := editortest.WithPrompt("run: echo first", e.Client.Take())
	e.Stop()

	e2, srv := realEditorIn(t, state, home)
	if _, err := e2.CS.LoadSession(e2.Ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := e2.Client.Conversation(); got != live {
		t.Errorf("replay:%s\nwant (live):%s", got, live)
	}
	if _, err := e2.Prompt(id, "Say hello again"); err != nil {
		t.Fatal(err)
	}
	if !srv.Carries("Say hello again", "run: echo first") {
		t.Errorf("the continued session's request lacks the first turn")
	}
}

// TestE2E_lostClaudeSessionStartsFresh: when Claude's own session file is
// gone (here: another HOME), the next prompt starts a new Claude session
// and says so, instead of failing forever.
func TestE2E_lostClaudeSessionStartsFresh(t *testing.T) {
	state, cwd := t.TempDir(), t.TempDir()
	e, _ := realEditor(t, state)
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "Say hello"); err != nil {
		t.Fatal(err)
	}
	e.Stop()
	e2, _ := realEditor(t, state)
	if _, err := e2.CS.ResumeSession(e2.Ctx(), acp.ResumeSessionRequest{SessionId: id, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	resp, err := e2.Prompt(id, "Say hello again")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if got := e2.Client.Conversation(); !strings.Contains(got, "no longer has this conversation") {
		t.Errorf("conversation:%s\nwant the notice", got)
	}
}

// TestE2E_killedMidTurn kills the claude process during a turn: the
// prompt fails with a clear error, and the next one restarts it.
func TestE2E_killedMidTurn(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	editortest.CheckServerKilledMidTurn(t, e, id, "signal: killed", func() { testproc.Kill(processIn(t, cwd)) })
}

// processIn finds the claude process working in dir.
func processIn(t *testing.T, dir string) int {
	t.Helper()
	ents, _ := os.ReadDir("/proc")
	for _, ent := range ents {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil {
			continue
		}
		if cwd, _ := os.Readlink("/proc/" + ent.Name() + "/cwd"); cwd == dir {
			if cmd, _ := os.ReadFile("/proc/" + ent.Name() + "/cmdline"); strings.Contains(string(cmd), "claude") {
				return pid
			}
		}
	}
	t.Fatal("no claude process in " + dir)
	return 0
}

// TestE2E_apiErrors: each error in a session of its own, because Claude
// sends a failed prompt again with the next one (and the fake would
// answer the same error).
func TestE2E_apiErrors(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	_, err := e.Prompt(e.NewSession(t.TempDir()), "fail500")
	if re, ok := err.(*acp.RequestError); !ok || re.Code != -32603 || !strings.Contains(re.Message, "500") {
		t.Errorf("HTTP 500: %v; want -32603 naming the status", err)
	}
	_, err = e.Prompt(e.NewSession(t.TempDir()), "fail401")
	if re, ok := err.(*acp.RequestError); !ok || re.Code != -32000 || !strings.Contains(re.Message, "acpbridge --agent claude --login") {
		t.Errorf("HTTP 401: %v; want auth_required (-32000) saying how to log in", err)
	}
}

var _ = context.Background

// TestE2E_configOptions: the session/new answer carries mode, model and
// effort at once; every mode offered can be set on the real CLI;
// bypassPermissions (where offered) writes without asking; the effort
// picked reaches the model request.
func TestE2E_configOptions(t *testing.T) {
	e, srv := realEditor(t, t.TempDir())
	cwd := t.TempDir()
	resp := e.NewSessionResponse(cwd)
	choices := acptest.Choices(resp.ConfigOptions)
	for _, id := range []string{agent.ConfigMode, agent.ConfigModel, agent.ConfigEffort, bridge.ConfigAgent} {
		if len(choices[id]) == 0 {
			t.Errorf("session/new offers no %s option: %v", id, choices)
		}
	}
	if resp.Modes == nil || len(resp.Modes.AvailableModes) != len(choices[agent.ConfigMode]) {
		t.Errorf("modes %+v do not match the mode option %v", resp.Modes, choices[agent.ConfigMode])
	}
	id := resp.SessionId
	for _, mode := range choices[agent.ConfigMode] {
		opts, err := e.SetConfig(id, agent.ConfigMode, mode)
		if err != nil || acptest.Current(opts)[agent.ConfigMode] != mode {
			t.Errorf("mode %s: %v (current %q)", mode, err, acptest.Current(opts)[agent.ConfigMode])
		}
	}
	if _, err := e.SetConfig(id, agent.ConfigEffort, "low"); err != nil {
		t.Fatal(err)
	}
	mode := "acceptEdits"
	if slices.Contains(choices[agent.ConfigMode], "bypassPermissions") {
		mode = "bypassPermissions"
	}
	if _, err := e.SetConfig(id, agent.ConfigMode, mode); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prompt(id, "write: bypass.txt written"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(cwd, "bypass.txt")); err != nil || string(b) != "written" || e.Client.Asked() != 0 {
		t.Errorf("in mode %s: file %q, %v, %d asks; want it written without asking", mode, b, err, e.Client.Asked())
	}
	var effort any
	for _, r := range srv.Requests() {
		if oc, ok := r.Raw["output_config"].(map[string]any); ok && r.Path == "/v1/messages" {
			effort = oc["effort"]
		}
	}
	if effort != "low" {
		t.Errorf("the model was asked with effort %v, want low", effort)
	}
}

// A permission ask carries the whole tool call: kind, title, the input,
// and for an edit its diff.
func TestE2E_askCarriesTheToolCall(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "write: notes.txt hello world"); err != nil {
		t.Fatal(err)
	}
	asks := e.Client.Asks()
	if len(asks) != 1 {
		t.Fatalf("%d asks, want 1", len(asks))
	}
	call := asks[0].ToolCall
	in, _ := call.RawInput.(map[string]any)
	if call.Kind == nil || *call.Kind != acp.ToolKindEdit || call.Title == nil || in["content"] != "hello world" {
		t.Errorf("ask's tool call %+v; want an edit with its input", call)
	}
	var diff *acp.ToolCallContentDiff
	for _, c := range call.Content {
		if c.Diff != nil {
			diff = c.Diff
		}
	}
	if diff == nil || diff.Path != filepath.Join(cwd, "notes.txt") || diff.NewText != "hello world" {
		t.Errorf("ask's diff %+v; want the new file", diff)
	}
}

// Claude's AskUserQuestion is a choice: its options are the ask's options,
// and the answer picked reaches Claude as the tool's answer.
func TestE2E_askUserQuestionIsAChoice(t *testing.T) {
	e, srv := realEditor(t, t.TempDir())
	e.Client.Option = "answer-1"
	id := e.NewSession(t.TempDir())
	if r, err := e.Prompt(id, "ask please"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", r, err)
	}
	asks := e.Client.Asks()
	if len(asks) != 1 {
		t.Fatalf("%d asks, want 1", len(asks))
	}
	var opts []string
	for _, o := range asks[0].Options {
		opts = append(opts, string(o.OptionId)+"="+o.Name)
	}
	if want := "answer-0=Red — Red it is,answer-1=Blue — Blue it is,reject=Don't answer"; strings.Join(opts, ",") != want ||
		*asks[0].ToolCall.Title != fakemessages.AskedQuestion {
		t.Errorf("ask %q, options %s; want the question with %s", *asks[0].ToolCall.Title, strings.Join(opts, ","), want)
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Results) == 0 || !strings.Contains(last.Results[0].Content, "Blue") || last.Results[0].IsError {
		t.Errorf("the tool result Claude sent the model: %+v; want the answer Blue", last.Results)
	}
}

// To an editor that takes forms, AskUserQuestion is a form (ACP's
// elicitation/create) whose one field's values are the answers, and the
// answer filled in reaches Claude as the tool's answer; no permission is
// asked.
func TestE2E_askUserQuestionIsAFormWhereTheEditorTakesThem(t *testing.T) {
	e, srv := realEditorOffering(t, t.TempDir(), t.TempDir(), acp.ClientCapabilities{Elicitation: &acp.ElicitationCapabilities{Form: &acp.ElicitationFormCapabilities{}}})
	e.Client.Elicit = func(acp.CreateElicitationRequest) acp.CreateElicitationResponse {
		return acp.CreateElicitationResponse{Accept: &acp.CreateElicitationAccept{Action: "accept", Content: map[string]any{"answer": "Blue"}}}
	}
	id := e.NewSession(t.TempDir())
	if r, err := e.Prompt(id, "ask please"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", r, err)
	}
	forms := e.Client.Elicited()
	if len(forms) != 1 || forms[0].Form == nil || forms[0].Form.Message != fakemessages.AskedQuestion || len(e.Client.Asks()) != 0 {
		t.Fatalf("forms %+v and %d permission asks; want one form with the question", forms, len(e.Client.Asks()))
	}
	reqs := srv.Requests()
	last := reqs[len(reqs)-1]
	if len(last.Results) == 0 || !strings.Contains(last.Results[0].Content, "Blue") || last.Results[0].IsError {
		t.Errorf("the tool result Claude sent the model: %+v; want the answer Blue", last.Results)
	}
}

// An ask the client answers cancelled ends the turn cancelled, and the
// command never runs.
func TestE2E_askAnsweredCancelledCancelsTheTurn(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	e.Client.Option = "cancelled"
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	r, err := e.Prompt(id, "run: touch made.txt")
	if err != nil || r.StopReason != acp.StopReasonCancelled {
		t.Errorf("prompt: %+v, %v; want cancelled", r, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made.txt")); err == nil {
		t.Error("the command ran")
	}
	e.Client.Option = "allow"
	if r, err := e.Prompt(id, "Say hello"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Errorf("the next prompt: %+v, %v", r, err)
	}
}

// A fork reopened by a new bridge before its first prompt still forks the
// parent's Claude session (the fork's own id comes only with its first
// turn), and so continues its conversation.
func TestE2E_forkReopenedBeforeItsFirstPrompt(t *testing.T) {
	bin := fakemessages.ClaudeBin(t)
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	state, home := t.TempDir(), t.TempDir()
	start := func() *editortest.Editor {
		b := New(Options{Path: bin, Env: fakemessages.Env(srv.URL, home), ExtraArgs: []string{"--setting-sources", ""}})
		return editortest.StartEditorOffering(t, b, state, bridge.PersistAuto, acp.ClientCapabilities{})
	}
	editortest.CheckForkReopened(t, start, t.TempDir(), editortest.OwnFork{Said: func(acp.SessionId) string {
		reqs := srv.Requests()
		body, _ := json.Marshal(reqs[len(reqs)-1].Raw)
		return string(body)
	}})
}

// A fork continues on a Claude session forked from the parent's
// (--fork-session): the model sees the parent's turns as Claude's own
// history, not retold, and the parent goes on without the fork's turns.
func TestE2E_forkIsClaudesOwnFork(t *testing.T) {
	e, srv := realEditor(t, t.TempDir())
	editortest.CheckOwnFork(t, e, t.TempDir(), editortest.OwnFork{Retold: "forked from", Said: func(acp.SessionId) string {
		reqs := srv.Requests()
		body, _ := json.Marshal(reqs[len(reqs)-1].Raw)
		return string(body)
	}})
	if natives := e.NativeIDs(); len(natives) != 2 {
		t.Errorf("sessions %v; want the parent and the fork", natives)
	}
}

// In plan mode, Claude's ExitPlanMode asks with the plan and the mode to
// go on in; the mode picked becomes the session's.
func TestE2E_exitPlanModeOffersThePlanAndTheNextMode(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	e.Client.Option = "acceptEdits"
	id := e.NewSession(t.TempDir())
	if _, err := e.SetConfig(id, agent.ConfigMode, "plan"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Prompt(id, "exitplan now"); err != nil {
		t.Fatal(err)
	}
	asks := e.Client.Asks()
	if len(asks) != 1 {
		t.Fatalf("%d asks, want 1", len(asks))
	}
	var opts []string
	for _, o := range asks[0].Options {
		opts = append(opts, string(o.OptionId))
	}
	call := asks[0].ToolCall
	if strings.Join(opts, ",") != "acceptEdits,default,plan" || len(call.Content) == 0 || call.Content[0].Content == nil ||
		call.Content[0].Content.Content.Text == nil || call.Content[0].Content.Content.Text.Text != fakemessages.PlanText {
		t.Errorf("ask options %v, tool call %+v; want the plan and the modes to go on in", opts, call)
	}
	var mode string // the switch comes right after the ask's answer, maybe after the turn
	for deadline := time.Now().Add(time.Minute); mode == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, u := range e.Client.Take() {
			if u.CurrentModeUpdate != nil {
				mode = string(u.CurrentModeUpdate.CurrentModeId)
			}
		}
	}
	if mode != "acceptEdits" {
		t.Errorf("mode after the plan was approved: %q; want acceptEdits", mode)
	}
}

// Claude's slash commands come as available commands, and "/name
// arguments" runs one: the model gets the project command's prompt (the
// project's settings are on here, unlike in the other tests).
func TestE2E_slashCommand(t *testing.T) {
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	b := New(Options{Path: fakemessages.ClaudeBin(t), Env: fakemessages.Env(srv.URL, t.TempDir()), ExtraArgs: []string{"--setting-sources", "project"}})
	e := editortest.StartEditor(t, b, t.TempDir(), bridge.PersistAuto)
	cwd := t.TempDir()
	dir := filepath.Join(cwd, ".claude", "commands")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hello.md"), []byte("Say hello to $ARGUMENTS please\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := e.NewSession(cwd)
	var names []string
	e.WaitFor(func(u acp.SessionUpdate) bool {
		if u.AvailableCommandsUpdate != nil {
			for _, c := range u.AvailableCommandsUpdate.AvailableCommands {
				names = append(names, c.Name)
			}
		}
		return names != nil
	})
	if !slices.Contains(names, "compact") || !slices.Contains(names, "hello") {
		t.Errorf("available commands %v; want Claude's built-ins and the project's hello", names)
	}
	if r, err := e.Prompt(id, "/hello the team"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("/hello: %+v, %v", r, err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the command reached no model")
	}
	body, _ := json.Marshal(reqs[len(reqs)-1].Raw)
	if !strings.Contains(string(body), "Say hello to the team please") {
		t.Errorf("the model request lacks the command's prompt: %.2000s", body)
	}
}

// TestE2E_noDaemonFallsBack: with its daemons' directory read-only, a
// bridge runs its own claude (see editortest.CheckNoDaemon).
func TestE2E_noDaemonFallsBack(t *testing.T) {
	bin := fakemessages.ClaudeBin(t)
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	editortest.CheckNoDaemon(t, editortest.NoDaemon{
		Backend: func(root string, log *slog.Logger) agent.Backend {
			env := append(fakemessages.Env(srv.URL, t.TempDir()), daemon.RootEnv+"="+root)
			return New(Options{Path: bin, Env: env, ExtraArgs: []string{"--setting-sources", ""}, Shared: time.Minute, Logger: log})
		},
		Dir: t.TempDir,
	})
}

// TestE2E_keeperKilled: the keeper of the spares daemon, or its spares
// server on its own, SIGKILLed while two bridges' turns run on claude
// processes it lent, ends each turn with an error naming the shared
// server; the next prompts run on new processes (see
// editortest.CheckKeeperKilled).
func TestE2E_keeperKilled(t *testing.T) {
	victims := map[string]func(agent.Backend) int{
		"keeper":       nil,
		"sparesServer": func(b agent.Backend) int { return b.(*Backend).shared.Server() },
	}
	for name, victim := range victims {
		t.Run(name, func(t *testing.T) {
			bin := fakemessages.ClaudeBin(t)
			srv := fakemessages.New(fakemessages.Directives())
			t.Cleanup(srv.Close)
			root := t.TempDir()
			t.Cleanup(func() { daemon.StopAll(root) })
			env := append(fakemessages.Env(srv.URL, t.TempDir()), daemon.RootEnv+"="+root)
			editortest.CheckKeeperKilled(t, editortest.KeeperKilled{
				Backend: func() agent.Backend {
					return New(Options{Path: bin, Env: env, ExtraArgs: []string{"--setting-sources", ""}, Shared: time.Minute})
				},
				Keeper: func(b agent.Backend) int { return b.(*Backend).shared.Keeper() },
				Victim: victim,
				Dir:    t.TempDir,
				Slow:   "slow",
				Spares: true,
			})
		})
	}
}

// /compact with an editor that offers session.compaction: the compaction
// comes as compaction updates, completed with Claude's summary, and a
// load replays it from the transcript, completed, summary and all.
func TestE2E_compactIsACompactionUpdate(t *testing.T) {
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	b := New(Options{Path: fakemessages.ClaudeBin(t), Env: fakemessages.Env(srv.URL, t.TempDir())})
	caps := acp.ClientCapabilities{Session: &acp.ClientSessionCapabilities{Compaction: &acp.CompactionCapabilities{}}}
	e := editortest.StartEditorOffering(t, b, t.TempDir(), bridge.PersistAlways, caps)
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	for i := range 4 { // with fewer, "Not enough messages to compact" (a failed compaction)
		e.MustPrompt(id, fmt.Sprintf("hello before compact %d", i))
	}
	e.MustPrompt(id, "/compact")
	completed := func(us []acp.SessionUpdate) *acp.SessionCompactionUpdate {
		var last *acp.SessionCompactionUpdate
		for _, u := range us {
			if c := u.CompactionUpdate; c != nil && c.Status == acp.CompactionStatusCompleted && len(c.Summary) > 0 {
				last = c
			}
			if u.CompactionUpdate != nil && u.CompactionUpdate.Meta[agent.FallbackMeta] != nil {
				t.Errorf("the editor was sent the fallback: %+v", u.CompactionUpdate)
			}
		}
		return last
	}
	if c := completed(e.Client.Take()); c == nil || c.Summary[0].Text == nil || !strings.Contains(c.Summary[0].Text.Text, "continued") {
		t.Fatalf("no completed compaction with Claude's summary: %+v", c)
	}
	e.Load(id, cwd)
	if c := completed(e.Client.Take()); c == nil {
		t.Errorf("the load replayed no completed compaction with its summary")
	}
}

// The system prompt reaches the model in the request's system blocks, in
// either mode, and the additional directory in Claude's environment
// (which an override replaces with the rest of Claude's own prompt).
func TestE2E_directoriesAndSystemPrompt(t *testing.T) {
	for _, mode := range []acp.SystemPromptMode{acp.SystemPromptModeAppend, acp.SystemPromptModeOverride} {
		e, srv := realEditor(t, t.TempDir())
		editortest.CheckSetup(t, editortest.Setup{Editor: e, Mode: mode, DirsShown: mode == acp.SystemPromptModeAppend, Sent: func() (system, whole []string) {
			for _, r := range srv.Requests() {
				s, _ := json.Marshal(r.Raw["system"])
				w, _ := json.Marshal(r.Raw)
				system, whole = append(system, string(s)), append(whole, string(w))
			}
			return system, whole
		}})
	}
}

// The official TS SDK's unstable v1 client, opted into every capability,
// accepts every message of a Claude session with a directory and a system
// prompt that runs a command, keeps a plan and compacts, live and
// replayed; the model was sent the system prompt.
func TestE2E_sdkUnstableClient(t *testing.T) {
	srv := fakemessages.New(fakemessages.Directives())
	t.Cleanup(srv.Close)
	b := New(Options{Path: fakemessages.ClaudeBin(t), Env: fakemessages.Env(srv.URL, t.TempDir()), ExtraArgs: []string{"--setting-sources", ""}})
	lib := t.TempDir()
	r := sdkclient.Run(t, b, sdkclient.Plan{Cwd: t.TempDir(), Dirs: []string{lib}, Mode: "append", SystemPrompt: "Speak like a pirate, sdk.",
		Prompts: []string{"run: touch sdk.txt", "todo", "hello 1", "hello 2", "/compact"}})
	sdkclient.Check(t, r, sdkclient.Want{Said: []string{`"name":"Bash"`, `"sessionUpdate":"plan_update"`, `"sessionUpdate":"compaction_update"`},
		Replayed: []string{"compaction_update", "tool_call"}, Listed: lib, Asked: true})
	if !srv.Carries("hello 1", "Speak like a pirate, sdk.") {
		t.Errorf("the model was not sent the system prompt")
	}
}
