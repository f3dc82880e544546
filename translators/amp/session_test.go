package amp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/coder/acp-go-sdk"
)

// rig is a backend on the fake amp, with a home of its own.
type rig struct {
	t    *testing.T
	b    *Backend
	home string
	args string // where the fake writes each command line
	env  []string
}

// newRig makes a backend on the fake amp; env adds to (and overrides) the
// fake's environment. It has an AMP_API_KEY unless env empties it.
func newRig(t *testing.T, env ...string) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, home: filepath.Join(dir, "home"), args: filepath.Join(dir, "args")}
	os.MkdirAll(r.home, 0o700)
	base := []string{"FAKE_AMP=1", "FAKE_AMP_ARGS=" + r.args, nativetest.RaceEnv(t, dir, "the fake amp"),
		"HOME=" + r.home, "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "AMP_SETTINGS_FILE=", "AMP_API_KEY=test-key"}
	r.env = append(base, env...)
	r.b = r.backend()
	return r
}

// backend is another backend on the same fake amp and home, as a
// restarted bridge would have.
func (r *rig) backend() *Backend {
	b := New(Options{CLIOptions: CLIOptions{Path: nativetest.TestBinary(), Env: r.env},
		Delegate: []string{nativetest.TestBinary(), DelegateCommand}})
	r.t.Cleanup(func() { b.Close() })
	return b
}

func (r *rig) open(ev agent.Events, opts agent.OpenOptions) agent.Native {
	return nativetest.OpenSession(r.t, r.b, opts, ev)
}

// runs is every command line the fake was started with.
func (r *rig) runs() []string {
	data, _ := os.ReadFile(r.args)
	return strings.Split(strings.TrimSpace(string(data)), "\n")
}

// turnRuns are the command lines of turns (not of listing the rules).
func (r *rig) turnRuns() []string {
	var out []string
	for _, run := range r.runs() {
		if strings.Contains(run, "--execute") {
			out = append(out, run)
		}
	}
	return out
}

func TestFake_textTurnsContinueTheThread(t *testing.T) {
	r := newRig(t)
	ev := nativetest.NewRecorder("")
	s := r.open(ev, agent.OpenOptions{})
	if id := s.NativeID(); id != "" {
		t.Errorf("NativeID before the first turn = %q; amp makes the thread then", id)
	}
	res := nativetest.MustPrompt(t, s, "hello there", nil)
	if res.Usage == nil || res.Usage.InputTokens != 10 || res.Usage.TotalTokens != 115 {
		t.Errorf("usage = %+v", res.Usage)
	}
	if s.NativeID() != "T-fake-1" {
		t.Errorf("NativeID = %q, want the thread amp made", s.NativeID())
	}
	nativetest.MustPrompt(t, s, "again", nil)
	conv := ev.Conversation()
	for _, want := range []string{"thinking about hello", "echo: hello there (thread T-fake-1", "echo: again (thread T-fake-1"} {
		if !strings.Contains(conv, want) {
			t.Errorf("conversation lacks %q:\n%s", want, conv)
		}
	}
	runs := r.turnRuns()
	if len(runs) != 2 || strings.Contains(runs[0], "threads continue") || !strings.HasPrefix(runs[1], "threads continue T-fake-1 ") {
		t.Errorf("command lines:\n%s", strings.Join(runs, "\n"))
	}
	for _, flag := range []string{"--stream-json-thinking", "--no-archive-after-execute", "--settings-file"} {
		if !strings.Contains(runs[0], flag) {
			t.Errorf("first turn's command line lacks %s: %s", flag, runs[0])
		}
	}
}

func TestFake_resumedSessionContinuesItsThread(t *testing.T) {
	r := newRig(t)
	s := r.open(nativetest.NewRecorder(""), agent.OpenOptions{NativeID: "T-earlier", Config: map[string]string{agent.ConfigModel: "high"}})
	nativetest.MustPrompt(t, s, "hello", nil)
	if runs := r.turnRuns(); !strings.HasPrefix(runs[0], "threads continue T-earlier ") || !strings.Contains(runs[0], "--mode high") {
		t.Errorf("command line: %s", runs[0])
	}
}

func TestOpen_withoutCredentialsIsAuthRequiredAndStartsNothing(t *testing.T) {
	r := newRig(t, "AMP_API_KEY=")
	_, err := r.b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir()}, nativetest.NewRecorder(""))
	if !errors.Is(err, agent.ErrAuthRequired) || !strings.Contains(err.Error(), "amp login") {
		t.Fatalf("Open = %v, want auth required saying how to log in", err)
	}
	if _, err := os.Stat(r.args); err == nil {
		t.Errorf("amp was started: %v", r.runs())
	}
}

