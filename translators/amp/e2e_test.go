package amp

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	"github.com/coder/acp-go-sdk"
)

// The tests in this file run the real, pinned amp (installed by
// scripts/install-tools.sh) offline. Amp runs its model on its own
// servers, so no turn can succeed here: they check what can be checked
// without them — the version, the bridge's answer when amp has no key,
// that amp accepts every command line the bridge builds, and that Amp's
// own permission engine runs the bridge's hook and takes the editor's
// answer. They skip loudly when amp is missing, and fail instead under
// ACPBRIDGE_REQUIRE_E2E=1. TestLive_textTurn runs a real turn only when
// AMP_API_KEY is set.

// pinnedVersion is the amp that scripts/install-tools.sh installs.
const pinnedVersion = "0.0.1790142911-g7618fb"

// installedBin is where install-tools.sh puts amp's native binary.
func installedBin(root string) string {
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	if arch == "" || (runtime.GOOS != "linux" && runtime.GOOS != "darwin") {
		return ""
	}
	return filepath.Join(root, ".tools", "amp", "node_modules", "@ampcode", "cli-"+runtime.GOOS+"-"+arch, "amp")
}

func ampBin(t *testing.T) string { return toolbin.Find(t, "amp", "AMP_BIN", installedBin) }

// realHome is a home of amp's own, empty; env adds to it. Amp's TMPDIR is
// the test's too: amp (a Bun binary) unpacks a native module there.
func realHome(t *testing.T, env ...string) (home string, full []string) {
	home = t.TempDir()
	return home, append([]string{"HOME=" + home, "TMPDIR=" + t.TempDir(), "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"), "XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"AMP_SETTINGS_FILE=", "AMP_API_KEY=", "AMP_URL="}, env...)
}

func realBackend(t *testing.T, env []string) *Backend {
	b := New(Options{CLIOptions: CLIOptions{Path: ampBin(t), Env: env}, Delegate: []string{nativetest.TestBinary(), DelegateCommand}})
	t.Cleanup(func() { b.Close() })
	return b
}

// closedURL is a server URL where nothing listens.
func closedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// silentURL is a server that takes connections and never answers: amp
// waits on it, so its turn keeps running.
func silentURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		<-done
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + ln.Addr().String()
}

func TestE2E_version(t *testing.T) {
	_, env := realHome(t)
	cmd := exec.Command(ampBin(t), "--version")
	cmd.Env = append(os.Environ(), append(env, "AMP_SKIP_UPDATE_CHECK=1")...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("amp --version: %q, %v", out, err)
	}
	toolbin.CheckVersion(t, "amp", string(out), pinnedVersion)
}

// Without a key the editor hears auth_required at session/new, at once,
// and amp never starts (it would have written its logs into its home).
func TestE2E_noCredentialsIsAuthRequiredAtOnce(t *testing.T) {
	home, env := realHome(t)
	e := editortest.StartEditor(t, realBackend(t, env), t.TempDir(), bridge.PersistAuto)
	_, err := e.CS.NewSession(e.Ctx(), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32000 || !strings.Contains(err.Error(), "AMP_API_KEY") {
		t.Fatalf("session/new = %v, want auth_required (-32000) saying how to log in", err)
	}
	if ents, _ := os.ReadDir(home); len(ents) != 0 {
		t.Errorf("amp ran: its home holds %v", ents)
	}
}

// A key stored for another server passes the bridge's check, and amp
// starts its login flow: the bridge ends the turn auth_required at once
// and leaves no amp behind.
func TestE2E_loginFlowIsCaught(t *testing.T) {
	home, env := realHome(t, "AMP_URL="+closedURL(t))
	secrets := filepath.Join(home, ".local", "share", "amp", "secrets.json")
	os.MkdirAll(filepath.Dir(secrets), 0o700)
	os.WriteFile(secrets, []byte(`{"apiKey@https://ampcode.com/":"sgamp_user_elsewhere"}`), 0o600)
	s := nativetest.OpenSession(t, realBackend(t, env), agent.OpenOptions{}, nativetest.NewRecorder(""))
	_, err := nativetest.RunPrompt(t, s, "hello", nil)
	if !errors.Is(err, agent.ErrAuthRequired) {
		t.Fatalf("err = %v, want auth required", err)
	}
	// Caught at its prompt, not at its exit: the bridge killed amp, which
	// would wait for the code to be pasted.
	if err := exitOf(t, s); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("amp's exit: %v; want it killed at the login prompt", err)
	}
}

// assertNoAmp checks that the session's last amp exits.
func assertNoAmp(t *testing.T, n agent.Native) {
	t.Helper()
	exitOf(t, n)
}

