package acp

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/acptest"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
	sdk "github.com/coder/acp-go-sdk"
)

// harness is an editor connected to a bridge over in-memory pipes.
type harness struct {
	t      *testing.T
	cs     *sdk.ClientSideConnection
	client *fakeClient
	stdin  *io.PipeWriter // the editor's end of the bridge's stdin
	served chan error     // Serve's result
	dir    string         // the state directory, if any
}

// start runs a bridge on the mock agent persisting into dir ("" for
// --persist never).
func start(t *testing.T, dir string) *harness {
	t.Helper()
	return startOn(t, dir, mock.New(), nil)
}

// startOn runs a bridge on backend b (the default agent), offering logins
// when login is not nil.
func startOn(t *testing.T, dir string, b agent.Backend, login *Login) *harness {
	t.Helper()
	cfg := bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Persist: bridge.PersistNever, Logger: testLogger(), CancelGrace: 2 * time.Second}
	if dir != "" {
		st, err := persist.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Store, cfg.Persist = st, bridge.PersistAuto
	}
	m, err := bridge.NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	h := &harness{t: t, client: newFakeClient(), stdin: c2aW, served: make(chan error, 1), dir: dir}
	go func() {
		s := NewServer(m, "test", testLogger())
		if login != nil {
			s.SetLogin(*login)
		}
		h.served <- s.Serve(context.Background(), c2aR, a2cW)
		a2cW.Close()
	}()
	h.cs = sdk.NewClientSideConnection(h.client, c2aW, a2cR)
	h.cs.SetLogger(testLogger())
	t.Cleanup(func() { h.stop() })
	return h
}

// stop closes the bridge's stdin and waits for it to shut down.
func (h *harness) stop() {
	h.stdin.Close()
	select {
	case err := <-h.served:
		if err != nil {
			h.t.Errorf("Serve: %v", err)
		}
		h.served <- err // let a second stop return too
	case <-time.After(20 * time.Second):
		h.t.Fatal("bridge did not shut down")
	}
}

func testLogger() *slog.Logger {
	level := slog.LevelError
	if os.Getenv("ACPBRIDGE_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}

func (h *harness) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	h.t.Cleanup(cancel)
	return ctx
}

func (h *harness) initialize() sdk.InitializeResponse {
	h.t.Helper()
	resp, err := h.cs.Initialize(h.ctx(), sdk.InitializeRequest{ProtocolVersion: ProtocolVersion})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func (h *harness) newSession(cwd string) sdk.NewSessionResponse {
	h.t.Helper()
	resp, err := h.cs.NewSession(h.ctx(), sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

func (h *harness) prompt(id sdk.SessionId, text string) (sdk.PromptResponse, error) {
	return h.cs.Prompt(h.ctx(), sdk.PromptRequest{SessionId: id, Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}})
}

func (h *harness) mustPrompt(id sdk.SessionId, text string) sdk.PromptResponse {
	h.t.Helper()
	resp, err := h.prompt(id, text)
	if err != nil {
		h.t.Fatalf("prompt %q: %v", text, err)
	}
	return resp
}

// wantCode checks that err is a JSON-RPC error with code.
func wantCode(t *testing.T, what string, err error, code int) {
	t.Helper()
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != code {
		t.Errorf("%s: error %v, want code %d", what, err, code)
	}
}

// fakeClient records updates and answers permission asks with policy.
type fakeClient struct {
	sdk.Client // methods a test doesn't provide panic if called

	mu      sync.Mutex
	updates []sdk.SessionNotification
	asks    []sdk.RequestPermissionRequest
	policy  func(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)
	notify  chan sdk.SessionUpdate // each update, if a test listens; never blocks
}

func newFakeClient() *fakeClient {
	return &fakeClient{policy: choose("allow"), notify: make(chan sdk.SessionUpdate, 4096)}
}

// choose answers every ask with the option whose id is optionID.
func choose(optionID string) func(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	return func(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(optionID))}, nil
	}
}

func (c *fakeClient) setPolicy(p func(context.Context, sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policy = p
}

func (c *fakeClient) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	c.updates = append(c.updates, n)
	c.mu.Unlock()
	select {
	case c.notify <- n.Update:
	default:
	}
	return nil
}

func (c *fakeClient) RequestPermission(ctx context.Context, r sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asks = append(c.asks, r)
	p := c.policy
	c.mu.Unlock()
	return p(ctx, r)
}

// take returns and forgets the updates so far.
func (c *fakeClient) take() []sdk.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	var us []sdk.SessionUpdate
	for _, n := range c.updates {
		us = append(us, n.Update)
	}
	c.updates = nil
	for len(c.notify) > 0 {
		<-c.notify
	}
	return us
}

func (c *fakeClient) askCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.asks)
}

// waitFor waits until an update satisfying ok arrives.
func (c *fakeClient) waitFor(t *testing.T, ok func(sdk.SessionUpdate) bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case u := <-c.notify:
			if ok(u) {
				return
			}
		case <-timeout:
			t.Fatal("timed out waiting for an update")
		}
	}
}

// view is the conversation a client would show (see acptest).
var view = acptest.Conversation
