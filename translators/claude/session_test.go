package claude

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/coder/acp-go-sdk"
)

// openFake opens a session on the fake CLI; args receives its command line.
func openFake(t *testing.T, opts agent.OpenOptions, ev *nativetest.Recorder, env ...string) (agent.Native, string) {
	t.Helper()
	args := filepath.Join(t.TempDir(), "args")
	b := New(Options{Path: os.Args[0], Env: append([]string{"FAKE_CLAUDE=1", "FAKE_CLAUDE_ARGS=" + args, "GORACE=atexit_sleep_ms=0"}, env...)})
	if opts.Cwd == "" {
		opts.Cwd = t.TempDir()
	}
	n, err := b.Open(context.Background(), opts, ev)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, args
}

func prompt(t *testing.T, n agent.Native, text string) (agent.TurnResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return n.Prompt(ctx, agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

func TestSession_textTurn(t *testing.T) {
	ev := nativetest.NewRecorder("allow")
	n, _ := openFake(t, agent.OpenOptions{}, ev)
	res, err := prompt(t, n, "hello")
	if err != nil || res.StopReason != acp.StopReasonEndTurn || res.Usage == nil || res.Usage.InputTokens != 10 {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	got := ev.JSON()
	if strings.Count(got, "turn 1: hello") != 1 {
		t.Errorf("the answer should appear once (streamed, not repeated from the assistant line):\n%s", got)
	}
	if !strings.Contains(got, `"description":"Review code","input":{"hint":"[target]"},"name":"review"`) {
		t.Errorf("no slash commands from the initialize answer:\n%s", got)
	}
	if !strings.Contains(got, `"size":200000`) || !strings.Contains(got, `"cost":{"amount":0.01,"currency":"USD"}`) {
		t.Errorf("no usage_update with window and cost:\n%s", got)
	}
	if n.NativeID() != "fake-session-1" {
		t.Errorf("native id %q", n.NativeID())
	}
	o := option(n, agent.ConfigModel)
	if _, _, changed := ev.Snapshot(); len(o.Choices) != 2 || o.Choices[1].Value != "fake-fast" || changed == 0 {
		t.Errorf("models %+v after initialize (config changed %d times)", o, changed)
	}
}

func TestSession_permission(t *testing.T) {
	for option, want := range map[string]string{
		"allow":  `"status":"completed"`,
		"always": "hi (always)",
		"reject": `denied: The user rejected this tool call.`,
	} {
		t.Run(option, func(t *testing.T) {
			ev := nativetest.NewRecorder(option)
			n, _ := openFake(t, agent.OpenOptions{}, ev)
			if _, err := prompt(t, n, "bash please"); err != nil {
				t.Fatal(err)
			}
			got := ev.JSON()
			if _, asks, _ := ev.Snapshot(); len(asks) != 1 || !strings.Contains(got, want) || !strings.Contains(got, `"kind":"execute"`) {
				t.Errorf("%d asks; want %q in:\n%s", len(asks), want, got)
			}
		})
	}
}

func TestSession_cancelWhileAskingDeniesAndInterrupts(t *testing.T) {
	ev := nativetest.NewRecorder("")
	ev.Answer = func(ctx context.Context, _ acp.ToolCallUpdate, _ []acp.PermissionOption) (acp.RequestPermissionOutcome, error) {
		<-ctx.Done()
		return acp.NewRequestPermissionOutcomeCancelled(), nil
	}
	n, _ := openFake(t, agent.OpenOptions{}, ev)
	nativetest.CancelTurn(t, n, ev, "bash", "the ask", nativetest.HasAsk)
	if got := ev.JSON(); !strings.Contains(got, "The user cancelled the turn.") {
		t.Errorf("the CLI was not told:\n%s", got)
	}
}

func TestSession_cancelMidStreamInterrupts(t *testing.T) {
	ev := nativetest.NewRecorder("allow")
	n, _ := openFake(t, agent.OpenOptions{}, ev)
	nativetest.CancelTurn(t, n, ev, "slow", "a chunk of the answer", nativetest.HasAgentText)
	if res, err := prompt(t, n, "after"); err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Errorf("turn after the interrupt: %+v, %v", res, err)
	}
}

func TestSession_crashEndsTheTurnThenResumes(t *testing.T) {
	ev := nativetest.NewRecorder("allow")
	n, args := openFake(t, agent.OpenOptions{}, ev)
	if crashed, _ := nativetest.CheckCrashMidTurn(t, n, ev, "fake claude: boom"); !strings.Contains(crashed, "partial answer") {
		t.Errorf("what was streamed before the crash is missing:%s", crashed)
	}
	if a, _ := os.ReadFile(args); !strings.Contains(string(a), "--resume fake-session-1") {
		t.Errorf("restart args %q; want --resume of the native session", a)
	}
}

func TestSession_garbageFromTheCLIIsSkipped(t *testing.T) {
	ev := nativetest.NewRecorder("allow")
	n, _ := openFake(t, agent.OpenOptions{}, ev)
	if res, err := prompt(t, n, "garbage"); err != nil || !strings.Contains(ev.JSON(), "still fine") {
		t.Errorf("turn: %+v, %v\n%s", res, err, ev.JSON())
	}
}

func TestSession_authErrorIsAuthRequired(t *testing.T) {
	n, _ := openFake(t, agent.OpenOptions{}, nativetest.NewRecorder("allow"))
	_, err := prompt(t, n, "autherr")
	if !errors.Is(err, agent.ErrAuthRequired) || !strings.Contains(err.Error(), "/login") {
		t.Errorf("err %v; want ErrAuthRequired saying how to log in", err)
	}
}

func TestSession_argsModesAndModels(t *testing.T) {
	n, args := openFake(t, agent.OpenOptions{NativeID: "earlier", Config: map[string]string{agent.ConfigMode: "plan", agent.ConfigModel: "sonnet", agent.ConfigEffort: "high"},
		MCPServers: []acp.McpServer{{Http: &acp.McpServerHttpInline{Name: "docs", Url: "http://127.0.0.1:1/mcp", Headers: []acp.HttpHeader{}}}}}, nativetest.NewRecorder("allow"))
	if _, err := prompt(t, n, "hi"); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(args)
	for _, want := range []string{"--permission-prompt-tool stdio", "--include-partial-messages", "--resume earlier",
		"--permission-mode plan", "--model sonnet", "--effort high", `--mcp-config {"mcpServers":{"docs":{"headers":{},"type":"http","url":"http://127.0.0.1:1/mcp"}}}`} {
		if !strings.Contains(string(a), want) {
			t.Errorf("args %q lack %q", a, want)
		}
	}
	ctx := context.Background()
	for id, v := range map[string]string{agent.ConfigMode: "acceptEdits", agent.ConfigModel: "default", agent.ConfigEffort: "low"} {
		if err := n.SetConfig(ctx, id, v); err != nil || option(n, id).Current != v {
			t.Errorf("set %s: %v, current %q", id, err, option(n, id).Current)
		}
	}
}

func option(n agent.Native, id string) agent.ConfigOption {
	for _, o := range n.Config() {
		if o.ID == id {
			return o
		}
	}
	return agent.ConfigOption{}
}

func TestSession_modelFromClaudesOwnSettingsIsCurrent(t *testing.T) {
	for _, tc := range []struct{ runs, want string }{
		{"fake-model-1", "default"},  // what "default" runs
		{"fake-fast-1", "fake-fast"}, // picked in Claude's settings
		{"fake-odd-9", "fake-odd-9"}, // no option runs it
	} {
		ev := nativetest.NewRecorder("allow")
		n, _ := openFake(t, agent.OpenOptions{}, ev, "FAKE_CLAUDE_MODEL="+tc.runs)
		if _, err := prompt(t, n, "hi"); err != nil {
			t.Fatal(err)
		}
		o := option(n, agent.ConfigModel)
		if o.Current != tc.want || !slices.ContainsFunc(o.Choices, func(c agent.ConfigValue) bool { return c.Value == tc.want }) {
			t.Errorf("claude runs %s: current model %q of %v, want %q", tc.runs, o.Current, o.Choices, tc.want)
		}
	}
}

func TestBackend_missingExecutableIsUnavailable(t *testing.T) {
	_, err := New(Options{Path: "/nonexistent/claude"}).Open(context.Background(), agent.OpenOptions{Cwd: "/"}, nativetest.NewRecorder(""))
	if !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("err %v, want ErrAgentUnavailable", err)
	}
	t.Setenv(EnvVar, "")
	t.Setenv("PATH", t.TempDir())
	if err := New(Options{}).Check(); err == nil || !strings.Contains(err.Error(), EnvVar) {
		t.Errorf("Check without claude: %v; want it to name %s", err, EnvVar)
	}
}

// TestSession_closeStopsUpdates: once Close returns, the session reports
// nothing more, even while Claude was streaming.
func TestSession_closeStopsUpdates(t *testing.T) {
	ev := nativetest.NewRecorder("allow")
	n, _ := openFake(t, agent.OpenOptions{}, ev)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		n.Prompt(ctx, agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("slow")}})
	}()
	ev.WaitFor(t, "a chunk of the answer", nativetest.HasAgentText)
	n.Close()
	before, _, _ := ev.Snapshot()
	<-done
	if after, _, _ := ev.Snapshot(); len(after) != len(before) {
		t.Errorf("%d updates after Close returned: %v", len(after)-len(before), after[len(before):])
	}
}

// Additional directories and the system prompt reach the CLI as its own
// flags, in the prompt's mode.
func TestSession_directoriesAndSystemPrompt(t *testing.T) {
	for _, c := range []struct {
		prompt agent.SystemPrompt
		want   string
	}{
		{agent.SystemPrompt{Text: "Answer tersely."}, "--append-system-prompt Answer tersely."},
		{agent.SystemPrompt{Override: true, Text: "Be a pirate."}, "--system-prompt Be a pirate."},
	} {
		lib := t.TempDir()
		n, args := openFake(t, agent.OpenOptions{Directories: []string{lib}, SystemPrompt: &c.prompt}, nativetest.NewRecorder("allow"))
		if _, err := prompt(t, n, "hello"); err != nil {
			t.Fatal(err)
		}
		a, _ := os.ReadFile(args)
		if !strings.Contains(string(a), "--add-dir "+lib) || !strings.Contains(string(a), c.want) {
			t.Errorf("claude started with %s, want --add-dir %s and %s", a, lib, c.want)
		}
	}
}
