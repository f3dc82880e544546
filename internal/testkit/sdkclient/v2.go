package sdkclient

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/acp/edgev2"
	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/toolbin"
	"github.com/acpbridge/acpbridge/persist"
)

//go:embed v2client.mjs
var v2Script []byte

// V2 is how the SDK's experimental v2 client (v2client.mjs) reaches the
// bridge: over its stdin and stdout, served by Serve, or over the SDK's
// Streamable HTTP ("http") or WebSocket ("ws") client at URL, an
// acpbridge serve's /acp.
type V2 struct {
	Transport string // "stdio" (the default), "http" or "ws"
	URL       string
	Serve     func(ctx context.Context, r io.Reader, w io.Writer) error
	// Env is the script's: ACP_V2_PROMPT, the first prompt (one whose tool
	// asks permission), ACP_V2_MODE, a mode to set first.
	Env []string
	// CancelAsk has the script cancel a turn while its permission ask
	// waits (V2Want.CancelAsk checks it).
	CancelAsk bool
	// CancelTool has the script cancel a tool call while its permission
	// ask waits (V2Want.CancelTool checks it).
	CancelTool bool
	// Background has the script prompt the mock to delegate in the
	// background (V2Want.Background checks it).
	Background bool
}

// V2Result is what v2client.mjs saw.
type V2Result struct {
	Init struct {
		ProtocolVersion int              `json:"protocolVersion"`
		AuthMethods     []map[string]any `json:"authMethods"`
	}
	// Auth is what auth/login and auth/logout answered, when initialize
	// offered an auth method of type agent.
	Auth *struct {
		Login, Logout map[string]any
	}
	SessionID string `json:"sessionId"`
	Other     string
	First     struct {
		MessageID string `json:"messageId"`
	}
	List, After   []string
	BadCursor     int
	BadToolCancel int
	Asks          []json.RawMessage
	Updates       []map[string]any // the first session's, as they came
	Cancelled     []map[string]any // the cancelled session's
	// With ACP_V2_CANCEL_ASK: the session cancelled while it asked, and
	// how many asks the agent withdrew ($/cancel_request).
	AskCancelled *struct {
		Updates   []map[string]any
		Withdrawn int
	}
	ToolCancelled *ToolCancelled // with ACP_V2_CANCEL_TOOL
	// With ACP_V2_BACKGROUND: the session and every update of it and its
	// children, as they came.
	Background *struct {
		SessionID string `json:"sessionId"`
		Updates   []struct {
			SessionID string         `json:"sessionId"`
			Update    map[string]any `json:"update"`
		}
	}
	Replay []map[string]any // session/resume's replay, then the state
}

// ToolCancelled is what the script saw of a tool call it cancelled while
// its permission ask waited.
type ToolCancelled struct {
	ToolCallID string `json:"toolCallId"`
	Result     map[string]any
	// Again is the code of a second tool_call/cancel, after the turn.
	Again int
	// The session's updates, as they came.
	Updates []map[string]any
	// StillCancellable: the tool call advertises cancel after the turn;
	// SubjectCancellable: the ask's subject said it could be cancelled.
	StillCancellable, SubjectCancellable bool
}

// StdioV2 serves m on stdio as acpbridge does, v2 for a client asking for
// it; the Manager is the caller's to shut down.
func StdioV2(m *bridge.Manager, log *slog.Logger) func(ctx context.Context, r io.Reader, w io.Writer) error {
	return func(ctx context.Context, r io.Reader, w io.Writer) error {
		s := edge.NewServer(m, "test", log)
		s.ServeV2(edgev2.New(s, m, "test", log).Serve)
		return s.Serve(ctx, r, w)
	}
}

// ManagerOn is a Manager of backend b persisting into a new directory as
// acpbridge does by default (--persist auto), shut down when the test
// ends.
func ManagerOn(t *testing.T, b agent.Backend, log *slog.Logger) *bridge.Manager {
	t.Helper()
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{b}, Default: b.Info().Name, Store: st,
		Persist: bridge.PersistAuto, Logger: log, CancelGrace: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	return m
}

