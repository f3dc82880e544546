package mock

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

// kinds is what the mock reported, in order: each update's kind (with
// its status, if any), one per run of chunks, and "ask" for each
// permission ask.
func kinds(ev *nativetest.Recorder) []string {
	us, asks, _ := ev.Snapshot()
	var out []string
	add := func(k string) {
		if n := len(out); n > 0 && out[n-1] == k && k != "ask" {
			return // one entry per run of chunks
		}
		out = append(out, k)
	}
	for i := 0; i <= len(us); i++ {
		for _, a := range asks {
			if a.After == i {
				add("ask")
			}
		}
		if i == len(us) {
			break
		}
		b, _ := json.Marshal(us[i])
		var m struct {
			SessionUpdate string `json:"sessionUpdate"`
			Status        string `json:"status"`
		}
		json.Unmarshal(b, &m)
		k := m.SessionUpdate
		if m.Status != "" {
			k += ":" + m.Status
		}
		add(k)
	}
	return out
}

// open opens a mock session recorded by ev.
func open(t *testing.T, opts agent.OpenOptions, ev *nativetest.Recorder) agent.Native {
	t.Helper()
	n, err := New().Open(context.Background(), opts, ev)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// play runs a turn on a new session whose asks are answered with choice
// (an option id, or "" to cancel them).
func play(t *testing.T, text, choice string) ([]string, agent.TurnResult, error) {
	t.Helper()
	ev := nativetest.NewRecorder(choice)
	n := open(t, agent.OpenOptions{Cwd: "/w"}, ev)
	res, err := n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
	return kinds(ev), res, err
}

func TestMock_demoPlaysEveryKindInOrder(t *testing.T) {
	kinds, res, err := play(t, "Demo please", "allow")
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

// The notice comes first, then the compaction (its summary in chunks),
// then the answer; a second compaction has an id of its own.
func TestMock_noticeAndCompaction(t *testing.T) {
	ev := nativetest.NewRecorder("")
	n := open(t, agent.OpenOptions{Cwd: "/w"}, ev)
	for range 2 {
		if _, err := n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("notice, compact")}}); err != nil {
			t.Fatal(err)
		}
	}
	got := kinds(ev)
	want := []string{"notice", "compaction_update:in_progress", "compaction_summary_chunk",
		"compaction_update:completed", "agent_message_chunk", "usage_update"}
	if diff := cmp.Diff(append(want, want...), got); diff != "" {
		t.Errorf("two turns (-want +got):\n%s", diff)
	}
	us, _, _ := ev.Snapshot()
	var ids []string
	var summary string
	for _, u := range us {
		if c := u.CompactionUpdate; c != nil && c.Status == acp.CompactionStatusCompleted {
			ids = append(ids, string(c.CompactionId))
		}
		if c := u.CompactionSummaryChunk; c != nil && len(ids) == 0 {
			summary += c.Content.Text.Text
		}
	}
	if len(ids) != 2 || ids[0] == ids[1] {
		t.Errorf("compaction ids %v; want two, each its own", ids)
	}
	if summary != compactSummary {
		t.Errorf("summary %q", summary)
	}
}

func TestMock_editOutcomes(t *testing.T) {
	for _, tc := range []struct {
		answer string // "": cancelled
		status string
		stop   acp.StopReason
	}{
		{"allow", "completed", acp.StopReasonEndTurn},
		{"reject", "failed", acp.StopReasonEndTurn},
		{"", "failed", acp.StopReasonCancelled},
	} {
		kinds, res, err := play(t, "edit", tc.answer)
		after, _ := strings.CutPrefix(strings.Join(kinds, " "), "tool_call:pending ask ")
		if err != nil || res.StopReason != tc.stop || !strings.Contains(after, "tool_call_update:"+tc.status) {
			t.Errorf("answer %q: kinds %v, result %+v, err %v", tc.answer, kinds, res, err)
		}
	}
}

func TestMock_failKeepsTheAnswerAndErrs(t *testing.T) {
	kinds, _, err := play(t, "fail now", "")
	if !errors.Is(err, errFail) || kinds[0] != "agent_message_chunk" {
		t.Errorf("fail: kinds %v, err %v", kinds, err)
	}
}

func TestMock_cancelledContextStopsTheTurn(t *testing.T) {
	ev := nativetest.NewRecorder("")
	n := open(t, agent.OpenOptions{Cwd: "/w"}, ev)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err := n.Prompt(ctx, agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("slow demo")}})
	if got := kinds(ev); err != nil || res.StopReason != acp.StopReasonCancelled || len(got) != 0 {
		t.Errorf("cancelled: %+v, %v, updates %v", res, err, got)
	}
}

// A rejected edit is not done: the plan never says so.
func TestMock_planAfterARejectedEdit(t *testing.T) {
	ev := nativetest.NewRecorder("reject")
	n := open(t, agent.OpenOptions{Cwd: "/w"}, ev)
	if _, err := n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("plan edit")}}); err != nil {
		t.Fatal(err)
	}
	var last *acp.SessionUpdatePlan
	us, _, _ := ev.Snapshot()
	for _, u := range us {
		if u.Plan != nil {
			last = u.Plan
		}
	}
	for _, e := range last.Entries {
		if e.Content == "Edit mock.txt" && e.Status == acp.PlanEntryStatusCompleted {
			t.Errorf("the final plan says the rejected edit was done: %+v", last.Entries)
		}
	}
}

// A reopened session numbers its tool calls afresh; their ids are new.
func TestMock_toolCallIDsAreNotReused(t *testing.T) {
	seen := map[acp.ToolCallId]bool{}
	for range 2 { // the same native session, opened twice
		ev := nativetest.NewRecorder("allow")
		n := open(t, agent.OpenOptions{Cwd: "/w", NativeID: "mock-1"}, ev)
		n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("read")}})
		us, _, _ := ev.Snapshot()
		for _, u := range us {
			if u.ToolCall == nil {
				continue
			}
			if id := u.ToolCall.ToolCallId; seen[id] {
				t.Errorf("tool call id %s used again after a reopen", id)
			} else {
				seen[id] = true
			}
		}
	}
}

// Every tool call and tool_call_update the mock makes names its tool.
func TestMock_toolCallsAreNamed(t *testing.T) {
	ev := nativetest.NewRecorder("allow")
	n := open(t, agent.OpenOptions{Cwd: "/w"}, ev)
	n.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock("read then edit")}})
	us, _, _ := ev.Snapshot()
	calls := 0
	for _, u := range us {
		var name *string
		switch {
		case u.ToolCall != nil:
			name = u.ToolCall.Name
		case u.ToolCallUpdate != nil:
			name = u.ToolCallUpdate.Name
		default:
			continue
		}
		calls++
		if name == nil || (*name != "read" && *name != "edit") {
			t.Errorf("a tool update without the tool's name: %+v", u)
		}
	}
	if calls == 0 {
		t.Error("the turn made no tool calls")
	}
}
