package cmd

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/daemontest"
	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// TestMain lets the test binary stand in for acpbridge itself, so that
// tests can run, kill and restart real bridge processes, and keep the
// daemons its tests start.
func TestMain(m *testing.M) {
	daemontest.KeepFromHere()
	if os.Getenv("ACPBRIDGE_TEST_AS_BRIDGE") == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// testVersion is the version of acpbridge under test.
const testVersion = "0.1.0-test"

// run is acpbridge, in this process.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return Main(testVersion, args, stdin, stdout, stderr)
}

// bridgeProc is a bridge process with an SDK client on its pipes.
type bridgeProc struct {
	cmd    *exec.Cmd
	cs     *acp.ClientSideConnection
	client *recorder
	stderr *syncbuf.Buffer // written by the process's copier while it runs
	stdin  io.WriteCloser
	stdout io.ReadCloser
}

func startProc(t *testing.T, args ...string) *bridgeProc {
	t.Helper()
	return startProcIn(t, "", nil, args...)
}

// startProcIn is startProc in directory dir ("" for the test's), with env
// added to the bridge's environment.
func startProcIn(t *testing.T, dir string, env []string, args ...string) *bridgeProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "ACPBRIDGE_TEST_AS_BRIDGE=1", "GORACE=atexit_sleep_ms=0")
	p := &bridgeProc{cmd: cmd, client: &recorder{}, stderr: &syncbuf.Buffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.stdout = stdout
	p.cs = acp.NewClientSideConnection(p.client, p.stdin, stdout)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return p
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

// recorder is an ACP client that allows every permission ask, or with
// hold never answers one.
type recorder struct {
	acp.Client
	hold    bool
	mu      sync.Mutex
	updates []acp.SessionUpdate
	asks    int // permission asks so far
}

// asked is how many permission asks have come.
func (r *recorder) asked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asks
}

func (r *recorder) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.updates = append(r.updates, n.Update)
	return nil
}

func (r *recorder) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	r.mu.Lock()
	r.asks++
	r.mu.Unlock()
	if r.hold {
		<-ctx.Done()
		return acp.RequestPermissionResponse{}, ctx.Err()
	}
	for _, o := range req.Options { // a real agent's own option ids
		if o.Kind == acp.PermissionOptionKindAllowOnce {
			return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(o.OptionId)}, nil
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected("allow")}, nil
}

func (r *recorder) take() []acp.SessionUpdate {
	r.mu.Lock()
	defer r.mu.Unlock()
	us := r.updates
	r.updates = nil
	return us
}

// TestBridge_sessionSurvivesKill creates a session in one bridge process,
// kills it with SIGKILL, and loads the session in a new process.
func TestBridge_sessionSurvivesKill(t *testing.T) {
	state := t.TempDir()
	p := startProc(t, "--agent", "mock", "--state-dir", state)
	c := ctx(t)
	if _, err := p.cs.Initialize(c, acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := p.cs.NewSession(c, acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	live := []acp.SessionUpdate{acp.UpdateUserMessageText("demo")}
	if _, err := p.cs.Prompt(c, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("demo")}}); err != nil {
		t.Fatal(err)
	}
	live = append(live, p.client.take()...)
	p2 := killAndLoad(t, p, state, s.SessionId)
	want, got := acptest.Conversation(live), acptest.Conversation(p2.client.take())
	if got != want || !strings.Contains(got, "You said: demo") {
		t.Errorf("replay after SIGKILL:\n%s\nwant (live):\n%s", got, want)
	}
	list, err := p2.cs.ListSessions(c, acp.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 1 || list.Sessions[0].Title == nil || *list.Sessions[0].Title != "demo" {
		t.Errorf("list after restart: %+v, %v", list, err)
	}
}

// killAndLoad SIGKILLs the bridge p, starts another on the mock with the
// same state directory and loads session id in it.
func killAndLoad(t *testing.T, p *bridgeProc, state string, id acp.SessionId) *bridgeProc {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	p2 := startProc(t, "--agent", "mock", "--state-dir", state)
	c := ctx(t)
	if _, err := p2.cs.Initialize(c, acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := p2.cs.LoadSession(c, acp.LoadSessionRequest{SessionId: id, Cwd: "/work", McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("load after kill: %v\nstderr: %s", err, p2.stderr)
	}
	return p2
}

// TestBridge_turnKilledMidwayIsKept kills the bridge while a turn waits
// on a permission ask, once the turn's checkpoint is on disk: a new bridge
// replays what the turn had streamed, the unfinished tool call failed.
func TestBridge_turnKilledMidwayIsKept(t *testing.T) {
	state := t.TempDir()
	p := startProc(t, "--agent", "mock", "--state-dir", state)
	p.client.hold = true
	c := ctx(t)
	if _, err := p.cs.Initialize(c, acp.InitializeRequest{ProtocolVersion: 1}); err != nil {
		t.Fatal(err)
	}
	s, err := p.cs.NewSession(c, acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	go p.cs.Prompt(c, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("think plan read edit")}})
	file := filepath.Join(state, "sessions", string(s.SessionId)+".jsonl")
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if b, _ := os.ReadFile(file); bytes.Contains(b, []byte(`"draft":`)) {
			break
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(file)
			t.Fatalf("no checkpoint in %s:\n%s\nstderr: %s", file, b, p.stderr)
		}
	}
	p2 := killAndLoad(t, p, state, s.SessionId)
	var kinds []string
	for _, u := range p2.client.take() {
		switch {
		case u.ToolCall != nil:
			kinds = append(kinds, fmt.Sprintf("tool_call:%s:%s", u.ToolCall.Kind, u.ToolCall.Status))
		case u.Plan != nil:
			kinds = append(kinds, "plan")
		case u.UserMessageChunk != nil:
			kinds = append(kinds, "user")
		case u.AgentThoughtChunk != nil:
			kinds = append(kinds, "thought")
		}
	}
	want := "user thought plan tool_call:read:completed tool_call:edit:failed"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("replay of a turn killed midway: %s, want %s", got, want)
	}
}

