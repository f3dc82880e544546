//go:build linux

package cmd

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/acpbridge/acpbridge/internal/testkit/daemontest"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
	"github.com/coder/acp-go-sdk"
	"github.com/coder/websocket"
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
			env := a.env(t) // its directories removed after the daemons stop (cleanups run last first)
			root := daemontest.ShortDir(t)
			t.Cleanup(func() { daemon.StopAll(root) })
			env = append(env, daemon.RootEnv+"="+root)
			cwd := t.TempDir() // the session's too: the spare warmed at initialize is of its kind
			p := startProcIn(t, cwd, env, "--agent", a.name, "--state-dir", t.TempDir(), "--log-level", "debug")
			if _, err := p.cs.Initialize(ctx(t), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
				t.Fatal(err)
			}
			long, cancel := context.WithTimeout(context.Background(), time.Minute) // a first opencode serve's start, on a loaded machine
			defer cancel()
			s, err := p.cs.NewSession(long, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
			if err != nil {
				p.cmd.Process.Kill()
				p.cmd.Wait()
				t.Fatalf("session/new: %v; stderr: %s", err, p.stderr)
			}
			if a.mode != "" {
				if _, err := p.cs.SetSessionMode(ctx(t), acp.SetSessionModeRequest{SessionId: s.SessionId, ModeId: acp.SessionModeId(a.mode)}); err != nil {
					t.Fatal(err)
				}
			}
			marker := strconv.Itoa(6000000 + os.Getpid()%1000000) // a sleep no one else runs
			go p.cs.Prompt(context.Background(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("run: sleep " + marker)}})
			running := func() []int { return pidsOf(processesStarting("sleep\x00" + marker)) }
			t.Cleanup(func() {
				for _, pid := range running() { // don't leave them to the next test
					testproc.Kill(pid)
				}
			})
			waitFor(t, "the command to start", func() bool { return len(running()) > 0 })
			if a.name != "claude" {
				// The will is left once the server has answered the turn's
				// start; a bridge killed before that, while the agent already
				// runs the command (milliseconds, but seconds under load),
				// leaves the turn running (README: Guarantees).
				waitFor(t, "the turn's will to be left with the keeper", func() bool { return strings.Contains(p.stderr.String(), "left the keeper the turn's will") },
					func() string { return "the bridge's log:\n" + p.stderr.String() })
			}
			peers := pipePeers(p.cmd.Process.Pid) // claude's lent process; none on codex's and opencode's sockets
			p.cmd.Process.Signal(syscall.SIGKILL)
			p.cmd.Wait()
			killed := time.Now()
			waitFor(t, "the command to end with the bridge", func() bool { return len(running()) == 0 })
			t.Logf("the command ended %v after the bridge's SIGKILL", time.Since(killed))
			// The agent process goes too, and before the test's directories
			// do: a claude still exiting wrote in its HOME once it was
			// removed, and the run found the test's directory left behind.
			waitFor(t, "the bridge's agent processes to end", func() bool { return len(alive(peers)) == 0 }, func() string { return fmt.Sprint("still running: ", alive(peers)) })
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
func waitFor(t *testing.T, what string, cond func() bool, why ...func() string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			for _, w := range why {
				t.Log(w())
			}
			t.Fatalf("waited a minute for %s", what)
		}
	}
}

// A bridge SIGKILLed before its session's first prompt, or while its
// turn waits on a permission ask, leaves no process of its session
// running (claude's lent process; on codex's shared server, no turn in
// progress either), with the default flags.
func TestRun_sigkillBeforePromptOrDuringAskLeavesNothing(t *testing.T) {
	asking := map[string]string{"claude": "default", "codex": "ask", "opencode": ""} // modes that ask before a command
	// Commands that ask in them: claude runs a lone sleep without asking.
	command := map[string]string{"claude": "touch asked.txt && sleep ", "codex": "sleep ", "opencode": "sleep "}
	for _, a := range sharedAgents {
		for _, during := range []string{"before-prompt", "ask"} {
			t.Run(a.name+"/"+during, func(t *testing.T) {
				env := a.env(t) // its directories removed after the daemons stop (cleanups run last first)
				root := daemontest.ShortDir(t)
				t.Cleanup(func() { daemon.StopAll(root) })
				env = append(env, daemon.RootEnv+"="+root)
				cwd := t.TempDir()
				p := startProcIn(t, cwd, env, "--agent", a.name, "--state-dir", t.TempDir(), "--log-level", "debug")
				p.client.hold = true
				if _, err := p.cs.Initialize(ctx(t), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
					t.Fatal(err)
				}
				long, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				s, err := p.cs.NewSession(long, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
				if err != nil {
					t.Fatalf("session/new: %v; stderr: %s", err, p.stderr)
				}
				if during == "ask" {
					askOn(t, p, s.SessionId, asking[a.name], command[a.name])
				}
				peers := pipePeers(p.cmd.Process.Pid)
				for _, pid := range peers {
					cmd, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
					t.Logf("the bridge's agent process %d: %s", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte(" ")))
				}
				p.cmd.Process.Signal(syscall.SIGKILL)
				p.cmd.Wait()
				killed := time.Now()
				t.Cleanup(func() {
					for _, pid := range peers { // don't leave them to the next test
						testproc.Kill(pid)
					}
				})
				waitFor(t, "the bridge's agent processes to end", func() bool { return len(alive(peers)) == 0 }, func() string { return fmt.Sprint("still running: ", alive(peers)) })
				if a.name == "codex" && during == "ask" {
					waitFor(t, "codex's turn to end", func() bool { return !codexTurnRuns(t, root) })
				}
				t.Logf("nothing of the session ran %v after the bridge's SIGKILL", time.Since(killed))
			})
		}
	}
}

