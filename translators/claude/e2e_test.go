package claude

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/translators/claude/fakeapi"
	"github.com/coder/acp-go-sdk"
)

// The tests in this file run the real, pinned claude CLI (installed by
// scripts/install-tools.sh) against the fake Messages API, through the
// bridge, driven by an ACP client. They skip loudly when the CLI is
// missing, and fail instead under ACPBRIDGE_REQUIRE_E2E=1.

// realEditor starts a bridge whose Claude backend runs the real CLI against
// a fake model, isolated in its own HOME.
func realEditor(t *testing.T, state string) (*editor, *fakeapi.Server) {
	return realEditorIn(t, state, t.TempDir())
}

// realEditorIn is realEditor with Claude's HOME (and so its own session
// files) in home.
func realEditorIn(t *testing.T, state, home string) (*editor, *fakeapi.Server) {
	t.Helper()
	bin := fakeapi.ClaudeBin(t)
	srv := fakeapi.New(fakeapi.Directives())
	t.Cleanup(srv.Close)
	b := New(Options{Path: bin, Env: fakeapi.Env(srv.URL, home), ExtraArgs: []string{"--setting-sources", ""}})
	return startEditor(t, b, state), srv
}

func TestE2E_textTurn(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	id := e.newSession(t.TempDir())
	resp, err := e.prompt(id, "Say hello")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn || resp.Usage == nil {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if got := e.c.conversation(); !strings.Contains(got, "agent: "+fakeapi.AnswerTextPrefix+"Say hello") {
		t.Errorf("conversation:%s", got)
	}
}

func TestE2E_bashPermission(t *testing.T) {
	for option, want := range map[string]string{"allow": "completed", "reject": "failed"} {
		t.Run(option, func(t *testing.T) {
			e, _ := realEditor(t, t.TempDir())
			e.c.option = option
			cwd := t.TempDir()
			id := e.newSession(cwd)
			if _, err := e.prompt(id, "RUN_BASH: touch made.txt && echo made"); err != nil {
				t.Fatal(err)
			}
			got := e.c.conversation()
			if !strings.Contains(got, " execute "+want+" touch made.txt && echo made\n") || len(e.c.asked) != 1 {
				t.Errorf("%d asks; conversation:%s", len(e.c.asked), got)
			}
			_, err := os.Stat(filepath.Join(cwd, "made.txt"))
			if ran := err == nil; ran != (option == "allow") {
				t.Errorf("the command ran: %v, want %v", ran, option == "allow")
			}
		})
	}
}

func TestE2E_writeShowsADiff(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	cwd := t.TempDir()
	id := e.newSession(cwd)
	if _, err := e.prompt(id, "WRITE_FILE: notes.txt hello world"); err != nil {
		t.Fatal(err)
	}
	e.c.mu.Lock()
	var diff *acp.ToolCallContentDiff
	for _, u := range e.c.updates {
		if tu := u.ToolCallUpdate; tu != nil {
			for _, c := range tu.Content {
				if c.Diff != nil {
					diff = c.Diff
				}
			}
		}
	}
	e.c.mu.Unlock()
	path := filepath.Join(cwd, "notes.txt")
	if diff == nil || diff.Path != path || diff.NewText != "hello world" || diff.OldText != nil {
		t.Errorf("diff %+v; want a new file %s with hello world", diff, path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello world" {
		t.Errorf("file: %q, %v", b, err)
	}
}

func TestE2E_tasksBecomeThePlan(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	id := e.newSession(t.TempDir())
	if _, err := e.prompt(id, "TASKS"); err != nil {
		t.Fatal(err)
	}
	got := e.c.conversation()
	if !strings.Contains(got, "plan "+fakeapi.TaskActiveForm+" in_progress") || strings.Contains(got, "tool ") {
		t.Errorf("conversation:%s\nwant the task as the plan, in progress, and no tool calls", got)
	}
}

func TestE2E_cancelMidStream(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	id := e.newSession(t.TempDir())
	done := make(chan acp.PromptResponse, 1)
	go func() {
		resp, err := e.prompt(id, "SLOW please")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- resp
	}()
	waitForText(t, e)
	if err := e.cs.Cancel(e.ctx(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-done:
		if resp.StopReason != acp.StopReasonCancelled {
			t.Errorf("stopReason %q, want cancelled", resp.StopReason)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("cancelled prompt did not return")
	}
	if resp, err := e.prompt(id, "Say hello"); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("prompt after cancel: %+v, %v", resp, err)
	}
}

// waitForText waits for the first agent message chunk.
func waitForText(t *testing.T, e *editor) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		e.c.mu.Lock()
		for _, u := range e.c.updates {
			if u.AgentMessageChunk != nil {
				e.c.mu.Unlock()
				return
			}
		}
		e.c.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no agent text")
}

// TestE2E_restartLoadsAndContinuesTheConversation: after a bridge
// restart, session/load replays from acpbridge's transcript, and the next
// prompt reaches the model with the earlier turn in the same Claude
// session.
func TestE2E_restartLoadsAndContinuesTheConversation(t *testing.T) {
	state, cwd, home := t.TempDir(), t.TempDir(), t.TempDir()
	e, _ := realEditorIn(t, state, home)
	id := e.newSession(cwd)
	if _, err := e.prompt(id, "RUN_BASH: echo first"); err != nil {
		t.Fatal(err)
	}
	live := withPrompt("RUN_BASH: echo first", e.c.take())
	e.stop()

	e2, srv := realEditorIn(t, state, home)
	if _, err := e2.cs.LoadSession(e2.ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := e2.c.conversation(); got != live {
		t.Errorf("replay:%s\nwant (live):%s", got, live)
	}
	if _, err := e2.prompt(id, "Say hello again"); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model saw no request")
	}
	body, _ := json.Marshal(reqs[len(reqs)-1].Raw["messages"])
	if !strings.Contains(string(body), "RUN_BASH: echo first") {
		t.Errorf("the continued session's request lacks the first turn: %.300s", body)
	}
}

// TestE2E_lostClaudeSessionStartsFresh: when Claude's own session file is
// gone (here: another HOME), the next prompt starts a new Claude session
// and says so, instead of failing forever.
func TestE2E_lostClaudeSessionStartsFresh(t *testing.T) {
	state, cwd := t.TempDir(), t.TempDir()
	e, _ := realEditor(t, state)
	id := e.newSession(cwd)
	if _, err := e.prompt(id, "Say hello"); err != nil {
		t.Fatal(err)
	}
	e.stop()
	e2, _ := realEditor(t, state)
	if _, err := e2.cs.ResumeSession(e2.ctx(), acp.ResumeSessionRequest{SessionId: id, Cwd: cwd}); err != nil {
		t.Fatal(err)
	}
	resp, err := e2.prompt(id, "Say hello again")
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %+v, %v", resp, err)
	}
	if got := e2.c.conversation(); !strings.Contains(got, "no longer has this conversation") {
		t.Errorf("conversation:%s\nwant the notice", got)
	}
}

// TestE2E_killedMidTurn kills the claude process during a turn: the
// prompt fails with a clear error, and the next one restarts it.
func TestE2E_killedMidTurn(t *testing.T) {
	e, _ := realEditor(t, t.TempDir())
	cwd := t.TempDir()
	id := e.newSession(cwd)
	errc := make(chan error, 1)
	go func() {
		_, err := e.prompt(id, "SLOW please")
		errc <- err
	}()
	waitForText(t, e)
	pid := processIn(t, cwd)
	syscall.Kill(pid, syscall.SIGKILL)
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), "signal: killed") {
			t.Errorf("prompt of a killed claude: %v; want an error saying it was killed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("prompt did not return after the kill")
	}
	if resp, err := e.prompt(id, "Say hello"); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("prompt after the kill: %+v, %v", resp, err)
	}
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
	_, err := e.prompt(e.newSession(t.TempDir()), "ERROR_500")
	if re, ok := err.(*acp.RequestError); !ok || re.Code != -32603 || !strings.Contains(re.Message, "500") {
		t.Errorf("HTTP 500: %v; want -32603 naming the status", err)
	}
	_, err = e.prompt(e.newSession(t.TempDir()), "AUTH_401")
	if re, ok := err.(*acp.RequestError); !ok || re.Code != -32000 || !strings.Contains(re.Message, "/login") {
		t.Errorf("HTTP 401: %v; want auth_required (-32000) saying how to log in", err)
	}
}

var _ = context.Background
