package edge

import (
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// A fork begins with the parent's conversation, which its load replays;
// its first prompt tells an agent with no fork of its own what was said;
// the parent is unchanged; both are listed, and the fork survives a
// restart.
func TestFork_copiesTheConversationAndLeavesTheParent(t *testing.T) {
	dir := t.TempDir()
	h := start(t, dir)
	h.Initialize(acp.ClientCapabilities{})
	parent := h.NewSessionResponse("/work")
	var live []acp.SessionUpdate
	for _, p := range []string{"remember apricot", "and a second turn"} {
		live = append(live, acp.UpdateUserMessageText(p))
		live = append(live, promptUpdates(h, parent.SessionId, p)...)
	}
	setModel(t, h, parent.SessionId, "mock-large")

	fork, err := h.CS.UnstableForkSession(h.Ctx(), acp.UnstableForkSessionRequest{SessionId: parent.SessionId, Cwd: "/work/fork"})
	if err != nil {
		t.Fatal(err)
	}
	if fork.SessionId == parent.SessionId || fork.SessionId == "" {
		t.Fatalf("fork id %q", fork.SessionId)
	}
	if got := currentOf(fork.ConfigOptions, "model"); got != "mock-large" {
		t.Errorf("fork's model %q; want the parent's mock-large", got)
	}
	resp := h.MustPrompt(fork.SessionId, "which word")
	if resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("fork's prompt: %+v", resp)
	}
	got := view(h.Client.Take())
	if !strings.Contains(got, "Forked from session "+string(parent.SessionId)) || !strings.Contains(got, "remember apricot") {
		t.Errorf("the fork's first turn:\n%s\nwant the note, and the agent told the parent's conversation", got)
	}
	h.Stop()

	h2 := start(t, dir)
	h2.Initialize(acp.ClientCapabilities{})
	h2.load(parent.SessionId)
	if diff := cmp.Diff(view(live), view(h2.Client.Take())); diff != "" {
		t.Errorf("the parent changed (-before +after):\n%s", diff)
	}
	if _, err := h2.CS.LoadSession(h2.Ctx(), acp.LoadSessionRequest{SessionId: fork.SessionId, Cwd: "/work/fork", McpServers: []acp.McpServer{}}); err != nil {
		t.Fatal(err)
	}
	replay := view(h2.Client.Take())
	if !strings.HasPrefix(replay, view(live)) || !strings.Contains(replay, "which word") {
		t.Errorf("the fork's replay:\n%s\nwant the parent's conversation, then its own turn", replay)
	}
	list, err := h2.CS.ListSessions(h2.Ctx(), acp.ListSessionsRequest{})
	if err != nil || len(list.Sessions) != 2 {
		t.Fatalf("list: %+v, %v; want both sessions", list, err)
	}
}

func TestFork_unknownOrMalformed(t *testing.T) {
	h := start(t, t.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	_, err := h.CS.UnstableForkSession(h.Ctx(), acp.UnstableForkSessionRequest{SessionId: "4b1c43a4-0000-4000-8000-000000000000", Cwd: "/work"})
	wantCode(t, "fork of an unknown session", err, -32002)
	_, err = h.CS.UnstableForkSession(h.Ctx(), acp.UnstableForkSessionRequest{SessionId: "../x", Cwd: "/work"})
	wantCode(t, "fork of a malformed id", err, -32602)
	s := h.NewSessionResponse("/work")
	_, err = h.CS.UnstableForkSession(h.Ctx(), acp.UnstableForkSessionRequest{SessionId: s.SessionId, Cwd: "relative"})
	wantCode(t, "fork to a relative cwd", err, -32602)
}

func setModel(t *testing.T, h *harness, id acp.SessionId, model string) {
	t.Helper()
	if _, err := h.CS.SetSessionConfigOption(h.Ctx(), acp.SetSessionConfigOptionRequest{
		ValueId: &acp.SetSessionConfigOptionValueId{SessionId: id, ConfigId: "model", Value: acp.SessionConfigValueId(model)}}); err != nil {
		t.Fatal(err)
	}
}

func currentOf(opts []acp.SessionConfigOption, id string) string {
	for _, o := range opts {
		if o.Select != nil && string(o.Select.Id) == id {
			return string(o.Select.CurrentValue)
		}
	}
	return ""
}
