package edge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// loggedOut is the mock agent with a login of its own, which refuses
// sessions until loggedIn is set.
type loggedOut struct {
	*mock.Backend
	loggedIn atomic.Bool
}

// Info declares the login.
func (b *loggedOut) Info() agent.Info {
	info := b.Backend.Info()
	info.Caps.Login, info.Caps.LoginCmd = b.Login, b.LoginCmd
	return info
}

func (b *loggedOut) LoginCmd() (*exec.Cmd, error) { return exec.Command("true"), nil }

func (b *loggedOut) Login() agent.Login {
	if b.loggedIn.Load() {
		return agent.Login{OK: true, Detail: "MOCK_KEY is set"}
	}
	return agent.Login{Required: true, Detail: "no MOCK_KEY"}
}

func (b *loggedOut) Open(ctx context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	if !b.loggedIn.Load() {
		return nil, fmt.Errorf("%w: no MOCK_KEY", agent.ErrAuthRequired)
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
		caps acp.ClientCapabilities
		want string
	}{
		{"no terminal", acp.ClientCapabilities{},
			`[{"description":"Run ` + "`acpbridge --agent mock --login`" + ` in a terminal, then choose this. no MOCK_KEY","id":"mock-login","name":"Log in to Mock agent (offline)"}]`},
		{"terminal", acp.ClientCapabilities{Auth: acp.AuthCapabilities{Terminal: true}},
			`[{"args":["--agent","mock","--login"],"description":"Runs Mock agent (offline)'s own login in a terminal. Now: no MOCK_KEY","id":"mock-login","name":"Log in to Mock agent (offline)","type":"terminal"}]`},
		{"zed's terminal-auth", acp.ClientCapabilities{Meta: map[string]any{"terminal-auth": true}},
			`[{"_meta":{"terminal-auth":{"args":["--agent","mock","--agent","mock","--login"],"command":"/bin/acpbridge","label":"Mock agent (offline) login"}},"args":["--agent","mock","--login"],"description":"Runs Mock agent (offline)'s own login in a terminal. Now: no MOCK_KEY","id":"mock-login","name":"Log in to Mock agent (offline)","type":"terminal"}]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := startOn(t, t.TempDir(), &loggedOut{Backend: mock.New()}, &testLogin)
			resp, err := h.CS.Initialize(h.Ctx(), acp.InitializeRequest{ProtocolVersion: ProtocolVersion, ClientCapabilities: tc.caps})
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
	if got := jsonOf(t, h.Initialize(acp.ClientCapabilities{}).AuthMethods); got != "[]" {
		t.Errorf("authMethods %s, want []", got)
	}
	_, err := h.CS.Authenticate(h.Ctx(), acp.AuthenticateRequest{MethodId: "mock-login"})
	wantCode(t, "authenticate with nothing offered", err, -32602)
}

func TestAuth_authenticateChecksTheLogin(t *testing.T) {
	b := &loggedOut{Backend: mock.New()}
	h := startOn(t, t.TempDir(), b, &testLogin)
	h.Initialize(acp.ClientCapabilities{})

	_, err := h.CS.NewSession(h.Ctx(), acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}})
	wantCode(t, "session/new logged out", err, -32000)
	var re *acp.RequestError
	if errors.As(err, &re) && jsonOf(t, re.Data) != `{"authMethods":["mock-login"]}` {
		t.Errorf("auth_required data %s, want the method to log in with", jsonOf(t, re.Data))
	}

	_, err = h.CS.Authenticate(h.Ctx(), acp.AuthenticateRequest{MethodId: "mock-login"})
	wantCode(t, "authenticate logged out", err, -32000)
	_, err = h.CS.Authenticate(h.Ctx(), acp.AuthenticateRequest{MethodId: "claude-login"})
	wantCode(t, "authenticate with an unknown method", err, -32602)

	b.loggedIn.Store(true) // the user ran the login
	if _, err := h.CS.Authenticate(h.Ctx(), acp.AuthenticateRequest{MethodId: "mock-login"}); err != nil {
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

// withLogout is loggedOut with a logout of its own: a command that leaves
// a mark (or fails, when fail is set).
type withLogout struct {
	*loggedOut
	mark string
	fail bool
}

func (b *withLogout) Info() agent.Info {
	info := b.loggedOut.Info()
	info.Caps.LogoutCmd = func() (*exec.Cmd, error) {
		if b.fail {
			return exec.Command("sh", "-c", "echo not logged in >&2; exit 3"), nil
		}
		return exec.Command("sh", "-c", "echo out > "+b.mark), nil
	}
	return info
}

// logout is offered when the default agent has a logout that runs
// unattended; it runs it, and a failing one answers with what it printed.
// Without one, logout is neither offered nor answered.
func TestAuth_logoutRunsTheAgentsOwn(t *testing.T) {
	b := &withLogout{loggedOut: &loggedOut{Backend: mock.New()}, mark: filepath.Join(t.TempDir(), "mark")}
	h := startOn(t, t.TempDir(), b, &testLogin)
	if got := jsonOf(t, h.Initialize(acp.ClientCapabilities{}).AgentCapabilities.Auth); got != `{"logout":{}}` {
		t.Errorf("auth capabilities %s, want logout offered", got)
	}
	if _, err := h.CS.Logout(h.Ctx(), acp.LogoutRequest{}); err != nil {
		t.Fatalf("logout: %v", err)
	}
	if _, err := os.Stat(b.mark); err != nil {
		t.Errorf("the agent's logout did not run: %v", err)
	}
	b.fail = true
	_, err := h.CS.Logout(h.Ctx(), acp.LogoutRequest{})
	if err == nil || !strings.Contains(err.Error(), "not logged in") {
		t.Errorf("a failing logout answered %v, want what it printed", err)
	}

	plain := startOn(t, t.TempDir(), &loggedOut{Backend: mock.New()}, &testLogin)
	if got := jsonOf(t, plain.Initialize(acp.ClientCapabilities{}).AgentCapabilities.Auth); got != `{}` {
		t.Errorf("auth capabilities %s without a logout, want none", got)
	}
	_, err = plain.CS.Logout(plain.Ctx(), acp.LogoutRequest{})
	wantCode(t, "logout with none offered", err, -32601)
}
