package acpagent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/coder/acp-go-sdk"
)

// fake is a fake downstream agent's set-up: where it keeps its sessions.
type fake struct {
	cleanup func(func()) // the test's or benchmark's Cleanup
	dir     string
	env     map[string]string
}

// newFake makes a fake agent; env sets what it can do (FAKE_ACP_LOAD=1 …).
func newFake(t *testing.T, env ...string) *fake {
	dir := t.TempDir()
	f := &fake{cleanup: t.Cleanup, dir: filepath.Join(dir, "agent"), env: map[string]string{}}
	os.Mkdir(f.dir, 0o700)
	for _, kv := range append([]string{"FAKE_ACP=1", "FAKE_ACP_DIR=" + f.dir, nativetest.RaceEnv(t, dir, "the fake agent")}, env...) {
		k, v, _ := strings.Cut(kv, "=")
		f.env[k] = v
	}
	return f
}

// backend is a backend on the fake, as a bridge (or a restarted one) has.
func (f *fake) backend() *Backend {
	b := New(Spec{Name: "fake", Command: nativetest.TestBinary(), Env: f.env})
	f.cleanup(func() { b.Close() })
	return b
}

var offers = acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true}

func prompt(t *testing.T, e *editortest.Editor, id acp.SessionId, text string) acp.PromptResponse {
	t.Helper()
	r, err := e.Prompt(id, text)
	if err != nil {
		t.Fatalf("prompt %q: %v", text, err)
	}
	return r
}

func TestProxy_turnOptionsAndAsk(t *testing.T) {
	f := newFake(t)
	e := editortest.StartEditorOffering(t, f.backend(), t.TempDir(), bridge.PersistAuto, offers)
	e.Client.Option = "yes"
	resp := e.NewSessionResponse(t.TempDir())
	choices, current := acptest.Choices(resp.ConfigOptions), acptest.Current(resp.ConfigOptions)
	if !slices.Equal(choices["model"], []string{"fast", "smart"}) || !slices.Equal(choices[agent.ConfigMode], []string{"ask", "code"}) || current[agent.ConfigMode] != "ask" {
		t.Errorf("options %v, current %v", choices, current)
	}
	var commands bool // announced before session/new answered, shown all the same
	for _, u := range e.Client.Take() {
		commands = commands || u.AvailableCommandsUpdate != nil
	}
	if !commands {
		t.Error("the agent's commands, sent before its session/new answer, were lost")
	}
	r := prompt(t, e, resp.SessionId, "hello there")
	if r.StopReason != acp.StopReasonEndTurn || r.Usage == nil || r.Usage.TotalTokens != 3 {
		t.Errorf("prompt answered %+v", r)
	}
	prompt(t, e, resp.SessionId, "ask")
	conv := e.Client.Conversation()
	for _, want := range []string{"agent: echo: hello there", "answer: yes", "tool call-1 execute"} {
		if !strings.Contains(conv, want) {
			t.Errorf("conversation lacks %q:%s", want, conv)
		}
	}
	if asks := e.Client.Asks(); len(asks) != 1 || asks[0].SessionId != resp.SessionId || *asks[0].ToolCall.Title != "rm -rf x" {
		t.Errorf("asks %+v", asks)
	}
	opts, err := e.SetConfig(resp.SessionId, "model", "smart")
	if err != nil || acptest.Current(opts)["model"] != "smart" {
		t.Errorf("set model: %v, %v", acptest.Current(opts), err)
	}
	if opts, err := e.SetConfig(resp.SessionId, agent.ConfigMode, "code"); err != nil || acptest.Current(opts)[agent.ConfigMode] != "code" {
		t.Errorf("set mode: %v, %v", opts, err)
	}
}

