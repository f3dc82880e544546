package loadtest

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/coder/acp-go-sdk"
)

// A prompt sent while a turn runs is queued and runs after it, with its
// own response, for each real agent on its fake model; a cancel answers
// the running and the queued prompt cancelled, and the queued one never
// reaches the model.
func TestQueue_everyAgent(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: real-CLI queue tests do not run with -short")
	}
	t.Parallel() // a world of its own: it overlaps the package's other tests
	w := newWorld(t, true)
	requests := map[string]func() []string{
		"claude":   func() []string { return bodies(w.claude.Requests()) },
		"codex":    func() []string { return bodies(w.codex.Requests()) },
		"opencode": func() []string { return bodies(w.opencode.Requests()) },
	}
	e := editortest.StartEditorWith(t, w.backends(), t.TempDir(), bridge.PersistAuto, acp.ClientCapabilities{})
	for _, agent := range []string{"claude", "codex", "opencode"} {
		t.Run(agent, func(t *testing.T) {
			id := e.NewSession(t.TempDir())
			if _, err := e.SetConfig(id, bridge.ConfigAgent, agent); err != nil {
				t.Fatal(err)
			}
			e.Client.Take() // the last subtest's leftovers would pass for this one's first chunk
			first := promptAsync(e, id, "slow slow one")
			e.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
			second := promptAsync(e, id, "Say two")
			for _, p := range []chan result{first, second} {
				if r := waitResult(t, p); r.err != nil || r.resp.StopReason != acp.StopReasonEndTurn {
					t.Fatalf("queued prompts: %+v, %v; want both to end_turn", r.resp, r.err)
				}
			}
			got := e.Client.Conversation()
			if one, two := strings.Index(got, "You said: slow slow one"), strings.Index(got, "You said: Say two"); one < 0 || two < one {
				t.Errorf("conversation:\n%s\nwant the second turn after the first's answer", got)
			}

			third := promptAsync(e, id, "slow slow three")
			e.WaitFor(func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
			fourth := promptAsync(e, id, "Say four")
			time.Sleep(200 * time.Millisecond) // let it arrive before the cancel
			if err := e.CS.Cancel(e.Ctx(), acp.CancelNotification{SessionId: id}); err != nil {
				t.Fatal(err)
			}
			for _, p := range []chan result{third, fourth} {
				if r := waitResult(t, p); r.err != nil || r.resp.StopReason != acp.StopReasonCancelled {
					t.Errorf("after the cancel: %+v, %v; want cancelled", r.resp, r.err)
				}
			}
			for _, b := range requests[agent]() {
				if strings.Contains(b, "Say four") {
					t.Errorf("the cancelled queued prompt reached the model: %s", b)
				}
			}
			if r, err := e.Prompt(id, "Say five"); err != nil || r.StopReason != acp.StopReasonEndTurn {
				t.Errorf("prompt after the cancel: %+v, %v", r, err)
			}
		})
	}
}

type result struct {
	resp acp.PromptResponse
	err  error
}

func promptAsync(e *editortest.Editor, id acp.SessionId, text string) chan result {
	ch := make(chan result, 1)
	go func() {
		r, err := e.Prompt(id, text)
		ch <- result{r, err}
	}()
	return ch
}

func waitResult(t *testing.T, ch chan result) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(90 * time.Second):
		t.Fatal("prompt did not return")
		return result{}
	}
}

// bodies are the fake model's requests as JSON.
func bodies[R any](reqs []R) []string {
	var out []string
	for _, r := range reqs {
		b, _ := json.Marshal(r)
		out = append(out, string(b))
	}
	return out
}
