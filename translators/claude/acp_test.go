package claude

import (
	"os"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/coder/acp-go-sdk"
)

func fakeBackend(t *testing.T) (*Backend, string) {
	args := t.TempDir() + "/args"
	return New(Options{Path: os.Args[0], Env: []string{"FAKE_CLAUDE=1", "FAKE_CLAUDE_ARGS=" + args, "GORACE=atexit_sleep_ms=0"}}), args
}

// TestACP_restartLoadsAndResumesTheSameClaudeSession runs a turn, stops
// the bridge, then loads the session in a new bridge: the replay comes
// from acpbridge's transcript (Claude's resume replays nothing), and the
// next prompt goes to the same Claude session with --resume.
func TestACP_restartLoadsAndResumesTheSameClaudeSession(t *testing.T) {
	state, cwd := t.TempDir(), t.TempDir()
	b, args := fakeBackend(t)
	e := editortest.StartEditor(t, b, state, bridge.PersistAuto)
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, "hello"); err != nil {
		t.Fatal(err)
	}
	live := editortest.WithPrompt("hello", e.Client.Take())
	e.Stop()

	e2 := editortest.StartEditor(t, b, state, bridge.PersistAuto)
	if _, err := e2.CS.LoadSession(e2.Ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := e2.Client.Conversation(); got != live {
		t.Errorf("replay:%s\nwant (live):%s", got, live)
	}
	if _, err := e2.Prompt(id, "second"); err != nil {
		t.Fatal(err)
	}
	if a, _ := os.ReadFile(args); !strings.Contains(string(a), "--resume fake-session-1") {
		t.Errorf("the reloaded session's claude ran with %q; want --resume fake-session-1", a)
	}
}

func TestACP_crashIsAClearErrorThenRecovers(t *testing.T) {
	b, _ := fakeBackend(t)
	e := editortest.StartEditor(t, b, t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	_, err := e.Prompt(id, "crash")
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("crash: %v", err)
	}
	if resp, err := e.Prompt(id, "recover"); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("after the crash: %+v, %v", resp, err)
	}
}

func TestACP_authErrorIsAuthRequired(t *testing.T) {
	b, _ := fakeBackend(t)
	e := editortest.StartEditor(t, b, t.TempDir(), bridge.PersistAuto)
	_, err := e.Prompt(e.NewSession(t.TempDir()), "autherr")
	if re, ok := err.(*acp.RequestError); !ok || re.Code != -32000 || !strings.Contains(re.Message, "/login") {
		t.Errorf("err %v; want -32000 saying how to log in", err)
	}
}
