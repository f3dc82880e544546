package mock

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// events records what the mock reports and answers asks with answer.
type events struct {
	mu     sync.Mutex
	kinds  []string
	answer acp.RequestPermissionOutcome
}

func (e *events) Update(u acp.SessionUpdate) {
	b, _ := json.Marshal(u)
	var m struct {
		SessionUpdate string `json:"sessionUpdate"`
		Status        string `json:"status"`
	}
	json.Unmarshal(b, &m)
	e.mu.Lock()
	defer e.mu.Unlock()
	k := m.SessionUpdate
	if m.Status != "" {
		k += ":" + m.Status
	}
	if n := len(e.kinds); n > 0 && e.kinds[n-1] == k {
		return // one entry per run of chunks
	}
	e.kinds = append(e.kinds, k)
}

func (e *events) ConfigChanged() {}

func (e *events) RequestPermission(context.Context, acp.ToolCallUpdate, []acp.PermissionOption) (acp.RequestPermissionOutcome, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.kinds = append(e.kinds, "ask")
	return e.answer, nil
}

func play(t *testing.T, text string, answer acp.RequestPermissionOutcome) ([]string, agent.TurnResult, error) {
	t.Helper()
	ev := &events{answer: answer}
	n, err := New().Open(context.Background(), agent.OpenOptions{Cwd: "/w"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	res, err := n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	return ev.kinds, res, err
}

func TestMock_demoPlaysEveryKindInOrder(t *testing.T) {
	kinds, res, err := play(t, "Demo please", acp.NewRequestPermissionOutcomeSelected("allow"))
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("demo: %+v, %v", res, err)
	}
	want := []string{
		"agent_thought_chunk", "plan",
		"tool_call:pending", "tool_call_update:in_progress", "tool_call_update:completed",
		"tool_call:pending", "ask", "tool_call_update:in_progress", "tool_call_update:completed",
		"plan", "agent_message_chunk", "plan", "usage_update",
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Errorf("demo (-want +got):\n%s", diff)
	}
}

func TestMock_editOutcomes(t *testing.T) {
	for _, tc := range []struct {
		answer acp.RequestPermissionOutcome
		status string
		stop   acp.StopReason
	}{
		{acp.NewRequestPermissionOutcomeSelected("allow"), "completed", acp.StopReasonEndTurn},
		{acp.NewRequestPermissionOutcomeSelected("reject"), "failed", acp.StopReasonEndTurn},
		{acp.NewRequestPermissionOutcomeCancelled(), "failed", acp.StopReasonCancelled},
	} {
		kinds, res, err := play(t, "edit", tc.answer)
		after, _ := strings.CutPrefix(strings.Join(kinds, " "), "tool_call:pending ask ")
		if err != nil || res.StopReason != tc.stop || !strings.Contains(after, "tool_call_update:"+tc.status) {
			t.Errorf("answer %+v: kinds %v, result %+v, err %v", tc.answer, kinds, res, err)
		}
	}
}

func TestMock_failKeepsTheAnswerAndErrs(t *testing.T) {
	kinds, _, err := play(t, "fail now", acp.RequestPermissionOutcome{})
	if !errors.Is(err, errFail) || kinds[0] != "agent_message_chunk" {
		t.Errorf("fail: kinds %v, err %v", kinds, err)
	}
}

func TestMock_cancelledContextStopsTheTurn(t *testing.T) {
	ev := &events{}
	n, _ := New().Open(context.Background(), agent.OpenOptions{Cwd: "/w"}, ev)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := n.Prompt(ctx, agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("slow demo")}})
	if err != nil || res.StopReason != acp.StopReasonCancelled || len(ev.kinds) != 0 {
		t.Errorf("cancelled: %+v, %v, updates %v", res, err, ev.kinds)
	}
}

// A rejected edit is not done: the plan never says so.
func TestMock_planAfterARejectedEdit(t *testing.T) {
	ev := &planEvents{events: events{answer: acp.NewRequestPermissionOutcomeSelected("reject")}}
	n, err := New().Open(context.Background(), agent.OpenOptions{Cwd: "/w"}, ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("plan edit")}}); err != nil {
		t.Fatal(err)
	}
	for _, e := range ev.last.Entries {
		if e.Content == "Edit mock.txt" && e.Status == acp.PlanEntryStatusCompleted {
			t.Errorf("the final plan says the rejected edit was done: %+v", ev.last.Entries)
		}
	}
}

// planEvents keeps the last plan.
type planEvents struct {
	events
	last *acp.SessionUpdatePlan
}

func (e *planEvents) Update(u acp.SessionUpdate) {
	if u.Plan != nil {
		e.last = u.Plan
	}
}

func (e *planEvents) RequestPermission(context.Context, acp.ToolCallUpdate, []acp.PermissionOption) (acp.RequestPermissionOutcome, error) {
	return e.answer, nil
}

// A reopened session numbers its tool calls afresh; their ids are new.
func TestMock_toolCallIDsAreNotReused(t *testing.T) {
	seen := map[acp.ToolCallId]bool{}
	for range 2 { // the same native session, opened twice
		ev := &idEvents{}
		n, err := New().Open(context.Background(), agent.OpenOptions{Cwd: "/w", NativeID: "mock-1"}, ev)
		if err != nil {
			t.Fatal(err)
		}
		n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("read")}})
		for _, id := range ev.ids {
			if seen[id] {
				t.Errorf("tool call id %s used again after a reopen", id)
			}
			seen[id] = true
		}
	}
}

type idEvents struct {
	events
	ids []acp.ToolCallId
}

func (e *idEvents) Update(u acp.SessionUpdate) {
	if u.ToolCall != nil {
		e.ids = append(e.ids, u.ToolCall.ToolCallId)
	}
}