// RunV2 runs v2client.mjs on v, in a new working directory, and returns
// what it saw; the script fails (and with it the test) on any message
// v2's schema refuses.
func RunV2(t *testing.T, v V2) V2Result {
	t.Helper()
	node, dir := toolbin.NodeModules(t, "the ACP TypeScript SDK", "ACP_SDK_DIR", "acp-sdk", "@agentclientprotocol/sdk")
	if err := os.WriteFile(filepath.Join(dir, "v2client.mjs"), v2Script, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "seen.json")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute) // only a hang
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "v2client.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "ACP_V2_OUT="+out, "ACP_V2_CWD="+t.TempDir(), "ACP_V2_TRANSPORT="+v.Transport, "ACP_V2_URL="+v.URL)
	cmd.Env = append(cmd.Env, v.Env...)
	if v.CancelAsk {
		cmd.Env = append(cmd.Env, "ACP_V2_CANCEL_ASK=1")
	}
	if v.CancelTool {
		cmd.Env = append(cmd.Env, "ACP_V2_CANCEL_TOOL=1")
	}
	if v.Background {
		cmd.Env = append(cmd.Env, "ACP_V2_BACKGROUND=1")
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	var err error
	if v.Transport == "" || v.Transport == "stdio" {
		err = runStdio(ctx, cmd, v.Serve)
	} else {
		cmd.Stdout = &stderr
		err = cmd.Run()
	}
	if err != nil {
		t.Fatalf("node v2client.mjs (%s): %v\nstderr:\n%s", v.Transport, err, stderr.String())
	}
	var r V2Result
	b, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil {
		t.Fatalf("the client's report: %v\nstderr:\n%s", err, stderr.String())
	}
	return r
}

// runStdio runs cmd with serve on the other ends of its stdin and stdout.
func runStdio(ctx context.Context, cmd *exec.Cmd, serve func(ctx context.Context, r io.Reader, w io.Writer) error) error {
	toBridge, clientOut, err := os.Pipe()
	if err != nil {
		return err
	}
	clientIn, fromBridge, err := os.Pipe()
	if err != nil {
		return err
	}
	cmd.Stdin, cmd.Stdout = clientIn, clientOut
	err = cmd.Start()
	clientIn.Close()
	clientOut.Close()
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- serve(ctx, toBridge, fromBridge) }()
	// The client's exit ends the bridge's input (the pipe's last writer is
	// gone); closing toBridge before serve returns would fail a read of
	// it still under way ("file already closed").
	err = cmd.Wait()
	serr := <-served
	toBridge.Close()
	fromBridge.Close()
	if err != nil {
		return err
	}
	return serr
}

// V2Want is what a V2Result is to show.
type V2Want struct {
	// Turn are runs of the first turn's updates, each "kind" or
	// "state_update:state[:stopReason]", spaces between consecutive ones.
	Turn []string
	// Asked is in the permission ask (its title, say).
	Asked string
	// Auth: initialize offers an auth method of type agent, which
	// auth/login takes, and auth/logout answers.
	Auth bool
	// CancelAsk: a turn is cancelled while its permission ask waits
	// (ACP_V2_CANCEL_ASK), which goes from requires_action to idle, not
	// through running.
	CancelAsk bool
	// CancelTool: a tool call is cancelled while its permission ask waits
	// (ACP_V2_CANCEL_TOOL): see checkToolCancelled.
	CancelTool bool
	// Background: a subagent in the background (ACP_V2_BACKGROUND): see
	// checkBackground.
	Background bool
	// Diff: the turn edits the file whose path ends so, and its tool call
	// carries v2's diff of it (changes, and Git's patch text).
	Diff string
	// OwnHistory: the agent's own history is replayed (codex under
	// --persist auto), whose messages get ids of their own, not the
	// prompt's messageId.
	OwnHistory bool
}

// states are the state_updates among us: the session's foreground state
// as it went (an agent may say more, usage say, once a turn ended).
func states(us []map[string]any) []map[string]any {
	var out []map[string]any
	for _, u := range us {
		if u["sessionUpdate"] == "state_update" {
			out = append(out, u)
		}
	}
	return out
}

// V2Kinds renders updates as Turn's runs do, space-separated.
func V2Kinds(us []map[string]any) string {
	var ks []string
	for _, u := range us {
		k, _ := u["sessionUpdate"].(string)
		if s, ok := u["state"].(string); ok {
			k += ":" + s
			if r, ok := u["stopReason"].(string); ok {
				k += ":" + r
			}
		}
		ks = append(ks, k)
	}
	return strings.Join(ks, " ")
}

