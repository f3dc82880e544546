package opencode

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/coder/acp-go-sdk"
)

// kidEvent is an event of session, with props; the parent's is P.
func kidEvent(t *testing.T, typ, session string, props map[string]any) Event {
	t.Helper()
	props["sessionID"] = session
	b, err := json.Marshal(props)
	if err != nil {
		t.Fatal(err)
	}
	return Event{Type: typ, Properties: b}
}

func created(t *testing.T, id, parent, title string) Event {
	return kidEvent(t, "session.created", id, map[string]any{"info": map[string]any{"id": id, "parentID": parent, "title": title}})
}

func busy(t *testing.T, id string) Event {
	return kidEvent(t, "session.status", id, map[string]any{"status": map[string]any{"type": "busy"}})
}

func idle(t *testing.T, id string) Event { return kidEvent(t, "session.idle", id, map[string]any{}) }

func childText(t *testing.T, id, text string) []Event {
	return []Event{
		kidEvent(t, "message.updated", id, map[string]any{"info": map[string]any{"id": "m-" + id, "role": "assistant"}}),
		kidEvent(t, "message.part.updated", id, map[string]any{"part": map[string]any{"id": "p-" + id, "messageID": "m-" + id, "type": "text", "text": text}}),
	}
}

func taskPart(t *testing.T, status, child string) Event {
	st := map[string]any{"status": status, "input": map[string]any{"description": "Look around", "prompt": "look", "subagent_type": "explore"},
		"metadata": map[string]any{"sessionId": child}}
	if status == "error" {
		st["error"] = "boom"
	}
	return kidEvent(t, "message.part.updated", "P", map[string]any{"part": map[string]any{"id": "tp", "messageID": "mp", "type": "tool", "tool": "task", "callID": "call_t", "state": st}})
}

// run feeds evs to tr and renders what each meant: "parent:" and
// "<child>:" lines of update kinds and subagent states.
func run(t *testing.T, tr *Translator, evs ...Event) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range evs {
		out, err := tr.Translate(ev)
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range out.Parent {
			b.WriteString("parent: " + describe(u) + "\n")
		}
		for _, u := range out.Updates {
			b.WriteString(or(out.Child, "parent") + ": " + describe(u) + "\n")
		}
		if out.Ask != nil {
			b.WriteString(or(out.Child, "parent") + ": ask " + out.Ask.ID + "\n")
		}
		if out.Abort {
			b.WriteString(out.Child + ": abort\n")
		}
	}
	return b.String()
}

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// describe is an update's kind, and for a subagent_update its child,
// title, state and whether it links a tool call.
func describe(u acp.SessionUpdate) string {
	su := u.SubagentUpdate
	if su == nil {
		b, _ := json.Marshal(u)
		var m struct {
			Kind string `json:"sessionUpdate"`
		}
		json.Unmarshal(b, &m)
		return m.Kind
	}
	s := "subagent " + string(su.SessionId)
	if su.Title != nil {
		s += fmt.Sprintf(" %q", *su.Title)
	}
	if st := su.State; st != nil && st.Running != nil {
		s += " running"
	}
	if st := su.State; st != nil && st.Idle != nil {
		s += " idle " + *st.Idle.StopReason
	}
	if su.Meta != nil {
		s += " linked"
	}
	return s
}

func newParent() *Translator {
	tr := NewTranslator("/w")
	tr.Own("P")
	return tr
}

