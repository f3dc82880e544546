package codex

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// The tests in this file run the real, pinned codex app-server (installed
// by scripts/install-tools.sh) against the fake Responses API, isolated in
// its own HOME and CODEX_HOME, through the bridge, driven by an ACP client.
// They skip loudly when codex is missing, and fail instead under
// ACPBRIDGE_REQUIRE_E2E=1.

// world is one fake model and one codex home, which bridges can share.
type world struct {
	bin             string
	srv             *fakeresponses.Server
	home, codexHome string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{bin: fakeresponses.CodexBin(t), srv: fakeresponses.New(fakeresponses.Directives())}
	t.Cleanup(w.srv.Close)
	w.home, w.codexHome = fakeresponses.Home(t, w.srv.URL, fakeresponses.HomeOptions{})
	return w
}

// bridge starts a bridge (persisting into state) on the world's codex.
func (w *world) bridge(t *testing.T, state string, mode bridge.PersistMode) (*editortest.Editor, *Backend) {
	return w.bridgeOffering(t, state, mode, acp.ClientCapabilities{})
}

// bridgeIn is bridge (persisting auto) started in directory cwd: it warms
// up a thread there at initialize.
func (w *world) bridgeIn(t *testing.T, cwd string) (*editortest.Editor, *Backend) {
	b := New(Options{Path: w.bin, Env: fakeresponses.Env(w.home, w.codexHome)})
	return editortest.StartEditorIn(t, b, t.TempDir(), bridge.PersistAuto, cwd), b
}

// bridgeOffering is bridge for an editor that offers caps.
func (w *world) bridgeOffering(t *testing.T, state string, mode bridge.PersistMode, caps acp.ClientCapabilities) (*editortest.Editor, *Backend) {
	b := New(Options{Path: w.bin, Env: fakeresponses.Env(w.home, w.codexHome)})
	return editortest.StartEditorOffering(t, b, state, mode, caps), b
}

func setMode(t *testing.T, e *editortest.Editor, id acp.SessionId, mode string) {
	t.Helper()
	if _, err := e.CS.SetSessionMode(e.Ctx(), acp.SetSessionModeRequest{SessionId: id, ModeId: acp.SessionModeId(mode)}); err != nil {
		t.Fatal(err)
	}
}

func TestE2E_textTurn(t *testing.T) {
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	resp, err := e.Prompt(id, "hello there")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if u := resp.Usage; u == nil || u.InputTokens == 0 || u.OutputTokens == 0 || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage %+v; want the turn's tokens", u)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, "agent: Hello from fake model. You said: hello there") {
		t.Errorf("conversation:%s", got)
	}
}

// A fork reopened by a new bridge before its first prompt continues the
// parent's thread.
func TestE2E_forkReopenedBeforeItsFirstPrompt(t *testing.T) {
	w := newWorld(t)
	state := t.TempDir()
	start := func() *editortest.Editor {
		e, _ := w.bridge(t, state, bridge.PersistAuto)
		return e
	}
	editortest.CheckForkReopened(t, start, t.TempDir(), editortest.OwnFork{Said: func(acp.SessionId) string { return lastRequest(t, w) }})
}

func TestE2E_commandApproval(t *testing.T) {
	for _, option := range []string{"accept", "decline"} {
		t.Run(option, func(t *testing.T) {
			e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
			e.Client.Option = option
			cwd := t.TempDir()
			id := e.NewSession(cwd)
			setMode(t, e, id, "ask")
			editortest.CheckCommandAsk(t, e, id, cwd, "mkdir -p made && echo made", "made", option == "accept")
		})
	}
}