func TestOpen_storedLoginIsEnough(t *testing.T) {
	r := newRig(t, "AMP_API_KEY=")
	secrets := filepath.Join(r.home, ".local", "share", "amp", "secrets.json")
	os.MkdirAll(filepath.Dir(secrets), 0o700)
	os.WriteFile(secrets, []byte(`{"apiKey@https://ampcode.com/":"sgamp_user_x"}`), 0o600)
	nativetest.MustPrompt(t, r.open(nativetest.NewRecorder(""), agent.OpenOptions{}), "hello", nil)
}

func TestFake_loginPromptIsAuthRequired(t *testing.T) {
	r := newRig(t)
	s := r.open(nativetest.NewRecorder(""), agent.OpenOptions{})
	_, err := nativetest.RunPrompt(t, s, "login", nil)
	if !errors.Is(err, agent.ErrAuthRequired) {
		t.Fatalf("err = %v, want auth required", err)
	}
	// The login prompt ended the turn at once, not amp's exit: the fake,
	// which would sit at its prompt for a minute, was killed.
	if err := exitOf(t, s); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("amp's exit: %v; want it killed at the login prompt", err)
	}
}

// exitOf waits for the session's last amp to exit and returns its exit
// status.
func exitOf(t *testing.T, n agent.Native) error {
	t.Helper()
	p := lastAmp(t, n)
	select {
	case <-p.Done():
	case <-time.After(nativetest.WaitGuard):
		t.Fatalf("amp (pid %d) is still running", p.Pid())
	}
	return p.ExitStatus()
}

// lastAmp is the session's last amp process.
func lastAmp(t *testing.T, n agent.Native) *proc.Process {
	t.Helper()
	s := n.(*session)
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	if p == nil {
		t.Fatal("no amp ran")
	}
	return p
}

func TestFake_failures(t *testing.T) {
	for prompt, want := range map[string]string{
		"crash":        "boom: the fake crashed",
		"approval":     "require user approval",
		"unauthorized": "authentication required: Unauthorized: invalid API key",
		"offline":      "can't reach Amp's servers",
	} {
		t.Run(prompt, func(t *testing.T) {
			r := newRig(t)
			ev := nativetest.NewRecorder("")
			s := r.open(ev, agent.OpenOptions{})
			_, err := nativetest.RunPrompt(t, s, prompt, nil)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want %q", err, want)
			}
			// The session goes on: the next turn starts a new amp.
			nativetest.MustPrompt(t, s, "hello", nil)
		})
	}
}

// An amp that prints nothing is given up after Options.FirstOutputLimit.
// The fake prints nothing for a minute, so any limit well below that ends
// the turn the same way, however loaded the machine: the limit is short
// here only so the test does not wait a minute, and only this backend has
// it (a fake amp on a loaded machine can take longer than that to print
// its first line).
func TestFake_silentAmpIsGivenUp(t *testing.T) {
	r := newRig(t)
	b := New(Options{CLIOptions: CLIOptions{Path: nativetest.TestBinary(), Env: r.env},
		Delegate: []string{nativetest.TestBinary(), DelegateCommand}, FirstOutputLimit: time.Second})
	t.Cleanup(func() { b.Close() })
	s := nativetest.OpenSession(t, b, agent.OpenOptions{}, nativetest.NewRecorder(""))
	_, err := nativetest.RunPrompt(t, s, "silent", nil)
	if err == nil || !strings.Contains(err.Error(), "without a result") {
		t.Fatalf("err = %v, want the turn given up without a result", err)
	}
}

func TestFake_garbageIsSkipped(t *testing.T) {
	r := newRig(t)
	ev := nativetest.NewRecorder("")
	nativetest.MustPrompt(t, r.open(ev, agent.OpenOptions{}), "garbage in", nil)
	if !strings.Contains(ev.Conversation(), "echo: garbage in") {
		t.Errorf("conversation:\n%s", ev.Conversation())
	}
}