// A child's traffic before the task call names it announces it, titled as
// its session is; the task call then links it. Another session's events,
// and a child's of a parent not the Translator's, are skipped.
func TestSubagents_announcedByTrafficFirst(t *testing.T) {
	tr := newParent()
	got := run(t, tr, append(append([]Event{created(t, "X", "Q", "not ours"), busy(t, "X"), created(t, "C", "P", "Look (@explore subagent)"), busy(t, "C")},
		childText(t, "C", "hi")...), taskPart(t, "running", "C"), idle(t, "C"))...)
	want := `parent: subagent C "Look (@explore subagent)" running
C: agent_message_chunk
parent: tool_call
parent: subagent C "Look around" linked
parent: subagent C idle end_turn
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// A subagent's own subagent (a grandchild) is a child of the session's
// too; a failed child ends with an error.
func TestSubagents_grandchildAndFailure(t *testing.T) {
	tr := newParent()
	evs := []Event{created(t, "C", "P", "c"), taskPart(t, "running", "C"), created(t, "G", "C", "g"), busy(t, "G")}
	evs = append(evs, childText(t, "G", "deep")...)
	evs = append(evs, kidEvent(t, "session.error", "G", map[string]any{"error": map[string]any{"name": "APIError", "data": map[string]any{"message": "bad"}}}), idle(t, "G"))
	got := run(t, tr, evs...)
	want := `parent: tool_call
parent: subagent C "Look around" running linked
parent: subagent G "g" running
G: agent_message_chunk
parent: subagent G idle error
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// A child stopped before OpenCode started it: the idle its lost abort
// brings is not its end; once it starts it is to be aborted, and it ends
// cancelled, once, although OpenCode reports no error.
func TestSubagents_stoppedBeforeItStarted(t *testing.T) {
	tr := newParent()
	run(t, tr, created(t, "C", "P", "c"), taskPart(t, "running", "C"))
	if !tr.StopKid("C") || tr.StopKid("nobody") {
		t.Fatal("StopKid: want true for the running child only")
	}
	got := run(t, tr, idle(t, "C"), busy(t, "C"), idle(t, "C"), idle(t, "C"), taskPart(t, "error", "C"))
	want := `C: abort
parent: subagent C idle cancelled
parent: tool_call_update
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if tr.StopKid("C") {
		t.Error("StopKid of an ended child: true")
	}
}

// A child's permission ask is the child's, and announces it if nothing
// did; a task that fails ends its child if OpenCode did not.
func TestSubagents_askAndTaskError(t *testing.T) {
	tr := newParent()
	ask := kidEvent(t, "permission.asked", "C", map[string]any{"id": "per_1", "permission": "bash", "patterns": []string{"ls"}})
	got := run(t, tr, created(t, "C", "P", "c"), busy(t, "C"), ask, taskPart(t, "error", "C"))
	want := `parent: subagent C "c" running
C: ask per_1
parent: tool_call
parent: tool_call_update
parent: subagent C "Look around" linked
parent: subagent C idle error
`
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// The server's inline config asks of every agent what the bridge's rules
// ask, over the user's own inline config.
func TestAskConfig(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", `{"permission":{"bash":"ask","edit":"ask","webfetch":"ask"}}`},
		{`{"model":"a/b", // mine
		  "permission":{"bash":"allow","read":"deny"},}`, `{"model":"a/b","permission":{"bash":"ask","edit":"ask","read":"deny","webfetch":"ask"}}`},
		{`{"permission":"allow"}`, `{"permission":{"*":"allow","bash":"ask","edit":"ask","webfetch":"ask"}}`},
	} {
		got, err := askConfig(c.in)
		if err != nil || got != c.want {
			t.Errorf("askConfig(%q) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	if _, err := askConfig("{not json"); err == nil {
		t.Error("askConfig of a config that does not parse: no error")
	}
}

// A task call naming a child whose session.created was missed (the event
// stream dropped) has the session take its events from then on, once.
func TestSubagents_adoptedByItsTaskCall(t *testing.T) {
	tr := newParent()
	for i, want := range []string{"C", ""} {
		out, err := tr.Translate(taskPart(t, "running", "C"))
		if err != nil || out.Adopt != want {
			t.Errorf("task part %d: Adopt %q, %v; want %q", i, out.Adopt, err, want)
		}
	}
	if got := run(t, tr, childText(t, "C", "hi")...); got != "C: agent_message_chunk\n" {
		t.Errorf("the adopted child's text: %q", got)
	}
}
