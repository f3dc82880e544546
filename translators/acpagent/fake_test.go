package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"github.com/coder/acp-go-sdk"
)

// TestMain lets the test binary play an ACP agent when FAKE_ACP is set.
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_ACP") != "" {
		os.Exit(runFake())
	}
	os.Exit(fakeresponses.Run(m))
}

// fakeAgent is an ACP agent on acp-go-sdk's agent side. What it can do is
// set by its environment: FAKE_ACP_LOAD=1 (session/load, replaying what
// was said), FAKE_ACP_RESUME=1, FAKE_ACP_CLOSE=1; its sessions live in
// FAKE_ACP_DIR, so a restarted fake knows them; FAKE_ACP_SETUP=1
// (additional directories, a system prompt in append mode). The prompt's first word
// picks what a turn does.
type fakeAgent struct {
	out   *syncbuf.Writer          // the SDK's lines and the ones the fake writes itself (updates the SDK has no type for)
	conn  *acp.AgentSideConnection // set once ready is closed
	ready chan struct{}
	dir   string

	mu      sync.Mutex
	cancels map[acp.SessionId]context.CancelFunc
	modes   map[acp.SessionId]string
	models  map[acp.SessionId]string
}

func runFake() int {
	f := &fakeAgent{dir: os.Getenv("FAKE_ACP_DIR"), cancels: map[acp.SessionId]context.CancelFunc{},
		modes: map[acp.SessionId]string{}, models: map[acp.SessionId]string{}, ready: make(chan struct{})}
	f.out = &syncbuf.Writer{W: os.Stdout}
	var in io.Reader = os.Stdin
	if log, err := os.OpenFile(filepath.Join(f.dir, "stdin.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
		defer log.Close()
		in = io.TeeReader(os.Stdin, log) // what it was sent, as it was sent
	}
	f.conn = acp.NewAgentSideConnection(f, f.out, in)
	close(f.ready)
	<-f.conn.Done()
	return 0
}

// HandleExtensionMethod answers an extension request with what it was
// sent.
func (f *fakeAgent) HandleExtensionMethod(_ context.Context, method string, params json.RawMessage) (any, error) {
	return map[string]any{"method": method, "params": params}, nil
}

func (f *fakeAgent) Initialize(_ context.Context, r acp.InitializeRequest) (acp.InitializeResponse, error) {
	<-f.ready
	caps := acp.AgentCapabilities{LoadSession: os.Getenv("FAKE_ACP_LOAD") == "1",
		PromptCapabilities: acp.PromptCapabilities{Image: true, Audio: true}, McpCapabilities: acp.McpCapabilities{Http: true}}
	if os.Getenv("FAKE_ACP_RESUME") == "1" {
		caps.SessionCapabilities.Resume = &acp.SessionResumeCapabilities{}
	}
	if os.Getenv("FAKE_ACP_CLOSE") == "1" {
		caps.SessionCapabilities.Close = &acp.SessionCloseCapabilities{}
	}
	if os.Getenv("FAKE_ACP_SETUP") == "1" {
		caps.SessionCapabilities.AdditionalDirectories = &acp.SessionAdditionalDirectoriesCapabilities{}
		caps.SessionCapabilities.SystemPrompt = &acp.SessionSystemPromptCapabilities{}
	}
	// What the client offered is kept, for the tests to check.
	j, _ := json.Marshal(r.ClientCapabilities)
	os.WriteFile(filepath.Join(f.dir, "client-caps.json"), j, 0o600)
	return acp.InitializeResponse{ProtocolVersion: acp.ProtocolVersionNumber, AgentCapabilities: caps,
		AgentInfo: &acp.Implementation{Name: "fake-acp", Version: "1"}}, nil
}

func (f *fakeAgent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (f *fakeAgent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, nil
}

func (f *fakeAgent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}, nil
}

func (f *fakeAgent) CloseSession(_ context.Context, r acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	f.log(r.SessionId, "closed")
	return acp.CloseSessionResponse{}, nil
}

func (f *fakeAgent) DeleteSession(_ context.Context, r acp.DeleteSessionRequest) (acp.DeleteSessionResponse, error) {
	return acp.DeleteSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionDelete)
}

// history is what a session's file holds: its lines, "user: …" and
// "agent: …".
func (f *fakeAgent) history(id acp.SessionId) ([]string, bool) {
	data, err := os.ReadFile(filepath.Join(f.dir, string(id)))
	if err != nil {
		return nil, false
	}
	return strings.Split(strings.TrimSpace(string(data)), "\n"), true
}

