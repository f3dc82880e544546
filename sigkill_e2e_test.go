//go:build linux

package main

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/testkit/fakechat"
	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
	"github.com/acpbridge/acpbridge/translators/claude"
	"github.com/acpbridge/acpbridge/translators/codex"
	"github.com/acpbridge/acpbridge/translators/opencode"
	sdk "github.com/coder/acp-go-sdk"
)

// sharedAgent is a real agent CLI on its fake model, for a bridge process
// with default flags (--shared: claude's process lent by the spares
// server, codex's and opencode's servers shared daemons).
type sharedAgent struct {
	name string
	env  func(t *testing.T) []string // the bridge's environment, beside os.Environ
	mode string                      // a mode that runs commands without asking
}

var sharedAgents = []sharedAgent{
	{"claude", func(t *testing.T) []string {
		srv := fakemessages.New(fakemessages.Directives())
		t.Cleanup(srv.Close)
		return append(fakemessages.Env(srv.URL, t.TempDir()), claude.EnvVar+"="+fakemessages.ClaudeBin(t))
	}, "bypassPermissions"},
	{"codex", func(t *testing.T) []string {
		srv := fakeresponses.New(fakeresponses.Directives())
		t.Cleanup(srv.Close)
		home, codexHome := fakeresponses.Home(t, srv.URL, fakeresponses.HomeOptions{})
		return append(fakeresponses.Env(home, codexHome), codex.EnvVar+"="+fakeresponses.CodexBin(t))
	}, "full-access"},
	{"opencode", func(t *testing.T) []string {
		srv := fakechat.New(fakechat.Directives())
		t.Cleanup(srv.Close)
		home := fakechat.Home(t, srv.URL)
		return append(fakechat.Env(home, fakechat.ConfigPath(home)), opencode.EnvVar+"="+fakechat.OpencodeBin(t))
	}, ""},
}

// A bridge SIGKILLed while its turn runs a command (an editor's crash)
// leaves nothing of the command running, whichever agent, with the
// daemons of the default flags: claude's process, lent by the spares
// server, is stopped with its Bash tool's command; codex's and opencode's
// shared servers interrupt the dead bridge's turn.
func TestRun_sigkillStopsTheSharedAgentsCommand(t *testing.T) {
	for _, a := range sharedAgents {
		t.Run(a.name, func(t *testing.T) {
			root := t.TempDir()
			t.Cleanup(func() { daemon.StopAll(root) })
			env := append(a.env(t), daemon.RootEnv+"="+root)
			cwd := t.TempDir() // the session's too: the spare warmed at initialize is of its kind
			p := startProcIn(t, cwd, env, "--agent", a.name, "--state-dir", t.TempDir())
			if _, err := p.cs.Initialize(ctx(t), sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
				t.Fatal(err)
			}
			long, cancel := context.WithTimeout(context.Background(), time.Minute) // a first opencode serve's start, on a loaded machine
			defer cancel()
			s, err := p.cs.NewSession(long, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
			if err != nil {
				p.cmd.Process.Kill()
				p.cmd.Wait()
				t.Fatalf("session/new: %v; stderr: %s", err, p.stderr)
			}
			if a.mode != "" {
				if _, err := p.cs.SetSessionMode(ctx(t), sdk.SetSessionModeRequest{SessionId: s.SessionId, ModeId: sdk.SessionModeId(a.mode)}); err != nil {
					t.Fatal(err)
				}
			}
			marker := strconv.Itoa(6000000 + os.Getpid()%1000000) // a sleep no one else runs
			go p.cs.Prompt(context.Background(), sdk.PromptRequest{SessionId: s.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("run: sleep " + marker)}})
			running := func() []int { return pidsOf(processesStarting("sleep\x00" + marker)) }
			t.Cleanup(func() {
				for _, pid := range running() { // don't leave them to the next test
					testproc.Kill(pid)
				}
			})
			waitFor(t, "the command to start", func() bool { return len(running()) > 0 })
			p.cmd.Process.Signal(syscall.SIGKILL)
			p.cmd.Wait()
			killed := time.Now()
			waitFor(t, "the command to end with the bridge", func() bool { return len(running()) == 0 })
			t.Logf("the command ended %v after the bridge's SIGKILL", time.Since(killed))
		})
	}
}

// pidsOf are the pids of processesStarting's lines.
func pidsOf(lines []string) []int {
	var pids []int
	for _, l := range lines {
		if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// waitFor waits until cond holds, for at most a minute (a hang).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
	}
}
