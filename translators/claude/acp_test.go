package claude

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	acpedge "github.com/acpbridge/acpbridge/acp"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/acptest"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// editor is an ACP client connected to a bridge running only the given
// Claude backend, over in-memory pipes.
type editor struct {
	t      *testing.T
	cs     *acp.ClientSideConnection
	c      *client
	stdin  io.WriteCloser
	served chan error
}

func startEditor(t *testing.T, b *Backend, state string) *editor {
	t.Helper()
	st, err := persist.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	m, err := bridge.NewManager(bridge.Config{Backends: []bridge.Backend{b}, Default: "claude", Store: st,
		Persist: bridge.PersistAuto, Logger: log, CancelGrace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	e := &editor{t: t, c: &client{option: "allow"}, stdin: inW, served: make(chan error, 1)}
	go func() {
		e.served <- acpedge.NewServer(m, "test", log).Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	e.cs = acp.NewClientSideConnection(e.c, inW, outR)
	t.Cleanup(e.stop)
	ctx := e.ctx()
	if _, err := e.cs.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acpedge.ProtocolVersion}); err != nil {
		t.Fatal(err)
	}
	return e
}

// stop closes the editor's side and waits for the bridge (and so every
// claude process) to finish.
func (e *editor) stop() {
	e.stdin.Close()
	select {
	case err := <-e.served:
		e.served <- err
	case <-time.After(30 * time.Second):
		e.t.Error("bridge did not stop")
	}
}

func (e *editor) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func (e *editor) newSession(cwd string) acp.SessionId {
	e.t.Helper()
	s, err := e.cs.NewSession(e.ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		e.t.Fatal(err)
	}
	return s.SessionId
}

func (e *editor) prompt(id acp.SessionId, text string) (acp.PromptResponse, error) {
	return e.cs.Prompt(e.ctx(), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

// client records updates and answers permission asks with option.
type client struct {
	acp.Client
	mu      sync.Mutex
	option  string
	updates []acp.SessionUpdate
	asked   []acp.RequestPermissionRequest
}

func (c *client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n.Update)
	return nil
}

func (c *client) RequestPermission(_ context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, r)
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(c.option))}, nil
}

// take returns the updates so far and forgets them.
func (c *client) take() []acp.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	us := c.updates
	c.updates = nil
	return us
}

// conversation renders the updates so far (see acptest) and forgets them.
func (c *client) conversation() string { return acptest.Conversation(c.take()) }

// withPrompt is a turn's updates as a replay shows them: the prompt first.
func withPrompt(prompt string, us []acp.SessionUpdate) string {
	return acptest.Conversation(append([]acp.SessionUpdate{acp.UpdateUserMessageText(prompt)}, us...))
}

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
	e := startEditor(t, b, state)
	id := e.newSession(cwd)
	if _, err := e.prompt(id, "hello"); err != nil {
		t.Fatal(err)
	}
	live := withPrompt("hello", e.c.take())
	e.stop()

	e2 := startEditor(t, b, state)
	if _, err := e2.cs.LoadSession(e2.ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	if got := e2.c.conversation(); got != live {
		t.Errorf("replay:%s\nwant (live):%s", got, live)
	}
	if _, err := e2.prompt(id, "second"); err != nil {
		t.Fatal(err)
	}
	if a, _ := os.ReadFile(args); !strings.Contains(string(a), "--resume fake-session-1") {
		t.Errorf("the reloaded session's claude ran with %q; want --resume fake-session-1", a)
	}
}

func TestACP_crashIsAClearErrorThenRecovers(t *testing.T) {
	b, _ := fakeBackend(t)
	e := startEditor(t, b, t.TempDir())
	id := e.newSession(t.TempDir())
	_, err := e.prompt(id, "crash")
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("crash: %v", err)
	}
	if resp, err := e.prompt(id, "recover"); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("after the crash: %+v, %v", resp, err)
	}
}

func TestACP_authErrorIsAuthRequired(t *testing.T) {
	b, _ := fakeBackend(t)
	e := startEditor(t, b, t.TempDir())
	_, err := e.prompt(e.newSession(t.TempDir()), "autherr")
	if re, ok := err.(*acp.RequestError); !ok || re.Code != -32000 || !strings.Contains(re.Message, "/login") {
		t.Errorf("err %v; want -32000 saying how to log in", err)
	}
}
