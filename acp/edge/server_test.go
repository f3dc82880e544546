package edge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/editor"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

func TestServer_initializeIsHonest(t *testing.T) {
	h := start(t, t.TempDir())
	resp := h.Initialize(acp.ClientCapabilities{})
	caps := resp.AgentCapabilities
	sc := caps.SessionCapabilities
	if !caps.LoadSession || sc.List == nil || sc.Resume == nil || sc.Close == nil || sc.Delete == nil {
		t.Errorf("capabilities %+v: want loadSession, list, resume, close, delete", caps)
	}
	if sc.Fork == nil || caps.Auth.Logout != nil {
		t.Errorf("capabilities: want fork, and no logout (not built)")
	}
	if !caps.PromptCapabilities.Image || !caps.PromptCapabilities.EmbeddedContext {
		t.Errorf("prompt capabilities %+v: want the mock's image and embeddedContext", caps.PromptCapabilities)
	}
	if resp.AgentInfo == nil || resp.AgentInfo.Name != "acpbridge" || resp.ProtocolVersion != 1 {
		t.Errorf("agentInfo %+v, protocol %d", resp.AgentInfo, resp.ProtocolVersion)
	}
}

func TestServer_textTurn(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	resp := h.MustPrompt(s.SessionId, "hello there")
	if resp.StopReason != acp.StopReasonEndTurn || resp.Usage == nil {
		t.Errorf("response %+v, want end_turn with usage", resp)
	}
	got := view(h.Client.Take())
	if !strings.Contains(got, "agent: You said: hello there\n") {
		t.Errorf("conversation:\n%s\nwant the echo as one message", got)
	}
}

func TestServer_sessionNewOffersModeModelAndAgent(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	if s.Modes == nil || s.Modes.CurrentModeId != "default" {
		t.Errorf("modes %+v, want current default", s.Modes)
	}
	var ids []string
	for _, o := range s.ConfigOptions {
		ids = append(ids, string(o.Select.Id)+"="+string(o.Select.CurrentValue))
	}
	if diff := cmp.Diff([]string{"mode=default", "model=mock-small", "agent=mock"}, ids); diff != "" {
		t.Errorf("config options (-want +got):\n%s", diff)
	}
}

func TestServer_permission(t *testing.T) {
	for _, tc := range []struct {
		option, status string
	}{
		{"allow", "completed"},
		{"reject", "failed"},
	} {
		t.Run(tc.option, func(t *testing.T) {
			h := start(t, t.TempDir())
			h.Initialize(acp.ClientCapabilities{})
			h.Client.SetPolicy(editor.Choose(tc.option))
			s := h.NewSessionResponse("/work")
			h.MustPrompt(s.SessionId, "please edit")
			got := view(h.Client.Take())
			want := " edit " + tc.status + " Edit /work/mock.txt"
			if !strings.Contains(got, want) || h.Client.Asked() != 1 {
				t.Errorf("conversation:\n%s\nasks %d; want %q after one ask", got, h.Client.Asked(), want)
			}
		})
	}
}

func TestServer_permissionAlwaysAndAcceptEditsSkipTheAsk(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	h.Client.SetPolicy(editor.Choose("always"))
	s := h.NewSessionResponse("/work")
	h.MustPrompt(s.SessionId, "edit")
	h.MustPrompt(s.SessionId, "edit again")
	if n := h.Client.Asked(); n != 1 {
		t.Errorf("%d asks after 'always allow', want 1", n)
	}
	s2 := h.NewSessionResponse("/work")
	if err := h.setMode(s2.SessionId, "acceptEdits"); err != nil {
		t.Fatal(err)
	}
	h.MustPrompt(s2.SessionId, "edit")
	if n := h.Client.Asked(); n != 1 {
		t.Errorf("acceptEdits mode asked permission (%d asks)", n)
	}
}

func (h *harness) setMode(id acp.SessionId, mode string) error {
	_, err := h.CS.SetSessionMode(h.Ctx(), acp.SetSessionModeRequest{SessionId: id, ModeId: acp.SessionModeId(mode)})
	return err
}