// The downstream's fs, terminal and extension requests reach the editor
// named with the bridge's session id; the downstream was told what the
// editor offers.
func TestProxy_editorCalls(t *testing.T) {
	f := newFake(t)
	e := editortest.StartEditorOffering(t, f.backend(), t.TempDir(), bridge.PersistAuto, offers)
	e.Client.Files["/w/a.txt"] = "some text"
	id := e.NewSession(t.TempDir())
	for _, p := range []string{"read /w/a.txt", "write /w/b.txt", "term", "ext"} {
		prompt(t, e, id, p)
	}
	conv := e.Client.Conversation()
	for _, want := range []string{`read: "some text" <nil>`, "wrote: <nil>", "terminal: ran echo hi", `ext: {"pong":{"n":1,"sessionId":"` + string(id) + `"}} <nil>`} {
		if !strings.Contains(conv, want) {
			t.Errorf("conversation lacks %q:%s", want, conv)
		}
	}
	if e.Client.Files["/w/b.txt"] != "from the fake" {
		t.Errorf("files %v", e.Client.Files)
	}
	for _, c := range e.Client.Calls() {
		if !strings.HasSuffix(c, " "+string(id)) {
			t.Errorf("the editor was called %q, not with the bridge's session id %s", c, id)
		}
	}
	var caps acp.ClientCapabilities
	data, _ := os.ReadFile(filepath.Join(f.dir, "client-caps.json"))
	if json.Unmarshal(data, &caps) != nil || !caps.Fs.ReadTextFile || !caps.Terminal {
		t.Errorf("the agent was told the editor offers %s", data)
	}
}

func TestProxy_editorCallsNotOffered(t *testing.T) {
	f := newFake(t)
	e := editortest.StartEditor(t, f.backend(), t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	prompt(t, e, id, "read /etc/passwd")
	prompt(t, e, id, "term")
	conv := e.Client.Conversation()
	if !strings.Contains(conv, "Method not found") || strings.Contains(conv, "ran echo") || len(e.Client.Calls()) != 0 {
		t.Errorf("an editor offering nothing was called %v:%s", e.Client.Calls(), conv)
	}
}

func TestProxy_cancel(t *testing.T) {
	f := newFake(t)
	e := editortest.StartEditor(t, f.backend(), t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, _ := e.Prompt(id, "sleep")
		done <- r
	}()
	e.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentThoughtChunk != nil })
	if err := e.CS.Cancel(e.Ctx(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.StopReason != acp.StopReasonCancelled {
			t.Errorf("stop reason %q", r.StopReason)
		}
	case <-time.After(nativetest.WaitGuard):
		t.Fatal("the cancelled turn did not end")
	}
}