func (f *fakeAgent) log(id acp.SessionId, line string) {
	file, _ := os.OpenFile(filepath.Join(f.dir, string(id)), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	fmt.Fprintln(file, strings.ReplaceAll(line, "\n", " "))
	file.Close()
}

func (f *fakeAgent) options(id acp.SessionId) ([]acp.SessionConfigOption, *acp.SessionModeState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	mode, model := f.modes[id], f.models[id]
	if mode == "" {
		mode = "ask"
	}
	if model == "" {
		model = "fast"
	}
	choices := acp.SessionConfigSelectOptionsUngrouped{{Value: "fast", Name: "Fast"}, {Value: "smart", Name: "Smart"}}
	o := acp.NewSessionConfigOptionSelect(acp.SessionConfigValueId(model), acp.SessionConfigSelectOptions{Ungrouped: &choices})
	o.Select.Id, o.Select.Name = "model", "Model"
	return []acp.SessionConfigOption{o}, &acp.SessionModeState{CurrentModeId: acp.SessionModeId(mode),
		AvailableModes: []acp.SessionMode{{Id: "ask", Name: "Ask"}, {Id: "code", Name: "Code"}}}
}

func (f *fakeAgent) NewSession(_ context.Context, r acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	n, _ := os.ReadDir(f.dir)
	id := acp.SessionId("fake-" + strconv.Itoa(len(n)+1))
	f.log(id, "created in "+r.Cwd)
	<-f.ready
	f.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: id, Update: acp.SessionUpdate{
		AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: []acp.AvailableCommand{{Name: "fake-cmd", Description: "a command"}}}}})
	opts, modes := f.options(id)
	return acp.NewSessionResponse{SessionId: id, ConfigOptions: opts, Modes: modes}, nil
}

// LoadSession replays what the session's file says was said.
func (f *fakeAgent) LoadSession(ctx context.Context, r acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	lines, ok := f.history(r.SessionId)
	if !ok {
		return acp.LoadSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": "no session " + string(r.SessionId)})
	}
	for _, l := range lines {
		if text, ok := strings.CutPrefix(l, "agent: "); ok {
			f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: r.SessionId, Update: acp.UpdateAgentMessageText("(replayed) " + text)})
		}
	}
	f.log(r.SessionId, "loaded")
	opts, modes := f.options(r.SessionId)
	return acp.LoadSessionResponse{ConfigOptions: opts, Modes: modes}, nil
}

func (f *fakeAgent) ResumeSession(_ context.Context, r acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	if _, ok := f.history(r.SessionId); !ok {
		return acp.ResumeSessionResponse{}, acp.NewInvalidParams(map[string]any{"error": "no session " + string(r.SessionId)})
	}
	f.log(r.SessionId, "resumed")
	opts, modes := f.options(r.SessionId)
	return acp.ResumeSessionResponse{ConfigOptions: opts, Modes: modes}, nil
}

func (f *fakeAgent) SetSessionMode(_ context.Context, r acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	f.mu.Lock()
	f.modes[r.SessionId] = string(r.ModeId)
	f.mu.Unlock()
	return acp.SetSessionModeResponse{}, nil
}

func (f *fakeAgent) SetSessionConfigOption(_ context.Context, r acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	v := r.ValueId
	if v == nil || v.ConfigId != "model" || (v.Value != "fast" && v.Value != "smart") {
		return acp.SetSessionConfigOptionResponse{}, acp.NewInvalidParams(map[string]any{"error": "no such option value"})
	}
	f.mu.Lock()
	f.models[v.SessionId] = string(v.Value)
	f.mu.Unlock()
	opts, _ := f.options(v.SessionId)
	return acp.SetSessionConfigOptionResponse{ConfigOptions: opts}, nil
}

func (f *fakeAgent) Cancel(_ context.Context, r acp.CancelNotification) error {
	f.mu.Lock()
	cancel := f.cancels[r.SessionId]
	f.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	return nil
}

func (f *fakeAgent) say(ctx context.Context, id acp.SessionId, text string) {
	f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.UpdateAgentMessageText(text)})
	f.log(id, "agent: "+text)
}