func TestFake_cancelInterruptsAmp(t *testing.T) {
	r := newRig(t)
	ev := nativetest.NewRecorder("")
	s := r.open(ev, agent.OpenOptions{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan agent.TurnResult, 1)
	go func() {
		res, _ := s.Prompt(ctx, nativetest.TextTurn("sleep", nil))
		done <- res
	}()
	nativetest.Poll(t, "the turn to start", func() bool { return s.NativeID() != "" })
	cancel()
	select {
	case res := <-done:
		if res.StopReason != acp.StopReasonCancelled {
			t.Errorf("stop reason %q", res.StopReason)
		}
	case <-time.After(nativetest.WaitGuard):
		t.Fatal("the cancelled turn did not end")
	}
}

func TestFake_permissionAsksTheEditor(t *testing.T) {
	for _, tc := range []struct {
		choice, cmd string
		asks        int
		status      acp.ToolCallStatus
		output      string
	}{
		{"allow_once", "rm -rf /tmp/x", 1, acp.ToolCallStatusCompleted, "ran rm -rf /tmp/x"},
		{"reject_once", "rm -rf /tmp/x", 1, acp.ToolCallStatusFailed, "The user rejected this tool call."},
		{"", "rm -rf /tmp/x", 1, "", ""},                                       // the turn ends cancelled
		{"allow_once", "ls -la", 0, acp.ToolCallStatusCompleted, "ran ls -la"}, // Amp's rules allow it
	} {
		t.Run(tc.choice+" "+tc.cmd, func(t *testing.T) {
			r := newRig(t)
			ev := nativetest.NewRecorder(tc.choice)
			s := r.open(ev, agent.OpenOptions{})
			res, err := nativetest.RunPrompt(t, s, "bash "+tc.cmd, nil)
			if want := map[bool]acp.StopReason{true: acp.StopReasonCancelled, false: acp.StopReasonEndTurn}[tc.choice == ""]; err != nil || res.StopReason != want {
				t.Errorf("turn ended %+v, %v; want %s", res, err, want)
			}
			us, asks, _ := ev.Snapshot()
			if len(asks) != tc.asks {
				t.Fatalf("%d asks, want %d", len(asks), tc.asks)
			}
			if tc.asks > 0 {
				a := asks[0]
				if a.Call.Title == nil || *a.Call.Title != tc.cmd || a.Call.Kind == nil || *a.Call.Kind != acp.ToolKindExecute || a.Call.RawInput == nil {
					t.Errorf("ask about %+v", a.Call)
				}
			}
			if tc.choice == "" {
				return // amp was interrupted; the bridge fails the call it left open
			}
			last := lastToolUpdate(us, "toolu_bash")
			if last == nil || last.Status == nil || *last.Status != tc.status || !strings.Contains(contentText(last.Content), tc.output) {
				t.Errorf("tool call ended %+v, want %s with %q\n%s", last, tc.status, tc.output, ev.Conversation())
			}
		})
	}
}

func TestFake_allowAlwaysAsksOnce(t *testing.T) {
	r := newRig(t)
	ev := nativetest.NewRecorder("allow_always")
	s := r.open(ev, agent.OpenOptions{})
	nativetest.MustPrompt(t, s, "bash make install", nil)
	nativetest.MustPrompt(t, s, "bash make install", nil)
	nativetest.MustPrompt(t, s, "bash make clean", nil)
	if _, asks, _ := ev.Snapshot(); len(asks) != 2 {
		t.Errorf("%d asks, want one per command", len(asks))
	}
}

func TestFake_unansweredAskIsRejectedInTime(t *testing.T) {
	defer func(d time.Duration) { AskLimit = d }(AskLimit)
	AskLimit = 300 * time.Millisecond
	r := newRig(t)
	ev := nativetest.NewRecorder("wait")
	s := r.open(ev, agent.OpenOptions{})
	nativetest.MustPrompt(t, s, "bash rm -rf /tmp/x", nil)
	us, _, _ := ev.Snapshot()
	last := lastToolUpdate(us, "toolu_bash")
	if last == nil || !strings.Contains(contentText(last.Content), "did not answer within") {
		t.Errorf("tool call ended %+v\n%s", last, ev.Conversation())
	}
}

func TestFake_bypassAllowsEverything(t *testing.T) {
	r := newRig(t)
	ev := nativetest.NewRecorder("reject_once")
	s := r.open(ev, agent.OpenOptions{})
	if err := s.SetConfig(context.Background(), agent.ConfigMode, modeBypass); err != nil {
		t.Fatal(err)
	}
	nativetest.MustPrompt(t, s, "bash rm -rf /tmp/x", nil)
	if _, asks, _ := ev.Snapshot(); len(asks) != 0 {
		t.Errorf("bypass asked %d times", len(asks))
	}
	if run := r.turnRuns()[0]; !strings.Contains(run, "--dangerously-allow-all") || strings.Contains(run, "--settings-file") {
		t.Errorf("command line: %s", run)
	}
}

func TestFake_settingsCarryTheUsersOver(t *testing.T) {
	r := newRig(t)
	user := filepath.Join(r.home, ".config", "amp", "settings.json")
	os.MkdirAll(filepath.Dir(user), 0o700)
	os.WriteFile(user, []byte(`{"amp.notifications.enabled":false,"amp.permissions":[{"tool":"Bash","action":"ask","matches":{"cmd":"make *"}}]}`), 0o600)
	ev := nativetest.NewRecorder("allow_once")
	s := r.open(ev, agent.OpenOptions{})
	nativetest.MustPrompt(t, s, "bash make all", nil)
	run := r.turnRuns()[0]
	_, file, _ := strings.Cut(run, "--settings-file ")
	file, _, _ = strings.Cut(file, " ")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	json.Unmarshal(data, &got)
	var rules []rule
	json.Unmarshal(got["amp.permissions"], &rules)
	var first bytes.Buffer
	if len(rules) > 0 {
		json.Compact(&first, rules[0].Matches)
	}
	if string(got["amp.notifications.enabled"]) != "false" || len(rules) != 4 || rules[0].Action != "delegate" ||
		first.String() != `{"cmd":"make *"}` || rules[2].Action != "delegate" || rules[1].Action != "allow" {
		t.Errorf("settings:\n%s", data)
	}
	if fi, err := os.Stat(filepath.Dir(file)); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the hook's directory: %v %v", fi.Mode(), err)
	}
	s.Close()
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the session's hook outlived it: %v", err)
	}
}