func (h *harness) setConfig(id acp.SessionId, key, value string) (acp.SetSessionConfigOptionResponse, error) {
	return h.CS.SetSessionConfigOption(h.Ctx(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: id, ConfigId: acp.SessionConfigId(key), Value: acp.SessionConfigValueId(value)}})
}

func TestServer_configOptions(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	resp, err := h.setConfig(s.SessionId, "model", "mock-large")
	if err != nil {
		t.Fatal(err)
	}
	if cur := resp.ConfigOptions[1].Select.CurrentValue; cur != "mock-large" {
		t.Errorf("model after set = %q", cur)
	}
	if got := view(h.Client.Take()); got != "\n" {
		t.Errorf("setting the model sent conversation updates: %q", got)
	}
	if _, err := h.setConfig(s.SessionId, "mode", "acceptEdits"); err != nil {
		t.Fatal(err)
	}
	h.WaitFor(func(u acp.SessionUpdate) bool {
		return u.CurrentModeUpdate != nil && u.CurrentModeUpdate.CurrentModeId == "acceptEdits"
	})
	if !strings.Contains(view(promptUpdates(h, s.SessionId, "hi")), "(mock-large) You said: hi") {
		t.Errorf("the model option did not reach the agent")
	}
	_, err = h.setConfig(s.SessionId, "agent", "mock")
	if err != nil {
		t.Errorf("re-selecting the same agent: %v", err)
	}
}

func promptUpdates(h *harness, id acp.SessionId, text string) []acp.SessionUpdate {
	h.Client.Take()
	h.MustPrompt(id, text)
	return h.Client.Take()
}

func TestServer_errors(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	ctx := h.Ctx()
	_, err := h.Prompt("no-such-session", "hi")
	wantCode(t, "prompt to unknown session", err, -32002)
	_, err = h.Prompt("../x", "hi")
	wantCode(t, "prompt to ../x", err, -32602)
	for _, id := range []string{"../x", "/etc/passwd", "a/b", "a\x00b", ""} {
		_, err = h.CS.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(id), Cwd: "/work", McpServers: []acp.McpServer{}})
		wantCode(t, fmt.Sprintf("load %q", id), err, -32602)
	}
	_, err = h.CS.LoadSession(ctx, acp.LoadSessionRequest{SessionId: "0000-unknown", Cwd: "/work", McpServers: []acp.McpServer{}})
	wantCode(t, "load of an unknown id", err, -32002)
	_, err = h.CS.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: "0000-unknown", Cwd: "/work"})
	wantCode(t, "resume of an unknown id", err, -32002)
	if strays, _ := filepath.Glob(filepath.Join(h.dir, "sessions", "0000-unknown*")); len(strays) != 0 {
		t.Errorf("load and resume of an unknown id left %v", strays)
	}
	_, err = h.CS.NewSession(ctx, acp.NewSessionRequest{Cwd: "relative/dir", McpServers: []acp.McpServer{}})
	wantCode(t, "relative cwd", err, -32602)
	wantCode(t, "unknown mode", h.setMode(s.SessionId, "yolo"), -32602)
	_, err = h.setConfig(s.SessionId, "colour", "blue")
	wantCode(t, "unknown config option", err, -32602)
	_, err = h.setConfig(s.SessionId, "agent", "nope")
	wantCode(t, "unknown agent", err, -32602)
	_, err = h.CS.ListSessions(ctx, acp.ListSessionsRequest{Cursor: ptr("garbage!")})
	wantCode(t, "bad cursor", err, -32602)
	_, err = h.CS.ListSessions(ctx, acp.ListSessionsRequest{Cwd: ptr("relative")})
	wantCode(t, "relative cwd filter", err, -32602)
	_, err = h.CS.Prompt(ctx, acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{{}}})
	wantCode(t, "empty content block", err, -32602)

	_, err = h.Prompt(s.SessionId, "please fail")
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32603 || !strings.Contains(re.Message, "simulated agent failure") {
		t.Errorf("failing turn: %v, want -32603 carrying the agent's message", err)
	}
	_, err = h.setConfig(s.SessionId, "agent", "mock")
	if err != nil {
		t.Errorf("same agent after the conversation started: %v", err)
	}
	_, err = h.CS.CloseSession(ctx, acp.CloseSessionRequest{SessionId: s.SessionId})
	if err != nil {
		t.Fatal(err)
	}
	_, err = h.Prompt(s.SessionId, "hi")
	wantCode(t, "prompt after close", err, -32002)
}

