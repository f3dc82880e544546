package edgev2_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/mock"
)

// withLogin is the mock agent with a login of its own, logged in when
// loggedIn is set, and a logout when hasLogout.
type withLogin struct {
	*mock.Backend
	loggedIn  atomic.Bool
	noLogout  bool
	loggedOut atomic.Int32 // logouts run
}

func (b *withLogin) Info() agent.Info {
	info := b.Backend.Info()
	info.Caps.Login = b.login
	info.Caps.LoginCmd = func() (*exec.Cmd, error) { return exec.Command("true"), nil }
	if !b.noLogout {
		info.Caps.LogoutCmd = func() (*exec.Cmd, error) {
			b.loggedOut.Add(1)
			return exec.Command("true"), nil
		}
	}
	return info
}

func (b *withLogin) login() agent.Login {
	if b.loggedIn.Load() {
		return agent.Login{OK: true, Detail: "MOCK_KEY is set"}
	}
	return agent.Login{Required: true, Detail: "no MOCK_KEY"}
}

var testLogin = edge.Login{
	Args: func(agent string) []string { return []string{"--agent", agent, "--login"} },
	Self: []string{"/bin/acpbridge", "--agent", "mock"},
}

// runAuth is run with b behind a bridge that offers login (when login).
func runAuth(t *testing.T, b agent.Backend, login *edge.Login, lines ...string) map[string]map[string]any {
	t.Helper()
	m := managerOn(t, t.TempDir(), b)
	var out strings.Builder
	if err := serveWith(t.Context(), m, strings.NewReader(strings.Join(lines, "\n")+"\n"), &out, login); err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var msg map[string]any
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if id, ok := msg["id"]; ok && msg["method"] == nil {
			k, _ := json.Marshal(id)
			byID[string(k)] = msg
		}
	}
	return byID
}

const (
	login    = `{"jsonrpc":"2.0","id":2,"method":"auth/login","params":{"methodId":"mock-login"}}`
	logout   = `{"jsonrpc":"2.0","id":3,"method":"auth/logout","params":{}}`
	initTerm = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":2,"info":{"name":"t","version":"1"},"capabilities":{"auth":{"terminal":{}}}}}`
)

// TestV2_auth: the methods initialize offers are v1's in v2's shape
// (methodId, a type; terminal ones only to a client with auth.terminal);
// auth/login of a logged-out agent is auth_required (-32000) naming the
// method, of an unknown method -32602; auth/logout of an agent without a
// logout -32602; and without logins offered (acpbridge serve) there are
// no methods and both are -32601.
func TestV2_auth(t *testing.T) {
	out := runAuth(t, &withLogin{Backend: mock.New(), noLogout: true}, &testLogin, initV2, login, logout,
		`{"jsonrpc":"2.0","id":4,"method":"auth/login","params":{"methodId":"nobody-login"}}`)
	methods := jsonOf(out["1"]["result"].(map[string]any)["authMethods"])
	if want := `[{"description":"Run ` + "`acpbridge --agent mock --login`" + ` in a terminal, then choose this. no MOCK_KEY","methodId":"mock-login","name":"Log in to Mock agent (offline)","type":"agent"}]`; methods != want {
		t.Errorf("authMethods\n%s\nwant\n%s", methods, want)
	}
	if c := code(out["2"]); c != -32000 || !strings.Contains(jsonOf(out["2"]), `"authMethods":["mock-login"]`) {
		t.Errorf("auth/login while logged out: %v, want -32000 naming mock-login", out["2"])
	}
	if c := code(out["3"]); c != -32602 {
		t.Errorf("auth/logout without a logout: %v, want -32602", out["3"])
	}
	if c := code(out["4"]); c != -32602 {
		t.Errorf("auth/login of an unknown method: %v, want -32602", out["4"])
	}

	term := runAuth(t, &withLogin{Backend: mock.New()}, &testLogin, initTerm)
	if methods := jsonOf(term["1"]["result"].(map[string]any)["authMethods"]); !strings.Contains(methods, `"type":"terminal"`) || !strings.Contains(methods, `"args":["--agent","mock","--login"]`) {
		t.Errorf("authMethods for a client with terminal auth: %s", methods)
	}

	none := runAuth(t, &withLogin{Backend: mock.New()}, nil, initV2, login, logout)
	if methods, ok := none["1"]["result"].(map[string]any)["authMethods"]; ok {
		t.Errorf("authMethods without logins: %s, want none (omitted)", jsonOf(methods))
	}
	if code(none["2"]) != -32601 || code(none["3"]) != -32601 {
		t.Errorf("auth/login, auth/logout without auth methods: %v, %v; want -32601", none["2"], none["3"])
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestV2_handledInArrivalOrder: requests piped in at once are handled in
// the order they came: every auth/login after the initialize sees the
// auth methods it offered (jrpc2 alone invokes each on a goroutine of its
// own, and some ran before the initialize).
func TestV2_handledInArrivalOrder(t *testing.T) {
	lines := []string{initV2}
	for i := 2; i < 40; i++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"auth/login","params":{"methodId":"mock-login"}}`, i))
	}
	out := runAuth(t, &withLogin{Backend: mock.New()}, &testLogin, lines...)
	for i := 2; i < 40; i++ {
		if c := code(out[fmt.Sprint(i)]); c != -32000 {
			t.Errorf("auth/login %d: %v, want -32000 (handled after the initialize)", i, out[fmt.Sprint(i)])
		}
	}
}