// TestE2E_editsThroughTheEditor: with edits = editor, codex's patches
// reach the editor's buffer through fs/write_text_file, each with the file
// on disk as it was before, in every mode: asked first (ask) or applied at
// once (full-access), when codex may write before the bridge reads its
// item.
func TestE2E_editsThroughTheEditor(t *testing.T) {
	for _, mode := range []string{"ask", "full-access"} {
		t.Run(mode, func(t *testing.T) {
			e, _ := newWorld(t).bridgeOffering(t, t.TempDir(), bridge.PersistAuto,
				acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
			e.Client.Option, e.Client.Disk = "accept", true
			cwd := t.TempDir()
			id := e.NewSession(cwd)
			setMode(t, e, id, mode)
			e.EditsThroughEditor(id)
			e.Say(id, fakeresponses.AddPrompt("hello.txt"), fakeresponses.EditPrompt("hello.txt"))
			path := filepath.Join(cwd, "hello.txt")
			added, edited := fakeresponses.AddedLine+"\n", fakeresponses.EditedLine+"\n"
			e.CheckWrites([]editortest.Write{{Path: path, Content: added, Existed: true}, {Path: path, Content: edited, OnDisk: added, Existed: true}})
		})
	}
}

func TestE2E_patchShowsADiff(t *testing.T) {
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	e.Client.Option = "accept"
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	setMode(t, e, id, "ask")
	if _, err := e.Prompt(id, fakeresponses.AddPrompt("hello.txt")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(cwd, "hello.txt")
	var diff *acp.ToolCallContentDiff
	for _, u := range e.Client.Take() {
		if tc := u.ToolCall; tc != nil {
			for _, c := range tc.Content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
		}
	}
	if diff == nil || diff.Path != path || !strings.Contains(diff.NewText, "hello from apply_patch") {
		t.Errorf("diff %+v; want the new file %s", diff, path)
	}
	if b, err := os.ReadFile(path); err != nil || !strings.Contains(string(b), "hello from apply_patch") {
		t.Errorf("file: %q, %v", b, err)
	}
	asks := e.Client.Asks()
	if len(asks) != 1 {
		t.Fatalf("%d asks, want 1", len(asks))
	}
	call := asks[0].ToolCall
	if call.Kind == nil || *call.Kind != acp.ToolKindEdit || call.RawInput == nil || len(call.Content) == 0 || call.Content[0].Diff == nil ||
		call.Content[0].Diff.Path != path {
		t.Errorf("the ask's tool call %+v; want the edit with its diff", call)
	}
}

// A command's ask carries the whole tool call, and an ask the client
// answers cancelled ends the turn cancelled without running the command.
func TestE2E_commandAskCarriesTheCallAndCancels(t *testing.T) {
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	e.Client.Option = "cancelled"
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	setMode(t, e, id, "ask")
	r, err := e.Prompt(id, "run: mkdir -p made")
	if err != nil || r.StopReason != acp.StopReasonCancelled {
		t.Errorf("prompt: %+v, %v; want cancelled", r, err)
	}
	if _, err := os.Stat(filepath.Join(cwd, "made")); err == nil {
		t.Error("the command ran")
	}
	asks := e.Client.Asks()
	if len(asks) != 1 {
		t.Fatalf("%d asks, want 1", len(asks))
	}
	in, _ := asks[0].ToolCall.RawInput.(map[string]any)
	if k := asks[0].ToolCall.Kind; k == nil || *k != acp.ToolKindExecute || !strings.Contains(fmt.Sprint(in["command"]), "mkdir -p made") {
		t.Errorf("the ask's tool call %+v; want the command", asks[0].ToolCall)
	}
	e.Client.Option = "accept"
	if r, err := e.Prompt(id, "hello again"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Errorf("the next prompt: %+v, %v", r, err)
	}
}

func TestE2E_planUpdate(t *testing.T) {
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	if _, err := e.Prompt(id, "todo"); err != nil {
		t.Fatal(err)
	}
	if got := e.Client.Conversation(); !strings.Contains(got, "plan first step in_progress\nplan second step pending") {
		t.Errorf("conversation:%s", got)
	}
}

func TestE2E_interruptMidStream(t *testing.T) {
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	editortest.CheckCancelMidTurn(t, e, e.NewSession(t.TempDir()))
}

// TestE2E_restartLoadsAndContinuesTheThread: with --persist auto the
// replay comes from codex's own history (thread/resume); with always, from
// acpbridge's transcript. Either way the next prompt continues the thread.
func TestE2E_restartLoadsAndContinuesTheThread(t *testing.T) {
	for _, mode := range []bridge.PersistMode{bridge.PersistAuto, bridge.PersistAlways} {
		t.Run(string(mode), func(t *testing.T) {
			w, state := newWorld(t), t.TempDir()
			start := func() *editortest.Editor { e, _ := w.bridge(t, state, mode); return e }
			editortest.CheckRestart(t, start, t.TempDir(), "run: echo first", "hello again")
			reqs := w.srv.Requests()
			input, _ := json.Marshal(reqs[len(reqs)-1].Raw["input"])
			if !strings.Contains(string(input), "run: echo first") {
				t.Errorf("the continued thread's request lacks the first turn: %.300s", input)
			}
		})
	}
}

// TestE2E_serverKilledMidTurn kills the app-server during a turn: the
// prompt fails with the exit, and the next prompt restarts the server and
// resumes the thread.
func TestE2E_serverKilledMidTurn(t *testing.T) {
	e, b := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	editortest.CheckServerKilledMidTurn(t, e, e.NewSession(t.TempDir()), "signal: killed", func() {
		srv, _ := b.shared.Running()
		testproc.Kill(srv.l.Pid())
	})
}

func TestE2E_modelErrorIsAClearError(t *testing.T) {
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	_, err := e.Prompt(e.NewSession(t.TempDir()), "fail500")
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32603 || !strings.Contains(re.Message, "internalServerError") {
		t.Errorf("err %v; want -32603 with codex's message and error kind", err)
	}
}

// TestE2E_twoSessionsAtOnce runs two turns at the same time on the one
// server; each session sees only its own thread.
func TestE2E_twoSessionsAtOnce(t *testing.T) {
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	ids := []acp.SessionId{e.NewSession(t.TempDir()), e.NewSession(t.TempDir())}
	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			if _, err := e.Prompt(id, []string{"hello one", "hello two"}[i]); err != nil {
				t.Errorf("session %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	for i, id := range ids {
		got := acptest.Conversation(e.Client.TakeFor(id))
		want, other := []string{"one", "two"}[i], []string{"two", "one"}[i]
		if !strings.Contains(got, "You said: hello "+want) || strings.Contains(got, "hello "+other) {
			t.Errorf("session %d:%s", i, got)
		}
	}
}

// TestE2E_configOptions: once the server has listed its models, the
// session/new answer offers the mode, the model
// and the reasoning effort as separate options, from the real server's
// model list; an effort picked reaches the model with the next turn.
func TestE2E_configOptions(t *testing.T) {
	w := newWorld(t)
	e, b := w.bridge(t, t.TempDir(), bridge.PersistAuto)
	if err := b.catalog(e.Ctx()); err != nil { // else session/new offers config.toml's model alone
		t.Fatal(err)
	}
	resp := e.NewSessionResponse(t.TempDir())
	choices, current := acptest.Choices(resp.ConfigOptions), acptest.Current(resp.ConfigOptions)
	want := map[string][]string{
		agent.ConfigMode:    {modeConfig, "ask", "read-only", "auto", "full-access"},
		agent.ConfigModel:   {fakeresponses.Model},
		agent.ConfigEffort:  {agentkit.EffortDefault, "low", "medium", "high", "xhigh"},
		bridge.ConfigAgent:  {"codex"},
		ConfigCollaboration: {"default", "plan"},
	}
	if diff := cmp.Diff(want, choices); diff != "" {
		t.Errorf("session/new options (-want +got):\n%s", diff)
	}
	if current[agent.ConfigModel] != fakeresponses.Model || current[agent.ConfigEffort] != agentkit.EffortDefault || current[agent.ConfigMode] != modeConfig {
		t.Errorf("current values %v", current)
	}
	id := resp.SessionId
	opts, err := e.SetConfig(id, agent.ConfigEffort, "high")
	if err != nil || acptest.Current(opts)[agent.ConfigEffort] != "high" {
		t.Fatalf("set effort: %v, %v", err, acptest.Current(opts))
	}
	if _, err := e.Prompt(id, "hello there"); err != nil {
		t.Fatal(err)
	}
	var effort any
	for _, r := range w.srv.Requests() {
		if rs, ok := r.Raw["reasoning"].(map[string]any); ok {
			effort = rs["effort"]
		}
	}
	if effort != "high" {
		t.Errorf("the model was asked with effort %v, want high", effort)
	}
}

// TestE2E_forkIsCodexsOwnFork: a fork continues on a thread codex forked
// from the parent's (thread/fork): the model sees the parent's turn as
// codex's own history, not retold, and the parent goes on without the
// fork's turns; after a restart the fork's load replays the parent's turn
// too (with --persist auto from codex's own thread, with always from the
// bridge's transcript).
func TestE2E_forkIsCodexsOwnFork(t *testing.T) {
	for _, mode := range []bridge.PersistMode{bridge.PersistAuto, bridge.PersistAlways} {
		t.Run(string(mode), func(t *testing.T) {
			w := newWorld(t)
			state, cwd := t.TempDir(), t.TempDir()
			e, _ := w.bridge(t, state, mode)
			_, fork := editortest.CheckOwnFork(t, e, cwd, editortest.OwnFork{Retold: "which it was forked from",
				Said: func(acp.SessionId) string { return lastRequest(t, w) }})
			e.Stop()
			e2, _ := w.bridge(t, state, mode)
			e2.Load(fork, cwd)
			if got := e2.Client.Conversation(); !strings.Contains(got, "Remember the word apricot") || !strings.Contains(got, "Which word was it") {
				t.Errorf("the fork's replay:%s\nwant the parent's turn and its own", got)
			}
		})
	}
}

// TestE2E_forkOfAThreadCodexLost: when codex no longer has the parent's
// thread (its rollouts are gone), the fork starts a new thread and its
// first turn tells it the conversation from the bridge's transcript.
func TestE2E_forkOfAThreadCodexLost(t *testing.T) {
	w := newWorld(t)
	state, cwd := t.TempDir(), t.TempDir()
	e, _ := w.bridge(t, state, bridge.PersistAlways)
	parent := e.NewSession(cwd)
	if _, err := e.Prompt(parent, "Remember the word apricot"); err != nil {
		t.Fatal(err)
	}
	e.Stop()
	if err := os.RemoveAll(filepath.Join(w.codexHome, "sessions")); err != nil {
		t.Fatal(err)
	}
	e2, _ := w.bridge(t, state, bridge.PersistAlways)
	fork := e2.Fork(parent, cwd)
	if _, err := e2.Prompt(fork, "Which word was it"); err != nil {
		t.Fatal(err)
	}
	if body := lastRequest(t, w); !strings.Contains(body, "which it was forked from") || !strings.Contains(body, "Remember the word apricot") ||
		strings.Count(body, "Which word was it") != 1 {
		t.Errorf("the fork's model request does not tell the parent's conversation (and the prompt once): %s", body)
	}
	if got := e2.Client.Conversation(); !strings.Contains(got, "Codex could not fork the parent's thread") {
		t.Errorf("conversation:%s", got)
	}
}

// TestE2E_spareThread: a bridge started in a directory starts a thread
// there at initialize; the first session/new in that directory takes it
// (its first turn runs on it), and codex keeps no rollout of a spare
// nobody took.
func TestE2E_spareThread(t *testing.T) {
	w, unused := newWorld(t), newWorld(t)
	cwd := t.TempDir()
	e, b := w.bridgeIn(t, cwd)
	var spare string
	deadline := time.Now().Add(time.Minute)
	for spare == "" && time.Now().Before(deadline) {
		sp, _ := b.spare.Peek()
		spare = sp.res.Thread.ID
		time.Sleep(10 * time.Millisecond)
	}
	if spare == "" {
		t.Fatal("initialize started no spare thread")
	}
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "Say hello"); err != nil {
		t.Fatal(err)
	}
	if natives := e.NativeIDs(); natives[id] != spare {
		t.Errorf("the session's thread is %v, want the spare %s", natives, spare)
	}
	other := e.NewSession(cwd) // the spare is gone: a thread of its own
	if _, err := e.Prompt(other, "Say hello"); err != nil {
		t.Fatal(err)
	}
	if natives := e.NativeIDs(); len(natives) != 2 || natives[id] == natives[other] {
		t.Errorf("threads %v for two sessions", natives)
	}

	e2, b2 := unused.bridgeIn(t, t.TempDir())
	for ok := false; !ok && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		_, ok = b2.spare.Peek()
	}
	e2.Stop()
	rollouts, _ := filepath.Glob(filepath.Join(unused.codexHome, "sessions", "*", "*", "*", "*.jsonl"))
	if len(rollouts) != 0 {
		t.Errorf("codex kept %d rollouts of a spare thread nobody took: %v", len(rollouts), rollouts)
	}
}

// lastRequest is the fake model's last request's input, as JSON.
func lastRequest(t *testing.T, w *world) string {
	t.Helper()
	reqs := w.srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model got no request")
	}
	b, _ := json.Marshal(reqs[len(reqs)-1].Raw["input"])
	return string(b)
}