func TestRun_flags(t *testing.T) {
	t.Setenv("ACPBRIDGE_AMP", filepath.Join(t.TempDir(), "no-amp-here"))
	for _, tc := range []struct {
		args []string
		code int
		out  string // in stdout or stderr
	}{
		{[]string{"--version"}, 0, "acpbridge " + testVersion},
		{[]string{"--help"}, 0, "--persist"},
		{[]string{"--agent", "amp"}, 1, "--agent amp: agent unavailable"},
		{[]string{"amp-delegate"}, 2, "this command is run by Amp"},
		{[]string{"--agent", "emacs"}, 1, `unknown agent; choose one of claude, codex, opencode, amp, mock`},
		{[]string{"--persist", "sometimes"}, 1, "want auto, always or never"},
		{[]string{"--log-level", "loud"}, 1, "--log-level"},
		{[]string{"--bogus"}, 2, "unknown flag"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.out) {
			t.Errorf("run %q = %d, stdout %q, stderr %q; want %d and %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.out)
		}
	}
}

func TestRun_persistNeverWritesNothing(t *testing.T) {
	state := t.TempDir()
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}`,
	}, "\n") + "\n"
	var stdout, stderr bytes.Buffer
	if code := run([]string{"--persist", "never", "--state-dir", state}, strings.NewReader(in), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), `"sessionId"`) {
		t.Errorf("no session/new answer in %q", stdout.String())
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("--persist never wrote %v", ents)
	}
}

func TestStateDir_resolution(t *testing.T) {
	t.Setenv("ACPBRIDGE_STATE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "/xdg")
	if d, _ := stateDir(""); d != "/xdg/acpbridge" {
		t.Errorf("with XDG_STATE_HOME: %s", d)
	}
	t.Setenv("ACPBRIDGE_STATE_DIR", "/env")
	if d, _ := stateDir(""); d != "/env" {
		t.Errorf("with ACPBRIDGE_STATE_DIR: %s", d)
	}
	if d, _ := stateDir("/flag"); d != "/flag" {
		t.Errorf("with --state-dir: %s", d)
	}
	t.Setenv("ACPBRIDGE_STATE_DIR", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "/home/u")
	if d, _ := stateDir(""); d != filepath.Join("/home/u", ".local/state/acpbridge") {
		t.Errorf("default: %s", d)
	}
}

// A client that closes the bridge's stdout (an editor that went away)
// doesn't kill it with SIGPIPE: it shuts down, transcripts synced.
func TestRun_closedStdoutIsNoSIGPIPE(t *testing.T) {
	state := t.TempDir()
	p := startProc(t, "--state-dir", state)
	if _, err := p.cs.Initialize(ctx(t), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	s, err := p.cs.NewSession(ctx(t), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	p.stdout.Close()
	fmt.Fprintf(p.stdin, `{"jsonrpc":"2.0","id":99,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"said before the editor left"}]}}`+"\n", s.SessionId)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("the bridge did not exit after its stdout closed")
	}
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("the bridge died of %v; stderr: %s", ws.Signal(), p.stderr)
	}
	st, err := persist.Open(state)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := st.Read(string(s.SessionId))
	if err != nil || !bytes.Contains(entriesJSON(tr.Entries), []byte("said before the editor left")) {
		t.Errorf("transcript after stdout closed: %v entries, %v", len(tr.Entries), err)
	}
}

func entriesJSON(es []persist.Entry) []byte {
	var b bytes.Buffer
	for _, e := range es {
		b.Write(e.Update)
	}
	return b.Bytes()
}

// After the bridge is SIGKILLed, nothing it started lives on: neither its
// agent nor a process the agent left in a session of its own (as claude's
// Bash tool does). Linux: the agents run under acpbridge's supervisor.
func TestRun_sigkillLeavesNothingBehind(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("SKIPPED: supervision is Linux-only")
	}
	marker := strconv.Itoa(4000000 + os.Getpid()%1000000) // a sleep no one else runs
	inner := t.TempDir()
	script := "(setsid sleep " + marker + " >/dev/null 2>&1 &); exec " + os.Args[0] + " --agent mock --state-dir " + inner
	p := startProc(t, "--agent", "acp", "--state-dir", t.TempDir(), "--", "sh", "-c", script)
	if _, err := p.cs.Initialize(ctx(t), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.cs.NewSession(ctx(t), acp.NewSessionRequest{Cwd: t.TempDir(), McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/new: %v; stderr: %s", err, p.stderr)
	}
	left := func() []string {
		return processesStarting("sleep\x00"+marker, os.Args[0]+"\x00--agent\x00mock\x00--state-dir\x00"+inner)
	}
	if len(left()) != 2 {
		t.Fatalf("before the kill: processes %v, want the sleep and the inner agent", left())
	}
	p.cmd.Process.Signal(syscall.SIGKILL)
	p.cmd.Wait()
	deadline := time.Now().Add(time.Minute)
	for len(left()) > 0 {
		if time.Now().After(deadline) {
			for _, pid := range left() { // don't leave them to the next test
				n, _ := strconv.Atoi(strings.Fields(pid)[0])
				testproc.Kill(n)
			}
			t.Fatalf("a minute after the bridge's SIGKILL these still run: %v", left())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// processesStarting lists the live processes whose command line starts
// with any of prefixes, as "pid cmdline".
func processesStarting(prefixes ...string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || len(cmd) == 0 {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue // a zombie is gone, waiting for its parent
		}
		for _, s := range prefixes {
			if strings.HasPrefix(string(cmd), s) {
				out = append(out, e.Name()+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
				break
			}
		}
	}
	return out
}

// BenchmarkImagePromptRSS is what a 9.9 MB image prompt costs a bridge
// process (on the mock, which ignores the image): its peak RSS above its
// RSS once idle, as a multiple of the message's size (Linux).
func BenchmarkImagePromptRSS(b *testing.B) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 9_900_000*3/4)...)
	data := base64.StdEncoding.EncodeToString(png)
	var worst float64
	for b.Loop() {
		p := startProc(&testing.T{}, "--state-dir", b.TempDir())
		if _, err := p.cs.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
			b.Fatal(err)
		}
		s, err := p.cs.NewSession(context.Background(), acp.NewSessionRequest{Cwd: b.TempDir(), McpServers: []acp.McpServer{}})
		if err != nil {
			b.Fatal(err)
		}
		idle := procStatus(b, p.cmd.Process.Pid, "VmRSS")
		if _, err := p.cs.Prompt(context.Background(), acp.PromptRequest{SessionId: s.SessionId,
			Prompt: []acp.ContentBlock{acp.TextBlock("look"), acp.ImageBlock(data, "image/png")}}); err != nil {
			b.Fatal(err)
		}
		peak := procStatus(b, p.cmd.Process.Pid, "VmHWM")
		worst = max(worst, float64(peak-idle)/float64(len(data)))
		p.stdin.Close()
		p.cmd.Wait()
	}
	b.ReportMetric(worst, "peak-RSS-over-idle/message")
}

// procStatus reads a size (in bytes) from /proc/PID/status.
func procStatus(b *testing.B, pid int, field string) int {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Skipf("SKIPPED: no /proc here: %v", err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}