func TestFake_imagesAndMCP(t *testing.T) {
	png := base64.StdEncoding.EncodeToString([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	img := acp.ImageBlock(png, "image/png")
	r := newRig(t)
	ev := nativetest.NewRecorder("")
	s := r.open(ev, agent.OpenOptions{MCPServers: []acp.McpServer{{Stdio: &acp.McpServerStdio{Name: "docs", Command: "/bin/docs", Args: []string{"-v"}, Env: []acp.EnvVariable{}}}}})
	ctx := context.Background()
	if _, err := s.Prompt(ctx, agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("look"), img, img}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.Conversation(), "2 images") {
		t.Errorf("conversation:\n%s", ev.Conversation())
	}
	if run := r.turnRuns()[0]; !strings.Contains(run, `--mcp-config {"docs":{"args":["-v"],"command":"/bin/docs","env":{}}}`) {
		t.Errorf("command line: %s", run)
	}
	for name, prompt := range map[string][]acp.ContentBlock{
		"five images":          {img, img, img, img, img},
		"a jpeg that is a png": {acp.ImageBlock(png, "image/jpeg")},
	} {
		if _, err := s.Prompt(ctx, agent.Turn{Prompt: prompt}); !errors.Is(err, agent.ErrInvalidParams) {
			t.Errorf("%s: err = %v, want invalid params", name, err)
		}
	}
}

func TestDelegate_refusesAStranger(t *testing.T) {
	r := newRig(t)
	s := r.open(nativetest.NewRecorder("allow_once"), agent.OpenOptions{})
	nativetest.MustPrompt(t, s, "hello", nil) // starts the hooks
	h, _ := r.b.hooks.Peek()
	sess := s.(*session)
	t.Setenv(envSocket, h.ln.Addr().String())
	for _, tok := range []string{sess.token.id + ".wrong", "nobody.at-all", sess.token.id} {
		t.Setenv(envToken, tok)
		ans, err := delegate(strings.NewReader(`{"cmd":"rm -rf /"}`))
		if err != nil || ans.Allow {
			t.Errorf("token %q: %+v, %v; want refused", tok, ans, err)
		}
	}
}

func lastToolUpdate(us []acp.SessionUpdate, id string) *acp.SessionToolCallUpdate {
	var last *acp.SessionToolCallUpdate
	for _, u := range us {
		if u.ToolCallUpdate != nil && string(u.ToolCallUpdate.ToolCallId) == id {
			last = u.ToolCallUpdate
		}
	}
	return last
}

func contentText(cs []acp.ToolCallContent) string {
	var b strings.Builder
	for _, c := range cs {
		if c.Content != nil && c.Content.Content.Text != nil {
			b.WriteString(c.Content.Content.Text.Text)
		}
	}
	return b.String()
}