// askOn sets mode (if any) and sends a prompt that runs command with a
// number after it, which asks for permission in that mode, and waits
// until it asks.
func askOn(t *testing.T, p *bridgeProc, id acp.SessionId, mode, command string) {
	t.Helper()
	if mode != "" {
		if _, err := p.cs.SetSessionMode(ctx(t), acp.SetSessionModeRequest{SessionId: id, ModeId: acp.SessionModeId(mode)}); err != nil {
			t.Fatal(err)
		}
	}
	marker := strconv.Itoa(7000000 + os.Getpid()%1000000)
	go p.cs.Prompt(context.Background(), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock("run: " + command + marker)}})
	waitFor(t, "the permission ask", func() bool { return p.client.asked() > 0 }, func() string { return "the bridge's log:\n" + p.stderr.String() })
}

// pipePeers are the other processes that hold an end of a pipe pid holds
// and the test does not (its pipes to the bridge, and those the test
// inherited): the agent processes a bridge talks to.
func pipePeers(pid int) []int {
	pipes := pipesOf(pid)
	for p := range pipesOf(os.Getpid()) {
		delete(pipes, p)
	}
	var peers []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		other, err := strconv.Atoi(e.Name())
		if err != nil || other == pid || other == os.Getpid() {
			continue
		}
		for p := range pipesOf(other) {
			if pipes[p] {
				peers = append(peers, other)
				break
			}
		}
	}
	return peers
}

// pipesOf are the pipes pid holds open, as "pipe:[INODE]".
func pipesOf(pid int) map[string]bool {
	dir := "/proc/" + strconv.Itoa(pid) + "/fd"
	ents, _ := os.ReadDir(dir)
	pipes := map[string]bool{}
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && strings.HasPrefix(l, "pipe:") {
			pipes[l] = true
		}
	}
	return pipes
}

// alive are those of pids that still run (zombies aside).
func alive(pids []int) []int {
	var out []int
	for _, pid := range pids {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); err == nil && i > 0 && len(stat) > i+2 && stat[i+2] != 'Z' {
			out = append(out, pid)
		}
	}
	return out
}

// codexTurnRuns reports whether a thread on the shared app-server under
// root has a turn in progress.
func codexTurnRuns(t *testing.T, root string) bool {
	t.Helper()
	socks, _ := filepath.Glob(filepath.Join(root, "*", "sock"))
	if len(socks) != 1 {
		t.Fatalf("app-server sockets under %s: %v", root, socks)
	}
	c, err := dialCodex(ctx(t), socks[0])
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var loaded struct {
		Data []string `json:"data"`
	}
	c.call(t, "initialize", map[string]any{"clientInfo": map[string]any{"name": "test", "version": "0"}}, nil)
	c.call(t, "thread/loaded/list", map[string]any{}, &loaded)
	for _, id := range loaded.Data {
		var read struct {
			Thread struct {
				Status struct {
					Type string `json:"type"`
				} `json:"status"`
				Turns []struct {
					Status string `json:"status"`
				} `json:"turns"`
			} `json:"thread"`
		}
		// A thread not yet written down (no turn recorded) can't list its
		// turns ("list_turns is not supported yet"): its status says.
		if e := c.try(t, "thread/read", map[string]any{"threadId": id, "includeTurns": true}, &read); e != nil {
			t.Logf("thread/read %s with its turns: %s", id, e)
			c.call(t, "thread/read", map[string]any{"threadId": id}, &read)
		}
		t.Logf("thread %s: %+v", id, read.Thread)
		if read.Thread.Status.Type == "active" {
			return true
		}
		for _, turn := range read.Thread.Turns {
			if turn.Status == "inProgress" {
				return true
			}
		}
	}
	return false
}

// codexConn is a JSON-RPC connection to an app-server's Unix socket.
type codexConn struct {
	*websocket.Conn
	id int
}

func dialCodex(ctx context.Context, sock string) (*codexConn, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	c, _, err := websocket.Dial(ctx, "ws://codex/", &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		return nil, fmt.Errorf("dialing the app-server at %s: %w", sock, err)
	}
	c.SetReadLimit(-1)
	return &codexConn{Conn: c}, nil
}

// call sends a request and reads into res (if not nil) its answer's
// result, passing the notifications by; an error answer fails the test.
func (c *codexConn) call(t *testing.T, method string, params, res any) {
	t.Helper()
	if e := c.try(t, method, params, res); e != nil {
		t.Fatalf("%s: %s", method, e)
	}
}

// try is call, but returns an error answer.
func (c *codexConn) try(t *testing.T, method string, params, res any) json.RawMessage {
	t.Helper()
	c.id++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params})
	if err := c.Write(ctx(t), websocket.MessageText, b); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		_, msg, err := c.Read(ctx(t))
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		var m struct {
			ID     *int            `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(msg, &m) != nil || m.ID == nil || *m.ID != c.id {
			continue
		}
		if m.Error != nil {
			return m.Error
		}
		if res != nil {
			if err := json.Unmarshal(m.Result, res); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
		}
		return nil
	}
}