// Every command line the bridge builds is one amp takes: offline, each
// turn fails on the network, never on its arguments or settings.
func TestE2E_commandLinesAreAccepted(t *testing.T) {
	_, env := realHome(t, "AMP_API_KEY=not-a-real-key", "AMP_URL="+closedURL(t))
	b := realBackend(t, env)
	mcp := []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "docs", Command: "/bin/true", Args: []string{}, Env: []acp.EnvVariable{}}},
		{Http: &acp.McpServerHttpInline{Name: "web", Url: "http://127.0.0.1:9/mcp", Headers: []acp.HttpHeader{}}}}
	for _, tc := range []struct {
		name string
		opts agent.OpenOptions
	}{
		{"new thread, rules delegated", agent.OpenOptions{}},
		{"continued thread, mode, MCP servers", agent.OpenOptions{NativeID: "T-7d0c2b1e-1111-4222-8333-444455556666", MCPServers: mcp,
			Config: map[string]string{agent.ConfigModel: "high"}}},
		{"bypass", agent.OpenOptions{Config: map[string]string{agent.ConfigMode: modeBypass, agent.ConfigModel: "low"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := nativetest.OpenSession(t, b, tc.opts, nativetest.NewRecorder(""))
			_, err := nativetest.RunPrompt(t, s, "hello", nil)
			if err == nil || !strings.Contains(err.Error(), "can't reach Amp's servers") {
				t.Fatalf("err = %v, want amp to fail on the network only", err)
			}
			assertNoAmp(t, s)
		})
	}
}

// Amp's own permission engine (`amp permissions test`, which runs
// delegates as a turn does) reads the settings the bridge wrote: Amp's
// built-in rules still allow ls, and the asks they make reach the editor,
// whose answer Amp takes. A turn must be running, as it is when amp asks.
func TestE2E_ampRunsTheBridgesPermissionHook(t *testing.T) {
	bin := ampBin(t)
	_, env := realHome(t, "AMP_API_KEY=not-a-real-key", "AMP_URL="+silentURL(t))
	ev := nativetest.NewRecorder("allow_once")
	s := nativetest.OpenSession(t, realBackend(t, env), agent.OpenOptions{}, ev).(*session)
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan agent.TurnResult, 1)
	go func() {
		res, _ := s.Prompt(ctx, nativetest.TextTurn("hello", nil))
		ended <- res
	}()
	nativetest.Poll(t, "the turn to run", func() bool { return s.turns.Running() != nil })
	settings := filepath.Join(s.hooked, "settings.json")

	for cmdline, want := range map[string]struct {
		action string
		asks   int
	}{"rm -rf /tmp/acpbridge-e2e": {"allow", 1}, "ls -la": {"allow", 0}} {
		before := len(asksOf(ev))
		test := exec.Command(bin, "permissions", "test", "Bash", "--cmd", cmdline, "--settings-file", settings, "--json")
		test.Env = append(os.Environ(), append(env, "AMP_SKIP_UPDATE_CHECK=1")...)
		out, _ := test.Output()
		var got struct {
			Action string `json:"action"`
			Error  string `json:"error"`
		}
		if err := json.Unmarshal(out, &got); err != nil || got.Action != want.action {
			t.Errorf("amp permissions test %q: %s (%v); want %s", cmdline, out, err, want.action)
		}
		if asks := asksOf(ev)[before:]; len(asks) != want.asks {
			t.Errorf("%q: %d asks, want %d", cmdline, len(asks), want.asks)
		} else if want.asks > 0 && (asks[0].Call.Title == nil || *asks[0].Call.Title != cmdline) {
			t.Errorf("%q: ask about %+v", cmdline, asks[0].Call)
		}
	}

	cancel()
	select {
	case res := <-ended:
		if res.StopReason != acp.StopReasonCancelled {
			t.Errorf("cancelled turn: %+v", res)
		}
	case <-time.After(nativetest.WaitGuard):
		t.Fatal("the cancelled turn did not end")
	}
	assertNoAmp(t, s)
}

func asksOf(ev *nativetest.Recorder) []nativetest.Ask {
	_, asks, _ := ev.Snapshot()
	return asks
}

// TestLive_textTurn runs one real turn on Amp's servers: opt in with
// AMP_API_KEY (it costs credits).
func TestLive_textTurn(t *testing.T) {
	key := os.Getenv("AMP_API_KEY")
	if key == "" {
		t.Skip("SKIPPED: set AMP_API_KEY to run a live turn on Amp's servers (it uses credits)")
	}
	_, env := realHome(t, "AMP_API_KEY="+key)
	ev := nativetest.NewRecorder("reject_once")
	s := nativetest.OpenSession(t, realBackend(t, env), agent.OpenOptions{}, ev)
	res := nativetest.MustPrompt(t, s, "Reply with the single word: pong", nil)
	if !strings.Contains(strings.ToLower(ev.Conversation()), "pong") || res.Usage == nil || !strings.HasPrefix(s.NativeID(), "T-") {
		t.Errorf("live turn: %+v, thread %q\n%s", res, s.NativeID(), ev.Conversation())
	}
}
