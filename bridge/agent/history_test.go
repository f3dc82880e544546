package agent

import (
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
)

func TestHistoryText(t *testing.T) {
	done, failed := acp.ToolCallStatusCompleted, acp.ToolCallStatusFailed
	us := []acp.SessionUpdate{
		acp.UpdateUserMessageText("fix the "), acp.UpdateUserMessageText("greeting"),
		acp.UpdateAgentThoughtText("secret thoughts"),
		acp.UpdateAgentMessageText("Looking."),
		acp.StartToolCall("t1", "grep hello", acp.WithStartKind(acp.ToolKindSearch), acp.WithStartStatus(acp.ToolCallStatusPending)),
		acp.UpdateToolCall("t1", acp.WithUpdateStatus(done), acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock("```console\nmain.go:3: hello wrld\n```"))})),
		acp.StartToolCall("t2", "Edit main.go", acp.WithStartKind(acp.ToolKindEdit)),
		acp.UpdateToolCall("t2", acp.WithUpdateStatus(failed)),
		acp.UpdatePlan(acp.PlanEntry{Content: "fix it", Status: acp.PlanEntryStatusInProgress, Priority: acp.PlanEntryPriorityMedium}),
		acp.UpdateAgentMessageText("Done."),
	}
	got := HistoryText(us, HistoryBudget, "Said before:")
	for _, want := range []string{"User: fix the greeting\n", "Agent: Looking.\n",
		"Tool (search, completed): grep hello — main.go:3: hello wrld\n", "Tool (edit, failed): Edit main.go\n",
		"Agent: Done.\n", "Plan: [in_progress] fix it\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("history lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "secret") || strings.Contains(got, "left out") {
		t.Errorf("history:\n%s", got)
	}
	short := HistoryText(us, 60, "Said before:")
	if !strings.Contains(short, "earlier lines left out]") || strings.Contains(short, "User:") || !strings.Contains(short, "Plan:") {
		t.Errorf("history within 60 bytes:\n%s", short)
	}
	if HistoryText(nil, 100, "Said before:") != "" {
		t.Error("an empty conversation should say nothing")
	}
}