// CheckV2 fails the test for each thing w, or any v2 run, wants that r
// lacks: protocol 2, the prompt's message id on its user_message, one
// permission ask, a cancelled turn that ends idle+cancelled, a replay
// of the user message (by its id), the turn and then the state, -32602
// for an unknown replayFrom cursor and for tool_call/cancel, and
// session/list before and after a delete.
func CheckV2(t *testing.T, r V2Result, w V2Want) {
	t.Helper()
	if r.Init.ProtocolVersion != 2 {
		t.Errorf("initialize answered protocol %d, want 2", r.Init.ProtocolVersion)
	}
	if w.Auth && r.Auth == nil {
		t.Errorf("initialize offered no auth method of type agent: %v", r.Init.AuthMethods)
	}
	if !w.Auth && len(r.Init.AuthMethods) > 0 {
		t.Errorf("initialize offered auth methods %v, want none", r.Init.AuthMethods)
	}
	if r.First.MessageID == "" {
		t.Error("session/prompt's result has no messageId")
	}
	if len(r.Asks) != 1 || !strings.Contains(string(r.Asks[0]), w.Asked) {
		t.Errorf("permission asks %s, want one with %q", r.Asks, w.Asked)
	}
	turn := V2Kinds(r.Updates)
	for _, want := range append([]string{"state_update:running user_message", "tool_call_update",
		"state_update:requires_action", "agent_message_chunk", "state_update:idle:end_turn"}, w.Turn...) {
		if !strings.Contains(turn, want) {
			t.Errorf("the turn's updates lack %q:\n%s", want, turn)
		}
	}
	if i := slices.IndexFunc(r.Updates, func(u map[string]any) bool { return u["sessionUpdate"] == "user_message" }); i < 0 || r.Updates[i]["messageId"] != r.First.MessageID {
		t.Errorf("no user_message with the prompt's messageId %q", r.First.MessageID)
	}
	if !strings.HasSuffix(V2Kinds(states(r.Cancelled)), "state_update:idle:cancelled") {
		t.Errorf("the cancelled turn did not end idle+cancelled:\n%s", V2Kinds(r.Cancelled))
	}
	if w.Diff != "" {
		checkDiff(t, r.Updates, w.Diff)
	}
	if w.CancelAsk {
		checkAskCancelled(t, r)
	}
	if w.CancelTool {
		checkToolCancelled(t, r.ToolCancelled)
	}
	if w.Background {
		checkBackground(t, r)
	}
	replay := V2Kinds(r.Replay)
	if !strings.HasPrefix(replay, "user_message_chunk") || !strings.Contains(replay, "tool_call_update") || !strings.HasSuffix(replay, "state_update:idle") {
		t.Errorf("resume's replay: got\n%s\nwant the user message, the turn, then the state", replay)
	} else if id := r.Replay[0]["messageId"]; id != r.First.MessageID && !w.OwnHistory {
		t.Errorf("the replayed user message has id %v, the prompt's result %q", id, r.First.MessageID)
	}
	if r.BadCursor != -32602 {
		t.Errorf("an unknown replayFrom cursor got %d, want -32602", r.BadCursor)
	}
	if r.BadToolCancel != -32602 {
		t.Errorf("tool_call/cancel of a finished tool call got %d, want -32602", r.BadToolCancel)
	}
	if !slices.Contains(r.List, r.Other) || slices.Contains(r.After, r.Other) || !slices.Contains(r.After, r.SessionID) {
		t.Errorf("session/list before the delete %v, after %v; deleted %s, kept %s", r.List, r.After, r.Other, r.SessionID)
	}
}

// checkAskCancelled: the turn cancelled while its ask waited went from
// requires_action to idle+cancelled, not through running, and the ask
// was withdrawn.
func checkAskCancelled(t *testing.T, r V2Result) {
	t.Helper()
	if r.AskCancelled == nil {
		t.Error("the script did not cancel a turn while it asked")
		return
	}
	asked := V2Kinds(states(r.AskCancelled.Updates))
	i := strings.Index(asked, "state_update:requires_action")
	if i < 0 || !strings.HasSuffix(asked, "state_update:idle:cancelled") || strings.Contains(asked[i:], "state_update:running") {
		t.Errorf("the turn cancelled while asking: got\n%s\nwant requires_action, then idle+cancelled without running between", asked)
	}
	if r.AskCancelled.Withdrawn != 1 {
		t.Errorf("the cancelled turn's ask was withdrawn ($/cancel_request) %d times, want once", r.AskCancelled.Withdrawn)
	}
}

