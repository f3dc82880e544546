package claude

import (
	"cmp"
	"encoding/json"
	"fmt"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// tasks is Claude's task list as its task tools (TaskCreate, TaskUpdate)
// or the older TodoWrite leave it. The client sees it as the plan, whole,
// each time it changes.
type tasks struct {
	list []*task
}

type task struct {
	id, subject, activeForm, status string
}

// apply folds one successful task-tool call into the list and reports
// whether the list changed.
func (ts *tasks) apply(name string, in map[string]any, result json.RawMessage) bool {
	switch name {
	case "TodoWrite":
		return ts.replace(in)
	case "TaskCreate":
		ts.list = append(ts.list, &task{id: createdID(result, len(ts.list)+1), subject: agentkit.Input(in).Str("subject", "content"),
			activeForm: agentkit.Input(in).Str("activeForm"), status: "pending"})
		return true
	case "TaskUpdate":
		return ts.update(in)
	}
	return false // TaskList, TaskGet: reads
}

func (ts *tasks) replace(in map[string]any) bool {
	todos, _ := in["todos"].([]any)
	ts.list = ts.list[:0]
	for i, td := range todos {
		m, _ := td.(map[string]any)
		ts.list = append(ts.list, &task{id: fmt.Sprint(i + 1), subject: agentkit.Input(m).Str("content", "subject"),
			activeForm: agentkit.Input(m).Str("activeForm"), status: cmp.Or(agentkit.Input(m).Str("status"), "pending")})
	}
	return true
}

func (ts *tasks) update(in map[string]any) bool {
	id := idOf(in, "taskId", "task_id", "id")
	for i, t := range ts.list {
		if t.id != id {
			continue
		}
		if s := agentkit.Input(in).Str("status"); s == "deleted" {
			ts.list = append(ts.list[:i], ts.list[i+1:]...)
			return true
		} else if s != "" {
			t.status = s
		}
		t.subject = cmp.Or(agentkit.Input(in).Str("subject"), t.subject)
		t.activeForm = cmp.Or(agentkit.Input(in).Str("activeForm"), t.activeForm)
		return true
	}
	return false
}

// createdID finds the new task's id in TaskCreate's structured result,
// falling back to its position (Claude numbers tasks from 1).
func createdID(result json.RawMessage, position int) string {
	var r map[string]any
	if json.Unmarshal(result, &r) == nil {
		if id := idOf(r, "taskId", "task_id", "id"); id != "" {
			return id
		}
		if t, ok := r["task"].(map[string]any); ok {
			if id := idOf(t, "id", "taskId"); id != "" {
				return id
			}
		}
	}
	return fmt.Sprint(position)
}

// idOf reads an id that may be a string or a number.
func idOf(m map[string]any, keys ...string) string {
	for _, k := range keys {
		switch v := m[k].(type) {
		case string:
			if v != "" {
				return v
			}
		case float64:
			return fmt.Sprint(int64(v))
		}
	}
	return ""
}

// plan is the list as an ACP plan; the task in progress shows its
// activeForm ("Writing the tests").
func (ts *tasks) plan() acp.SessionUpdate {
	entries := make([]acp.PlanEntry, 0, len(ts.list))
	for _, t := range ts.list {
		content := t.subject
		if t.status == "in_progress" && t.activeForm != "" {
			content = t.activeForm
		}
		entries = append(entries, agentkit.PlanEntry(content, t.status, ""))
	}
	return acp.UpdatePlan(entries...)
}
