package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"sync/atomic"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/mock"
	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// loggedOut is the mock agent with a login of its own, which refuses
// sessions until loggedIn is set.
type loggedOut struct {
	*mock.Backend
	loggedIn atomic.Bool
}

func (b *loggedOut) LoginCmd() (*exec.Cmd, error) { return exec.Command("true"), nil }

func (b *loggedOut) Login() bridge.Login {
	if b.loggedIn.Load() {
		return bridge.Login{OK: true, Detail: "MOCK_KEY is set"}
	}
	return bridge.Login{Required: true, Detail: "no MOCK_KEY"}
}

func (b *loggedOut) Open(ctx context.Context, opts bridge.OpenOptions, ev bridge.Events) (bridge.Native, error) {
	if !b.loggedIn.Load() {
		return nil, fmt.Errorf("%w: no MOCK_KEY", bridge.ErrAuthRequired)
	}
	return b.Backend.Open(ctx, opts, ev)
}

var testLogin = Login{
	Args: func(agent string) []string { return []string{"--agent", agent, "--login"} },
	Self: []string{"/bin/acpbridge", "--agent", "mock"},
}

func TestAuth_methodsFollowTheClientsTerminal(t *testing.T) {
	tests := []struct {
		name string
		caps sdk.ClientCapabilities
		want string
	}{
		{"no terminal", sdk.ClientCapabilities{},
			`[{"description":"Run ` + "`acpbridge --agent mock --login`" + ` in a terminal, then choose this. no MOCK_KEY","id":"mock-login","name":"Log in to Mock agent (offline)"}]`},
		{"terminal", sdk.ClientCapabilities{Auth: sdk.AuthCapabilities{Terminal: true}},
			`[{"args":["--agent","mock","--login"],"description":"Runs Mock agent (offline)'s own login in a terminal. Now: no MOCK_KEY","id":"mock-login","name":"Log in to Mock agent (offline)","type":"terminal"}]`},
		{"zed's terminal-auth", sdk.ClientCapabilities{Meta: map[string]any{"terminal-auth": true}},
			`[{"_meta":{"terminal-auth":{"args":["--agent","mock","--agent","mock","--login"],"command":"/bin/acpbridge","label":"Mock agent (offline) login"}},"args":["--agent","mock","--login"],"description":"Runs Mock agent (offline)'s own login in a terminal. Now: no MOCK_KEY","id":"mock-login","name":"Log in to Mock agent (offline)","type":"terminal"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startOn(t, t.TempDir(), &loggedOut{Backend: mock.New()}, &testLogin)
			resp, err := h.CS.Initialize(h.Ctx(), sdk.InitializeRequest{ProtocolVersion: ProtocolVersion, ClientCapabilities: tc.caps})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, jsonOf(t, resp.AuthMethods)); diff != "" {
				t.Errorf("authMethods (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAuth_noLoginsWithoutSetLogin(t *testing.T) {
	h := startOn(t, t.TempDir(), &loggedOut{Backend: mock.New()}, nil)
	if got := jsonOf(t, h.Initialize(sdk.ClientCapabilities{}).AuthMethods); got != "[]" {
		t.Errorf("authMethods %s, want []", got)
	}
	_, err := h.CS.Authenticate(h.Ctx(), sdk.AuthenticateRequest{MethodId: "mock-login"})
	wantCode(t, "authenticate with nothing offered", err, -32602)
}

func TestAuth_authenticateChecksTheLogin(t *testing.T) {
	b := &loggedOut{Backend: mock.New()}
	h := startOn(t, t.TempDir(), b, &testLogin)
	h.Initialize(sdk.ClientCapabilities{})

	_, err := h.CS.NewSession(h.Ctx(), sdk.NewSessionRequest{Cwd: "/work", McpServers: []sdk.McpServer{}})
	wantCode(t, "session/new logged out", err, -32000)
	var re *sdk.RequestError
	if errors.As(err, &re) && jsonOf(t, re.Data) != `{"authMethods":["mock-login"]}` {
		t.Errorf("auth_required data %s, want the method to log in with", jsonOf(t, re.Data))
	}

	_, err = h.CS.Authenticate(h.Ctx(), sdk.AuthenticateRequest{MethodId: "mock-login"})
	wantCode(t, "authenticate logged out", err, -32000)
	_, err = h.CS.Authenticate(h.Ctx(), sdk.AuthenticateRequest{MethodId: "claude-login"})
	wantCode(t, "authenticate with an unknown method", err, -32602)

	b.loggedIn.Store(true) // the user ran the login
	if _, err := h.CS.Authenticate(h.Ctx(), sdk.AuthenticateRequest{MethodId: "mock-login"}); err != nil {
		t.Errorf("authenticate logged in: %v", err)
	}
	h.NewSessionResponse("/work")
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
