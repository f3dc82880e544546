package edge

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/editor"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/coder/acp-go-sdk"
)

// shared is one Server whose Manager several editors reach at once, each
// on a connection of its own (ServeConn), as acpbridge serve runs it.
type shared struct {
	t *testing.T
	s *Server
}

func startShared(t *testing.T) *shared {
	t.Helper()
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := mock.New()
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAuto, Logger: testLogger(), CancelGrace: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return &shared{t: t, s: NewServer(m, "test", testLogger())}
}

// connect is a new client connection, initialized.
func (sh *shared) connect() *editor.Editor {
	sh.t.Helper()
	e := editor.Connect(sh.t, func(ctx context.Context, in io.Reader, out io.Writer) error {
		return sh.s.ServeConn(ctx, in, out, "")
	})
	e.CS.SetLogger(testLogger())
	e.Initialize(acp.ClientCapabilities{})
	return e
}

// A session is attached to the connection that made it: another can't
// prompt it, change it or close it until it loads it, which takes it over
// with the whole conversation; the first is then the one left out.
func TestServeConn_sessionsAreAttachedToOneConnection(t *testing.T) {
	sh := startShared(t)
	a, b := sh.connect(), sh.connect()
	cwd := t.TempDir()
	id := a.NewSession(cwd)
	a.Say(id, "hello from a")
	if got := b.Client.ConversationOf(id); strings.Contains(got, "hello") {
		t.Errorf("b saw a's session:\n%s", got)
	}
	_, err := b.Prompt(id, "hello from b")
	wantCode(t, "b's prompt to a's session", err, codeInvalidRequest)
	_, err = b.SetConfig(id, "mode", "acceptEdits")
	wantCode(t, "b's set_config_option on a's session", err, codeInvalidRequest)
	_, err = b.CS.CloseSession(b.Ctx(), acp.CloseSessionRequest{SessionId: id})
	wantCode(t, "b's close of a's session", err, codeInvalidRequest)

	b.Load(id, cwd)
	if got := b.Client.ConversationOf(id); !strings.Contains(got, "hello from a") {
		t.Errorf("b's load replayed:\n%s", got)
	}
	b.Say(id, "hello from b")
	if got := a.Client.ConversationOf(id); strings.Contains(got, "hello from b") {
		t.Errorf("a still sees the session b took over:\n%s", got)
	}
	_, err = a.Prompt(id, "hello again from a")
	wantCode(t, "a's prompt after b took over", err, codeInvalidRequest)
	a.Load(id, cwd)
	a.Say(id, "a took it back")
}

// A connection that ends while its turn waits on a permission ask: the ask
// ends cancelled, the turn ends and is recorded, and another connection's
// load replays it.
func TestServeConn_aDroppedConnectionsTurnIsRecorded(t *testing.T) {
	sh := startShared(t)
	a := sh.connect()
	cwd := t.TempDir()
	id := a.NewSession(cwd)
	asked := make(chan struct{})
	a.Client.SetPolicy(func(ctx context.Context, _ acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		close(asked)
		<-ctx.Done() // never answered: the connection goes first
		return acp.RequestPermissionResponse{}, ctx.Err()
	})
	go a.Prompt(id, "please edit")
	select {
	case <-asked:
	case <-time.After(time.Minute):
		t.Fatal("the mock's edit asked no permission")
	}
	a.Stop()

	b := sh.connect()
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := b.CS.LoadSession(b.Ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("load after the connection dropped: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	got := b.Client.ConversationOf(id)
	if !strings.Contains(got, "please edit") || !strings.Contains(got, "Edit ") {
		t.Errorf("the replay lacks the dropped connection's turn:\n%s", got)
	}
	b.Say(id, "hello")
}

// A connection may load a session whose turn is still running for another
// that ended: it gets what the turn streamed so far, then the rest live.
func TestServeConn_takesOverARunningTurn(t *testing.T) {
	sh := startShared(t)
	a := sh.connect()
	cwd := t.TempDir()
	id := a.NewSession(cwd)
	done := make(chan acp.PromptResponse, 1)
	go func() {
		resp, _ := a.Prompt(id, "slow one two three")
		done <- resp
	}()
	a.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
	b := sh.connect()
	b.Load(id, cwd)
	b.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
	if resp := <-done; resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("a's prompt ended %q", resp.StopReason)
	}
	got := b.Client.ConversationOf(id)
	if !strings.Contains(got, "slow one two three") {
		t.Errorf("b, which took the turn over, saw:\n%s", got)
	}
}

// A connection for an agent the bridge does not run is refused.
func TestServeConn_unknownAgent(t *testing.T) {
	sh := startShared(t)
	err := sh.s.ServeConn(context.Background(), strings.NewReader(""), io.Discard, "nope")
	if err == nil || !strings.Contains(err.Error(), "nope") {
		t.Errorf("ServeConn for agent nope: %v", err)
	}
}

// A cancel one connection sent does not cancel the prompts of the next to
// take the session over: each connection counts its own messages.
func TestServeConn_cancelsStayWithTheirConnection(t *testing.T) {
	sh := startShared(t)
	a := sh.connect()
	cwd := t.TempDir()
	id := a.NewSession(cwd)
	a.Say(id, "one", "two", "three") // a's messages now arrive late on its connection
	a.Client.Take()
	done := make(chan acp.PromptResponse, 1)
	go func() {
		resp, _ := a.Prompt(id, "slow answer please")
		done <- resp
	}()
	a.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
	if err := a.CS.Cancel(a.Ctx(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	if resp := <-done; resp.StopReason != acp.StopReasonCancelled {
		t.Fatalf("a's cancelled prompt ended %q", resp.StopReason)
	}
	b := sh.connect()
	b.Load(id, cwd)
	if resp := b.MustPrompt(id, "hello again"); resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("b's first prompt after a's cancel ended %q, want end_turn", resp.StopReason)
	}
}