func TestProxy_modeChangedByTheAgent(t *testing.T) {
	f := newFake(t)
	e := editortest.StartEditor(t, f.backend(), t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	prompt(t, e, id, "mode")
	var cur map[string]string
	for _, u := range e.Client.Take() {
		if u.ConfigOptionUpdate != nil {
			cur = acptest.Current(u.ConfigOptionUpdate.ConfigOptions)
		}
		if u.CurrentModeUpdate != nil {
			// the bridge tells the mode as it tells every option
			cur = map[string]string{agent.ConfigMode: string(u.CurrentModeUpdate.CurrentModeId)}
		}
	}
	if cur[agent.ConfigMode] != "code" {
		t.Errorf("after the agent switched modes the editor was told %v", cur)
	}
}

// A crash ends the turn with the agent's stderr; the next prompt starts it
// again and goes on in the same bridge session.
func TestProxy_crashThenNextPrompt(t *testing.T) {
	f := newFake(t, "FAKE_ACP_LOAD=1")
	e := editortest.StartEditor(t, f.backend(), t.TempDir(), bridge.PersistAuto)
	id := e.NewSession(t.TempDir())
	prompt(t, e, id, "hello")
	if _, err := e.Prompt(id, "crash"); err == nil || !strings.Contains(err.Error(), "fake agent crashed") {
		t.Fatalf("crash: %v", err)
	}
	prompt(t, e, id, "hello again")
	if conv := e.Client.Conversation(); !strings.Contains(conv, "echo: hello again") || strings.Contains(conv, "(replayed)") {
		t.Errorf("after the crash:%s", conv)
	}
}

// After the bridge restarts, session/load replays the bridge's transcript
// whatever the agent can do, and the agent gets the session back: loaded
// (its own replay not shown), resumed, or told the conversation so far.
func TestProxy_loadAfterRestart(t *testing.T) {
	for _, tc := range []struct {
		name, env, opened string
	}{
		{"load", "FAKE_ACP_LOAD=1", openedLoaded},
		{"resume", "FAKE_ACP_RESUME=1", openedResumed},
		{"neither", "FAKE_ACP_NONE=1", openedFresh},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t, tc.env)
			state, cwd := t.TempDir(), t.TempDir()
			e := editortest.StartEditor(t, f.backend(), state, bridge.PersistAuto)
			id := e.NewSession(cwd)
			prompt(t, e, id, "hello one")
			e.Stop()

			e2 := editortest.StartEditor(t, f.backend(), state, bridge.PersistAuto)
			r, err := e2.CS.LoadSession(e2.Ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}})
			if err != nil {
				t.Fatal(err)
			}
			meta, _ := r.Meta["acpbridge"].(map[string]any)
			if meta["opened"] != tc.opened {
				t.Errorf("load _meta %v, want opened %s", r.Meta, tc.opened)
			}
			replay := e2.Client.Conversation()
			if strings.Count(replay, "echo: hello one") != 1 || strings.Contains(replay, "(replayed)") {
				t.Errorf("replay:%s", replay)
			}
			prompt(t, e2, id, "hello two")
			got := e2.Client.Conversation()
			carried := strings.Contains(got, "<conversation_so_far>") && strings.Contains(got, "User: hello one")
			if tc.opened == openedFresh != carried || !strings.Contains(got, "hello two") {
				t.Errorf("the turn after the load (carried %v):%s", carried, got)
			}
		})
	}
}

func TestOpen_missingCommand(t *testing.T) {
	b := New(Spec{Name: "nothing", Command: filepath.Join(t.TempDir(), "no-such-agent")})
	if err := b.Check(); !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("Check = %v", err)
	}
	if _, err := b.Open(t.Context(), agent.OpenOptions{Cwd: t.TempDir()}, nativetest.NewRecorder("")); !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("Open = %v", err)
	}
}

// An agent that takes additional directories and a system prompt: the
// bridge's first initialize answer says so (it waits for the agent's), and
// the agent is sent them with session/new.
func TestProxy_directoriesAndSystemPrompt(t *testing.T) {
	f := newFake(t, "FAKE_ACP_SETUP=1")
	e := editortest.StartEditorOffering(t, f.backend(), t.TempDir(), bridge.PersistAuto, offers)
	if sc := e.Init.AgentCapabilities.SessionCapabilities; sc.AdditionalDirectories == nil || sc.SystemPrompt == nil {
		t.Errorf("the first initialize answer's session capabilities %+v lack the agent's directories and system prompt", sc)
	}
	lib := t.TempDir()
	s, err := e.CS.NewSession(e.Ctx(), acp.NewSessionRequest{Cwd: t.TempDir(), AdditionalDirectories: []string{lib}, McpServers: []acp.McpServer{},
		SystemPrompt: &acp.SystemPrompt{Mode: acp.SystemPromptModeAppend, Content: []acp.ContentBlock{acp.TextBlock("Answer tersely.")}}})
	if err != nil {
		t.Fatal(err)
	}
	prompt(t, e, s.SessionId, "hello")
	log, _ := os.ReadFile(filepath.Join(f.dir, "stdin.log"))
	if !strings.Contains(string(log), `"additionalDirectories":["`+lib+`"]`) ||
		!strings.Contains(string(log), `"systemPrompt":{"content":[{"text":"Answer tersely.","type":"text"}],"mode":"append"}`) {
		t.Errorf("the agent was sent:\n%s\nwant the directories and the system prompt with session/new", log)
	}
}