func TestServer_failedTurnKeepsWhatItStreamed(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	if _, err := h.Prompt(s.SessionId, "read then fail"); err == nil {
		t.Fatal("want an error")
	}
	live := view(append([]acp.SessionUpdate{acp.UpdateUserMessageText("read then fail")}, h.Client.Take()...))
	h.Stop()
	h2 := start(t, dir)
	h2.Initialize(acp.ClientCapabilities{})
	h2.load(s.SessionId)
	if diff := cmp.Diff(live, view(h2.Client.Take())); diff != "" || !strings.Contains(live, "You said") {
		t.Errorf("replay after a failed turn (-live +replay):\n%s", diff)
	}
}

func (h *harness) load(id acp.SessionId) acp.LoadSessionResponse {
	h.T.Helper()
	resp, err := h.CS.LoadSession(h.Ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: "/work", McpServers: []acp.McpServer{}})
	if err != nil {
		h.T.Fatal(err)
	}
	return resp
}

func TestServer_loadAfterRestartReplaysTheConversation(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	var live []acp.SessionUpdate
	for _, p := range []string{"demo", "and a second turn"} {
		live = append(live, acp.UpdateUserMessageText(p))
		live = append(live, promptUpdates(h, s.SessionId, p)...)
	}
	h.Stop()

	h2 := start(t, dir)
	h2.Initialize(acp.ClientCapabilities{})
	resp := h2.load(s.SessionId)
	replay := h2.Client.Take()
	if diff := cmp.Diff(view(live), view(replay)); diff != "" {
		t.Errorf("replay differs from the live conversation (-live +replay):\n%s", diff)
	}
	if resp.Modes == nil || len(resp.ConfigOptions) != 3 {
		t.Errorf("load response %+v: want modes and config options", resp)
	}
	live = append(live, acp.UpdateUserMessageText("third"))
	live = append(live, promptUpdates(h2, s.SessionId, "third")...)
	h2.Stop()

	h3 := start(t, dir)
	h3.Initialize(acp.ClientCapabilities{})
	h3.load(s.SessionId)
	if diff := cmp.Diff(view(live), view(h3.Client.Take())); diff != "" || !strings.Contains(view(live), "You said: third") {
		t.Errorf("the turn after a reload was not recorded (-live +replay):\n%s", diff)
	}
}

func TestServer_resumeDoesNotReplay(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	h.MustPrompt(s.SessionId, "hello")
	h.Stop()
	h2 := start(t, dir)
	h2.Initialize(acp.ClientCapabilities{})
	if _, err := h2.CS.ResumeSession(h2.Ctx(), acp.ResumeSessionRequest{SessionId: s.SessionId, Cwd: "/work"}); err != nil {
		t.Fatal(err)
	}
	if us := h2.Client.Take(); len(us) != 0 {
		t.Errorf("resume sent %d updates, want none", len(us))
	}
	h2.MustPrompt(s.SessionId, "again")
}

func TestServer_sessionOpenInAnotherBridgeIsRefused(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	other := start(t, dir)
	other.Initialize(acp.ClientCapabilities{})
	_, err := other.CS.LoadSession(other.Ctx(), acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: "/work", McpServers: []acp.McpServer{}})
	var re *acp.RequestError
	if !errors.As(err, &re) || !strings.Contains(re.Message, "open in another acpbridge process") {
		t.Errorf("load of a session open elsewhere: %v", err)
	}
	h.MustPrompt(s.SessionId, "still mine")
}