// Codex's slash commands come as available commands; /status and
// /rename are answered by the bridge, /compact runs codex's compaction as
// the turn.
func TestE2E_slashCommands(t *testing.T) {
	w := newWorld(t)
	e, _ := w.bridge(t, t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	var listed []string
	e.WaitFor(func(u acp.SessionUpdate) bool {
		if u.AvailableCommandsUpdate != nil {
			for _, c := range u.AvailableCommandsUpdate.AvailableCommands {
				listed = append(listed, c.Name)
			}
		}
		return listed != nil
	})
	if got := strings.Join(listed, ","); !strings.HasPrefix(got, "review,compact,status,rename") {
		t.Errorf("available commands %s", got)
	}
	if _, err := e.Prompt(id, "hello there"); err != nil {
		t.Fatal(err)
	}
	before := len(w.srv.Requests())
	for _, cmd := range []string{"/status", "/rename Apricot work", "/compact"} {
		r, err := e.Prompt(id, cmd)
		if err != nil || r.StopReason != acp.StopReasonEndTurn {
			t.Fatalf("%s: %+v, %v", cmd, r, err)
		}
	}
	if after := len(w.srv.Requests()); after != before+1 {
		t.Errorf("the model got %d requests for /status, /rename and /compact; want 1, the compaction's", after-before)
	}
	got := e.Client.Conversation()
	// The editor takes no compaction updates: it is shown the compaction's
	// think tool call, as before.
	for _, want := range []string{"agent: Thread ", "mode ", "agent: Renamed the thread to Apricot work.", " think completed Compact the conversation"} {
		if !strings.Contains(got, want) {
			t.Errorf("conversation lacks %q:%s", want, got)
		}
	}
}

// Plan mode: the collaboration option set to plan reaches codex with the
// next turn (turn/start's collaborationMode), and codex runs the turn in
// its plan mode: its instructions for it reach the model.
func TestE2E_planMode(t *testing.T) {
	w := newWorld(t)
	e, _ := w.bridge(t, t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	if _, err := e.Prompt(id, "in default mode"); err != nil {
		t.Fatal(err)
	}
	if body := lastRequest(t, w); strings.Contains(strings.ToLower(body), "plan mode") {
		t.Fatal("a default-mode request already mentions plan mode: the test could not tell")
	}
	if _, err := e.SetConfig(id, ConfigCollaboration, "plan"); err != nil {
		t.Fatal(err)
	}
	if r, err := e.Prompt(id, "hello there"); err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("a turn in plan mode: %+v, %v", r, err)
	}
	if body := lastRequest(t, w); !strings.Contains(strings.ToLower(body), "plan mode") {
		t.Errorf("the model request has no plan mode instructions: %.3000s", body)
	}
}

// Embedded binary files reach the real codex: an image as an image, a
// PDF saved where codex can read it and named in the prompt.
func TestE2E_blobResources(t *testing.T) {
	w := newWorld(t)
	e, _ := w.bridge(t, t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	png, pdf := "image/png", "application/pdf"
	_, err := e.CS.Prompt(e.Ctx(), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{
		acp.TextBlock("look at these"),
		acp.ResourceBlock(acp.EmbeddedResourceResource{BlobResourceContents: &acp.BlobResourceContents{Uri: "file:///w/shot.png",
			Blob: "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", MimeType: &png}}),
		acp.ResourceBlock(acp.EmbeddedResourceResource{BlobResourceContents: &acp.BlobResourceContents{Uri: "file:///w/spec.pdf", Blob: "JVBERi0=", MimeType: &pdf}}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	body := lastRequest(t, w)
	if !strings.Contains(body, "data:image/png;base64,iVBORw0KGgo") {
		t.Errorf("the model got no image: %.2000s", body)
	}
	if !strings.Contains(body, "spec.pdf (application/pdf, 5 bytes); it is saved at ") {
		t.Errorf("the model was not told where the PDF is: %.2000s", body)
	}
}

// With --persist auto a codex session replays from codex's own thread,
// which has no plans; the bridge keeps them, and a load replays the
// latest after the thread.
func TestE2E_loadReplaysThePlan(t *testing.T) {
	w := newWorld(t)
	state, cwd := t.TempDir(), t.TempDir()
	e, _ := w.bridge(t, state, bridge.PersistAuto)
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "todo"); err != nil {
		t.Fatal(err)
	}
	e.Stop()
	e2, _ := w.bridge(t, state, bridge.PersistAuto)
	e2.Load(id, cwd)
	if got := e2.Client.Conversation(); !strings.Contains(got, "user: todo") || !strings.Contains(got, "plan first step in_progress\nplan second step pending") {
		t.Errorf("replay:%s\nwant the thread and its plan", got)
	}
}

// TestE2E_sharedServer: with Shared, bridges share one app-server (see
// editortest.CheckSharedServer), each asked only for its own thread's
// approvals.
func TestE2E_sharedServer(t *testing.T) {
	w, root := newWorld(t), t.TempDir()
	t.Cleanup(func() { daemon.StopAll(root) })
	env := append(fakeresponses.Env(w.home, w.codexHome), daemon.RootEnv+"="+root)
	editortest.CheckSharedServer(t, editortest.SharedServer{
		Backend: func() agent.Backend { return New(Options{Path: w.bin, Env: env, Shared: time.Minute}) },
		Server: func(b agent.Backend) (int, <-chan struct{}) {
			srv := running(t, b)
			return srv.l.Pid(), srv.Done()
		},
		Dir: t.TempDir,
		Asking: func(e *editortest.Editor, id acp.SessionId) {
			e.Client.Option = "accept"
			setMode(t, e, id, "ask")
		},
		Command: "run: mkdir -p made && echo made", Runs: "mkdir -p made && echo made", File: "made",
	})
}

// running is the app-server b runs on.
func running(t *testing.T, b agent.Backend) *server {
	t.Helper()
	srv, ok := b.(*Backend).shared.Running()
	if !ok {
		t.Fatal("no server")
	}
	return srv
}

// TestE2E_keeperKilled: the keeper of a shared app-server SIGKILLed while
// two bridges' turns run on it (see editortest.CheckKeeperKilled).
func TestE2E_keeperKilled(t *testing.T) {
	w, root := newWorld(t), t.TempDir()
	t.Cleanup(func() { daemon.StopAll(root) })
	env := append(fakeresponses.Env(w.home, w.codexHome), daemon.RootEnv+"="+root)
	editortest.CheckKeeperKilled(t, editortest.KeeperKilled{
		Backend: func() agent.Backend { return New(Options{Path: w.bin, Env: env, Shared: time.Minute}) },
		Keeper:  func(b agent.Backend) int { return running(t, b).l.(*agentkit.Leased).Keeper() },
		Dir:     t.TempDir,
		Slow:    "slow",
	})
}

// TestE2E_noDaemonFallsBack: with its daemons' directory read-only, a
// bridge runs its own app-server (see editortest.CheckNoDaemon).
func TestE2E_noDaemonFallsBack(t *testing.T) {
	w := newWorld(t)
	editortest.CheckNoDaemon(t, editortest.NoDaemon{
		Backend: func(root string, log *slog.Logger) agent.Backend {
			env := append(fakeresponses.Env(w.home, w.codexHome), daemon.RootEnv+"="+root)
			return New(Options{Path: w.bin, Env: env, Shared: time.Minute, Logger: log})
		},
		Dir: t.TempDir,
	})
}

// TestE2E_keptCatalog: session/new answers from the models kept on disk,
// then offers the server's (see editortest.CheckKeptCatalog).
func TestE2E_keptCatalog(t *testing.T) {
	w := newWorld(t)
	editortest.CheckKeptCatalog(t, editortest.KeptCatalog{
		Backend: func(catalogs string) agent.Backend {
			return New(Options{Path: w.bin, Env: fakeresponses.Env(w.home, w.codexHome), Catalogs: catalogs})
		},
		Dir: t.TempDir,
		Stale: func(t *testing.T, file, model string) {
			var docs []modelDoc
			if !agentkit.LoadCatalog(file, &docs) {
				t.Fatalf("no catalog in %s", file)
			}
			b, _ := json.Marshal(append(docs, modelDoc{ID: model, Model: model}))
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
	})
}

// A session loaded while it is open in this bridge replays the turns it
// ran here: codex's history is read again, not kept from the thread's
// opening.
func TestE2E_loadOfALiveSessionReplaysItsTurns(t *testing.T) {
	e, _ := newWorld(t).bridge(t, t.TempDir(), bridge.PersistAuto)
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	e.Say(id, "hello live load")
	e.Client.Take()
	e.Load(id, cwd)
	if got := e.Client.Conversation(); !strings.Contains(got, "hello live load") || !strings.Contains(got, "agent: ") {
		t.Errorf("the load of the live session replayed:%s", got)
	}
}

// firstSession is a new user's codex (see editortest.FirstSession): the
// fake's config.toml names its model; the server's list adds its efforts.
func firstSession(t *testing.T) editortest.FirstSession {
	w := newWorld(t)
	return editortest.FirstSession{
		Backend: func(path, catalogs string, log *slog.Logger) agent.Backend {
			return New(Options{Path: path, Env: fakeresponses.Env(w.home, w.codexHome), Catalogs: catalogs, Logger: log})
		},
		Real: w.bin, Serve: "app-server", Dir: t.TempDir, Model: fakeresponses.Model,
		Listed: func(opts []acp.SessionConfigOption) bool {
			return len(acptest.Choices(opts)[agent.ConfigEffort]) > 1
		},
	}
}

// TestE2E_firstSession: with no models kept and the app-server held
// back, session/new answers from config.toml; the server's models follow
// (see editortest.CheckFirstSession).
func TestE2E_firstSession(t *testing.T) {
	editortest.CheckFirstSession(t, firstSession(t))
}

// TestE2E_firstSessionServerFails: the app-server of a session answered
// from config.toml fails to start; the first prompt says why, the next
// one runs (see editortest.CheckFirstSessionFails).
func TestE2E_firstSessionServerFails(t *testing.T) {
	editortest.CheckFirstSessionFails(t, firstSession(t))
}

// The system prompt reaches the model as system-level instructions: the
// developer message (append) or the request's instructions (override);
// the writable root is in the sandbox's instructions.
func TestE2E_directoriesAndSystemPrompt(t *testing.T) {
	for _, mode := range []acp.SystemPromptMode{acp.SystemPromptModeAppend, acp.SystemPromptModeOverride} {
		w := newWorld(t)
		e, _ := w.bridge(t, t.TempDir(), bridge.PersistAuto)
		editortest.CheckSetup(t, editortest.Setup{Editor: e, Mode: mode, DirsShown: true, Sent: editortest.SentBy(w.srv.Requests,
			func(r fakeresponses.Request) map[string]any { return r.Raw }, func(body map[string]any) any {
				return append([]any{body["instructions"]}, editortest.WithRole(body["input"], "developer", "system")...)
			})})
	}
}

// The official TS SDK's unstable v1 client, opted into every capability,
// accepts every message of a Codex session with a directory and a system
// prompt that runs a command and compacts, live and replayed; the model
// was sent the system prompt.
func TestE2E_sdkUnstableClient(t *testing.T) {
	w := newWorld(t)
	b := New(Options{Path: w.bin, Env: fakeresponses.Env(w.home, w.codexHome)})
	lib := t.TempDir()
	r := sdkclient.Run(t, b, sdkclient.Plan{Cwd: t.TempDir(), Dirs: []string{lib}, Mode: "override", SystemPrompt: "Speak like a pirate, sdk.",
		Prompts: []string{"run: echo sdk-unstable", "hello there", "/compact"}})
	sdkclient.Check(t, r, sdkclient.Want{Said: []string{`"name":"exec_command"`, `"sessionUpdate":"compaction_update"`},
		Replayed: []string{"compaction_update", "tool_call"}, Listed: lib})
	if !strings.Contains(sdkclient.JSON(w.srv.Requests()), "Speak like a pirate, sdk.") {
		t.Errorf("the model was not sent the system prompt")
	}
}