// Prompt does what the prompt's first word says.
func (f *fakeAgent) Prompt(_ context.Context, r acp.PromptRequest) (acp.PromptResponse, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f.mu.Lock()
	f.cancels[r.SessionId] = cancel
	f.mu.Unlock()
	var text strings.Builder
	for _, b := range r.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	prompt := text.String()
	f.log(r.SessionId, "user: "+prompt)
	last := prompt
	if i := strings.LastIndex(prompt, "</conversation_so_far>"); i >= 0 {
		last = strings.TrimSpace(prompt[i+len("</conversation_so_far>"):])
	}
	word, arg, _ := strings.Cut(last, " ")
	id := r.SessionId
	done := acp.PromptResponse{StopReason: acp.StopReasonEndTurn, Usage: &acp.Usage{InputTokens: 1, OutputTokens: 2, TotalTokens: 3}}
	switch word {
	case "crash":
		fmt.Fprintln(os.Stderr, "fake agent crashed")
		os.Exit(3)
	case "sleep":
		f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.UpdateAgentThoughtText("sleeping")})
		<-ctx.Done()
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case "stamp": // "stamp N GAP": N chunks saying when they were sent, GAP apart
		count, gap, _ := strings.Cut(arg, " ")
		n, _ := strconv.Atoi(count)
		pause, _ := time.ParseDuration(gap)
		for range n {
			f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.UpdateAgentMessageText(strconv.FormatInt(time.Now().UnixNano(), 10))})
			time.Sleep(pause)
		}
		return done, nil
	case "many":
		n, _ := strconv.Atoi(arg)
		for i := range n {
			f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.UpdateAgentMessageText(strconv.Itoa(i) + " ")})
		}
		return done, nil
	case "ask":
		f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.StartToolCall("call-1", "rm -rf x",
			acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusPending))})
		title := "rm -rf x"
		resp, err := f.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: id,
			ToolCall: acp.ToolCallUpdate{ToolCallId: "call-1", Title: &title},
			Options: []acp.PermissionOption{{OptionId: "yes", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "no", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce}}})
		switch {
		case err != nil:
			f.say(ctx, id, "ask failed: "+err.Error())
		case resp.Outcome.Selected != nil:
			f.say(ctx, id, "answer: "+string(resp.Outcome.Selected.OptionId))
		default:
			f.say(ctx, id, "answer: cancelled")
		}
	case "subagent": // a child session "<id>-sub": announced, a message and an ask of its own, then idle
		child := acp.SessionId(string(id) + "-sub")
		title, running, idle, end := "Helper", "running", "idle", "end_turn"
		f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.SessionUpdate{SubagentUpdate: &acp.SessionSubagentUpdate{
			SessionId: child, Title: &title, State: &acp.StateUpdate{Running: &acp.StateUpdateRunning{State: running}}}}})
		f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: child, Update: acp.UpdateAgentMessageText("the helper works")})
		f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: child, Update: acp.StartToolCall("sub-call", "ls",
			acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusPending))})
		resp, err := f.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: child,
			ToolCall: acp.ToolCallUpdate{ToolCallId: "sub-call"},
			Options:  []acp.PermissionOption{{OptionId: "yes", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce}}})
		status := acp.ToolCallStatusFailed
		if err == nil && resp.Outcome.Selected != nil {
			status = acp.ToolCallStatusCompleted
		}
		f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: child, Update: acp.UpdateToolCall("sub-call", acp.WithUpdateStatus(status))})
		f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.SessionUpdate{SubagentUpdate: &acp.SessionSubagentUpdate{
			SessionId: child, State: &acp.StateUpdate{Idle: &acp.StateUpdateIdle{State: idle, StopReason: &end}}}}})
		f.say(ctx, id, "the helper is done")
	case "read":
		r, err := f.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: id, Path: arg})
		f.say(ctx, id, fmt.Sprintf("read: %q %v", r.Content, err))
	case "write":
		_, err := f.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: id, Path: arg, Content: "from the fake"})
		f.say(ctx, id, fmt.Sprintf("wrote: %v", err))
	case "term":
		t, err := f.conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: id, Command: "echo", Args: []string{"hi"}})
		if err == nil {
			out, _ := f.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: id, TerminalId: t.TerminalId})
			f.conn.ReleaseTerminal(ctx, acp.ReleaseTerminalRequest{SessionId: id, TerminalId: t.TerminalId})
			f.say(ctx, id, "terminal: "+out.Output)
		} else {
			f.say(ctx, id, "terminal: "+err.Error())
		}
	case "ext":
		out, err := f.conn.CallExtension(ctx, "_fake/ping", map[string]any{"sessionId": id, "n": 1})
		f.say(ctx, id, fmt.Sprintf("ext: %s %v", out, err))
	case "notice": // updates newer than the SDK (a kind, a field), and an extension notification
		for _, u := range []string{unknownKind, unknownField} {
			fmt.Fprintf(f.out, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":%q,"update":%s}}`+"\n", id, u)
		}
		f.conn.NotifyExtension(ctx, "_auth/status_update", map[string]any{"sessionId": id, "status": "ok"})
		f.say(ctx, id, "noticed")
	case "mode":
		f.SetSessionMode(ctx, acp.SetSessionModeRequest{SessionId: id, ModeId: "code"})
		f.conn.SessionUpdate(ctx, acp.SessionNotification{SessionId: id, Update: acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: "code"}}})
		f.say(ctx, id, "switched to code")
	default:
		f.say(ctx, id, "echo: "+prompt)
	}
	return done, nil
}

// Updates of an agent newer than the SDK: a kind it does not know, and a
// known kind with a field its types lack.
const (
	unknownKind  = `{"sessionUpdate":"future_update","title":"Heads up","extra":{"x":1},"_meta":{"m":2}}`
	unknownField = `{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"future":{"x":1}}`
)