func TestServer_listPagesAllAgentsSessions(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	want := map[acp.SessionId]bool{}
	for i := range 230 {
		cwd := "/work"
		if i%10 == 0 {
			cwd = "/other"
		}
		want[h.NewSessionResponse(cwd).SessionId] = true
	}
	ctx := h.Ctx()
	seen := map[acp.SessionId]bool{}
	var cursor *string
	pages := 0
	last := ""
	for {
		resp, err := h.CS.ListSessions(ctx, acp.ListSessionsRequest{Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, s := range resp.Sessions {
			if seen[s.SessionId] {
				t.Errorf("session %s listed twice", s.SessionId)
			}
			seen[s.SessionId] = true
			if last != "" && *s.UpdatedAt > last {
				t.Errorf("not newest first: %s after %s", *s.UpdatedAt, last)
			}
			last = *s.UpdatedAt
		}
		if cursor = resp.NextCursor; cursor == nil {
			break
		}
	}
	if len(seen) != len(want) || pages != 3 {
		t.Errorf("listed %d of %d sessions in %d pages", len(seen), len(want), pages)
	}
	resp, err := h.CS.ListSessions(ctx, acp.ListSessionsRequest{Cwd: ptr("/other")})
	if err != nil || len(resp.Sessions) != 23 {
		t.Errorf("cwd filter: %d sessions, err %v; want 23", len(resp.Sessions), err)
	}
}

func TestServer_persistNeverWritesNothing(t *testing.T) {
	h := start(t, "")
	h.Initialize(acp.ClientCapabilities{})
	wd, _ := os.Getwd()
	s := h.NewSessionResponse("/work")
	live := append([]acp.SessionUpdate{acp.UpdateUserMessageText("demo")}, promptUpdates(h, s.SessionId, "demo")...)
	h.load(s.SessionId)
	if diff := cmp.Diff(view(live), view(h.Client.Take())); diff != "" {
		t.Errorf("load of a live session without persistence (-live +replay):\n%s", diff)
	}
	resp, err := h.CS.ListSessions(h.Ctx(), acp.ListSessionsRequest{})
	if err != nil || len(resp.Sessions) != 1 {
		t.Errorf("list: %+v, %v; want the one live session", resp, err)
	}
	if after, _ := os.Getwd(); after != wd {
		t.Fatal("cwd changed")
	}
	if _, err := os.Stat(filepath.Join(wd, "sessions")); err == nil {
		t.Errorf("something was written")
	}
}

func TestServer_deleteRemovesTheTranscript(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	if _, err := h.CS.DeleteSession(h.Ctx(), acp.DeleteSessionRequest{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	st, _ := persist.Open(dir)
	if _, err := st.Read(string(s.SessionId)); !errors.Is(err, persist.ErrNotFound) {
		t.Errorf("transcript after delete: %v", err)
	}
	_, err := h.CS.DeleteSession(h.Ctx(), acp.DeleteSessionRequest{SessionId: s.SessionId})
	wantCode(t, "second delete", err, -32002)
	_, err = h.CS.DeleteSession(h.Ctx(), acp.DeleteSessionRequest{SessionId: "0000-never-was"})
	wantCode(t, "delete of an unknown id", err, -32002)
	locks, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	if len(locks) != 1 || filepath.Base(locks[0]) != "index.lock" {
		t.Errorf("lock files: %v, want only the index's", locks)
	}
}

func TestServer_imagePromptReachesTheAgent(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	s := h.NewSessionResponse("/work")
	_, err := h.CS.Prompt(h.Ctx(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{
		acp.TextBlock("look"), acp.ImageBlock("aGk=", "image/png"), acp.ResourceLinkBlock("x", "file:///x")}})
	if err != nil {
		t.Fatal(err)
	}
	if got := view(h.Client.Take()); !strings.Contains(got, "an image (image/png), a link to file:///x") {
		t.Errorf("conversation:\n%s", got)
	}
}

var _ = context.Background
