package webtest

import (
	"io"
	"net/http"
	"testing"
)

// RunInput is a RunAgentInput for thread with messages (user texts).
func RunInput(thread, run string, texts ...string) map[string]any {
	var msgs []any
	for i, s := range texts {
		msgs = append(msgs, map[string]any{"id": "u" + string(rune('1'+i)), "role": "user", "content": s})
	}
	if msgs == nil {
		msgs = []any{}
	}
	return map[string]any{"threadId": thread, "runId": run, "messages": msgs, "state": map[string]any{}, "tools": []any{}, "context": []any{}}
}

// AGUIRun POSTs a run and returns its events; it fails unless the
// answer is 200.
func AGUIRun(t *testing.T, base string, in map[string]any) []map[string]any {
	t.Helper()
	resp := Post(t, base+"/ag-ui", in)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /ag-ui: %d %s", resp.StatusCode, b)
	}
	return SSEEvents(t, resp.Body)
}

// FinishedOf is a run's RUN_FINISHED outcome type and result.
func FinishedOf(t *testing.T, events []map[string]any) (string, map[string]any) {
	t.Helper()
	f := Find(events, "RUN_FINISHED")
	if f == nil {
		t.Fatalf("no RUN_FINISHED: %v", Types(events))
	}
	outcome, _ := f["outcome"].(map[string]any)
	result, _ := f["result"].(map[string]any)
	return outcome["type"].(string), result
}
