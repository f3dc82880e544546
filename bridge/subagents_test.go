package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// A child's Accumulator numbers its entries with its parent's and tags
// them; a checkpoint's drafts of both are replaced by their final entries;
// a tool call id of the child's is not the parent's; Replay flattens the
// child (its tool calls only, no announcement), ReplayTree keeps it.
func TestReplayTree_childEntries(t *testing.T) {
	n := 0
	acc := NewAccumulator(1, func() string { n++; return fmt.Sprintf("m%d", n) })
	sub := acc.Child("task-1")
	var entries []persist.Entry
	keep := func(es []Entry) {
		enc, err := Encode(es)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, enc...)
	}
	add := func(a *Accumulator, u acp.SessionUpdate) { _, done := a.Add(u); keep(done) }
	keep(acc.User([]acp.ContentBlock{acp.TextBlock("delegate")}))
	add(acc, acp.StartToolCall("t1", "Agent", acp.WithStartStatus(acp.ToolCallStatusInProgress)))
	add(acc, agent.SubagentUpdate("task-1", "Sub", "", agent.Running()))
	add(sub, acp.UpdateAgentMessageText("working"))
	keep(append(acc.Checkpoint(1), sub.Checkpoint(1)...))                                       // the bridge stopped here, say; it did not
	add(sub, acp.StartToolCall("t1", "Bash", acp.WithStartStatus(acp.ToolCallStatusCompleted))) // the same id as the parent's
	add(acc, agent.SubagentUpdate("task-1", "", "", agent.Idle(acp.StopReasonEndTurn)))
	add(acc, acp.UpdateToolCall("t1", acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
	add(acc, acp.UpdateAgentMessageText("done"))
	keep(sub.Flush())
	keep(acc.Flush())

	var tree []string
	for _, r := range ReplayTree(entries) {
		tree = append(tree, r.Session+" "+kindOf(string(r.Update)))
	}
	want := " user_message_chunk\n tool_call Agent completed\n subagent_update\ntask-1 agent_message_chunk\ntask-1 tool_call Bash completed\n subagent_update\n agent_message_chunk"
	if got := strings.Join(tree, "\n"); got != want {
		t.Errorf("ReplayTree:\n%s\nwant:\n%s", got, want)
	}
	var flat []string
	for _, r := range Replay(entries) {
		flat = append(flat, kindOf(string(r)))
	}
	want = "user_message_chunk\ntool_call Agent completed\ntool_call Bash completed\nagent_message_chunk"
	if got := strings.Join(flat, "\n"); got != want {
		t.Errorf("Replay:\n%s\nwant:\n%s", got, want)
	}
}

// kindOf is an encoded update's kind, and a tool call's title and status.
func kindOf(u string) string {
	_, rest, _ := strings.Cut(u, `"sessionUpdate":"`)
	kind, _, _ := strings.Cut(rest, `"`)
	if kind != "tool_call" {
		return kind
	}
	field := func(k string) string {
		_, v, _ := strings.Cut(u, `"`+k+`":"`)
		v, _, _ = strings.Cut(v, `"`)
		return v
	}
	return kind + " " + field("title") + " " + field("status")
}

// A child's id is its parent's, a dot, and the native id made safe; an
// id is a child's only with a valid parent id before the dot.
func TestChildID(t *testing.T) {
	if got := childID("p1", "a/b c"); got != "p1.a_b_c" {
		t.Errorf("childID = %q", got)
	}
	for id, want := range map[string]bool{"p1.x": true, "p1.": false, ".x": false, "p/1.x": false, "p1": false} {
		if _, _, ok := splitChild(id); ok != want {
			t.Errorf("splitChild(%q) ok = %v, want %v", id, ok, want)
		}
	}
}

// delegatingBackend's sessions delegate every prompt to a subagent, which
// runs a command and answers.
type delegatingBackend struct{ echoBackend }

func (b *delegatingBackend) Open(_ context.Context, _ agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	return &delegatingNative{ev: ev}, nil
}

type delegatingNative struct {
	echoNative
	ev agent.Events
}

func (n *delegatingNative) NativeID() string { return "d-1" }

func (n *delegatingNative) Prompt(context.Context, agent.Turn) (agent.TurnResult, error) {
	n.ev.Update(acp.StartToolCall("agent-1", "Delegate", acp.WithStartStatus(acp.ToolCallStatusInProgress)))
	announced := agent.SubagentUpdate("task-1", "Helper", "", agent.Running())
	announced.SubagentUpdate.Meta = agent.SubagentOf("agent-1") // as every agent's is
	n.ev.Update(announced)
	sub := n.ev.Child("task-1")
	sub.Update(acp.StartToolCall("sub-1", "make check", acp.WithStartStatus(acp.ToolCallStatusCompleted)))
	sub.Update(acp.UpdateAgentMessageText("the helper's own words"))
	n.ev.Update(agent.SubagentUpdate("task-1", "", "", agent.Idle(acp.StopReasonEndTurn)))
	n.ev.Update(acp.UpdateToolCall("agent-1", acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
	n.ev.Update(acp.UpdateAgentMessageText("delegated"))
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}

// A session whose agent delegated to a subagent is handed to another
// agent as it is shown to a client that takes no subagents: the next
// agent is told of the subagent's tool call, not of its words or its
// announcement.
func TestHandoff_subagentFlattened(t *testing.T) {
	st, err := persist.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	d, e := &delegatingBackend{echoBackend{name: "delegator"}}, &echoBackend{name: "echo"}
	_, s := startSession(t, Config{Backends: []agent.Backend{d, e}, Default: "delegator", Store: st, Persist: PersistAlways})
	ctx := context.Background()
	if _, err := s.Prompt(ctx, Arrival{}, text("first")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SetConfigOption(ctx, ConfigAgent, "echo"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Prompt(ctx, Arrival{}, text("second")); err != nil {
		t.Fatal(err)
	}
	got := e.sent()[0]
	if !strings.Contains(got, "make check") || strings.Contains(got, "the helper's own words") || strings.Contains(got, "Helper") {
		t.Errorf("the next agent was told:\n%s\nwant the subagent's tool call, not its words or its announcement", got)
	}
}

// A cancel of a child whose agent can't stop it alone is ignored (its
// parent's next turn is not cancelled); what a child may not be asked is
// ErrRestricted, through the Manager as through the edge.
func TestSubagent_cancelIgnoredAndRestricted(t *testing.T) {
	d := &delegatingBackend{echoBackend{name: "delegator"}}
	m, s := startSession(t, Config{Backends: []agent.Backend{d}, Default: "delegator", Persist: PersistNever})
	ctx := context.Background()
	if _, err := s.Prompt(ctx, Arrival{}, text("first")); err != nil {
		t.Fatal(err)
	}
	child := s.ID() + ".task-1"
	m.Cancel(child, 0)
	if res, err := s.Prompt(ctx, Arrival{}, text("second")); err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Errorf("the turn after a child's cancel: %+v, %v", res, err)
	}
	if _, err := m.Get(ctx, child); !errors.Is(err, ErrRestricted) {
		t.Errorf("Get of a child: %v, want ErrRestricted", err)
	}
	if _, err := m.Fork(ctx, child, Setup{Cwd: "/w"}); !errors.Is(err, ErrRestricted) {
		t.Errorf("Fork of a child: %v, want ErrRestricted", err)
	}
	if _, err := m.Get(ctx, s.ID()+".nobody"); !errors.Is(err, agent.ErrInvalidParams) || errors.Is(err, ErrRestricted) {
		t.Errorf("Get of an unknown child: %v, want invalid params", err)
	}
}

// startSession starts a Manager of cfg, its client recording nothing
// in particular, and a session on its default agent in /w; the Manager is
// shut down when the test ends.
func startSession(t *testing.T, cfg Config) (*Manager, *Session) {
	t.Helper()
	m, err := NewManager(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.SetClient(&updatesClient{})
	t.Cleanup(func() { m.Shutdown() })
	s, err := m.New(context.Background(), Setup{Cwd: "/w"})
	if err != nil {
		t.Fatal(err)
	}
	return m, s
}

// historyDelegatingBackend's sessions delegate as delegatingBackend's,
// and keep their history as the agent's own (a codex thread's): the
// parent's messages and tool calls, and an announcement of the child with
// none of its updates, as codex's thread/read gives them.
type historyDelegatingBackend struct{ delegatingBackend }

func (b *historyDelegatingBackend) Open(_ context.Context, _ agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	return &historyDelegatingNative{delegatingNative{ev: ev}}, nil
}

type historyDelegatingNative struct{ delegatingNative }

func (n *historyDelegatingNative) Caps() agent.SessionCaps {
	return agent.SessionCaps{History: func(context.Context) ([]acp.SessionUpdate, error) {
		announced := agent.SubagentUpdate("task-1", "Helper", "", agent.Running())
		announced.SubagentUpdate.Meta = agent.SubagentOf("agent-1")
		return []acp.SessionUpdate{
			acp.UpdateUserMessageText("first"),
			acp.StartToolCall("agent-1", "Delegate", acp.WithStartStatus(acp.ToolCallStatusCompleted)),
			announced,
			acp.UpdateAgentMessageText("delegated"),
		}, nil
	}}
}

// Prompt is delegatingNative's turn after a plan.
func (n *historyDelegatingNative) Prompt(ctx context.Context, t agent.Turn) (agent.TurnResult, error) {
	n.ev.Update(acp.SessionUpdate{Plan: &acp.SessionUpdatePlan{Entries: []acp.PlanEntry{{Content: "delegate", Status: acp.PlanEntryStatusCompleted, Priority: acp.PlanEntryPriorityMedium}}}})
	return n.delegatingNative.Prompt(ctx, t)
}

// sessionsClient keeps the updates it is sent as "session kind" lines.
type sessionsClient struct {
	updatesClient
	lines []string
}

func (c *sessionsClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := json.Marshal(n.Update)
	c.lines = append(c.lines, string(n.SessionId)+" "+kindOf(string(b)))
	return nil
}

// A session whose agent keeps its history (--persist auto) records its
// subagents beside it, as no agent's history holds them: a load replays
// the agent's history with the child's announcement and updates right
// after the tool call that started it (standing for the announcement the
// history makes, which has no updates under it), and the plan last; a
// client that takes no subagents is shown the child's tool call there.
func TestReplay_subagentsBesideTheAgentsHistory(t *testing.T) {
	dir := t.TempDir()
	st, err := persist.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := &historyDelegatingBackend{delegatingBackend{echoBackend{name: "delegator"}}}
	cfg := Config{Backends: []agent.Backend{b}, Default: "delegator", Store: st, Persist: PersistAuto}
	m, s := startSession(t, cfg)
	if _, err := s.Prompt(context.Background(), Arrival{}, text("first")); err != nil {
		t.Fatal(err)
	}
	id := s.ID()
	m.Shutdown()
	for _, c := range []struct {
		caps acp.ClientCapabilities
		want string
	}{
		{acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}},
			"S user_message_chunk\nS tool_call Delegate completed\nS subagent_update\nS.task-1 tool_call make check completed\nS.task-1 agent_message_chunk\nS subagent_update\nS agent_message_chunk\nS plan"},
		{acp.ClientCapabilities{},
			"S user_message_chunk\nS tool_call Delegate completed\nS tool_call make check completed\nS agent_message_chunk\nS plan"},
	} {
		m, err := NewManager(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cl := &sessionsClient{}
		m.SetClient(cl)
		m.SetClientCapabilities(c.caps)
		if _, err := m.Load(context.Background(), id, Setup{Cwd: "/w"}); err != nil {
			t.Fatal(err)
		}
		m.Shutdown()
		got := strings.ReplaceAll(strings.Join(cl.lines, "\n"), id, "S")
		if got != c.want {
			t.Errorf("subagents %v: replayed\n%s\nwant\n%s", c.caps.Subagents != nil, got, c.want)
		}
	}
}