// checkToolCancelled: the tool call was cancellable while its ask waited
// (in the ask's subject and by its tool_call_update), tool_call/cancel
// answered {}, the tool call ended cancelled and stayed so, the session
// went running again and the turn ended end_turn, and a second cancel,
// after the turn, was -32602.
func checkToolCancelled(t *testing.T, tc *ToolCancelled) {
	t.Helper()
	if tc == nil {
		t.Error("the script did not cancel a tool call")
		return
	}
	if !tc.SubjectCancellable || tc.Result == nil || tc.StillCancellable {
		t.Errorf("the ask's subject cancellable %v, tool_call/cancel answered %v, cancellable after the turn %v; want true, {}, false",
			tc.SubjectCancellable, tc.Result, tc.StillCancellable)
	}
	var statuses []any
	for _, u := range tc.Updates {
		if s, ok := u["status"]; ok && u["toolCallId"] == tc.ToolCallID {
			statuses = append(statuses, s)
		}
	}
	if len(statuses) == 0 || statuses[len(statuses)-1] != "cancelled" || slices.Contains(statuses, "failed") {
		t.Errorf("the cancelled tool call's statuses %v, want cancelled last and never failed", statuses)
	}
	kinds := V2Kinds(states(tc.Updates))
	i := strings.Index(kinds, "state_update:requires_action")
	if i < 0 || !strings.Contains(kinds[i:], "state_update:running") || !strings.HasSuffix(kinds, "state_update:idle:end_turn") {
		t.Errorf("the turn whose tool call was cancelled: got\n%s\nwant requires_action, then running on to idle+end_turn", kinds)
	}
	if tc.Again != -32602 {
		t.Errorf("tool_call/cancel after the turn got %d, want -32602", tc.Again)
	}
}

// checkDiff: a tool call of us carries v2's diff of the file whose path
// ends in file: the change, and a Git patch of it.
func checkDiff(t *testing.T, us []map[string]any, file string) {
	t.Helper()
	for _, u := range us {
		content, _ := u["content"].([]any)
		for _, c := range content {
			d, _ := c.(map[string]any)
			changes, _ := d["changes"].([]any)
			patch, _ := d["patch"].(map[string]any)
			text, _ := patch["text"].(string)
			if d["type"] != "diff" || len(changes) != 1 {
				continue
			}
			if ch, _ := changes[0].(map[string]any); strings.HasSuffix(fmt.Sprint(ch["path"]), file) &&
				patch["format"] == "git_patch" && strings.HasPrefix(text, "diff --git /") && strings.Contains(text, "\n+") {
				return
			}
		}
	}
	t.Errorf("no tool call carries v2's diff of %s (changes and a git_patch):\n%v", file, us)
}

// checkBackground: the turn that started a subagent in the background
// ended idle+end_turn listing it as background work; the subagent, its
// message under its own id, was cancelled alone and ended, and the next
// snapshot, idle again without a stopReason, listed no background work.
func checkBackground(t *testing.T, r V2Result) {
	t.Helper()
	bg := r.Background
	if bg == nil {
		t.Error("the script did not delegate in the background")
		return
	}
	var seen []string
	for _, n := range bg.Updates {
		u := n.Update
		k := V2Kinds([]map[string]any{u})
		if n.SessionID != bg.SessionID {
			k = "child:" + k
		}
		if list, ok := u["background"].([]any); ok {
			k += fmt.Sprintf(" background:%d", len(list))
			if len(list) == 1 {
				w, _ := list[0].(map[string]any)
				if w["type"] != "subagent" || !strings.HasPrefix(fmt.Sprint(w["sessionId"]), bg.SessionID+".") {
					t.Errorf("the background work listed: %v, want the subagent's session", w)
				}
			}
		}
		seen = append(seen, k)
	}
	got := strings.Join(seen, " ")
	end := strings.Index(got, "state_update:idle:end_turn background:1")
	if end < 0 || !strings.Contains(got, "child:agent_message_chunk") ||
		!strings.HasSuffix(got, "subagent_update state_update:idle background:0") {
		t.Errorf("a subagent in the background:\n%s\nwant the turn idle+end_turn listing it, its message, then its end and an idle listing nothing", got)
	}
}
