package bridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/coder/acp-go-sdk"
)

// strayBackend's agent reports a subagent's work (Events.Child) without
// ever announcing the child.
type strayBackend struct{}

func (strayBackend) Info() agent.Info { return agent.Info{Name: "stray", Title: "Stray"} }
func (strayBackend) Close() error     { return nil }

func (strayBackend) Open(_ context.Context, _ agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	return &strayNative{ev: ev}, nil
}

type strayNative struct{ ev agent.Events }

func (n *strayNative) NativeID() string                                { return "stray-1" }
func (n *strayNative) Caps() agent.SessionCaps                         { return agent.SessionCaps{} }
func (n *strayNative) Close() error                                    { return nil }
func (n *strayNative) Config() []agent.ConfigOption                    { return nil }
func (n *strayNative) SetConfig(context.Context, string, string) error { return nil }

func (n *strayNative) Prompt(context.Context, agent.Turn) (agent.TurnResult, error) {
	sub := n.ev.Child("never-announced")
	sub.Update(acp.StartToolCall("c1", "ls", acp.WithStartStatus(acp.ToolCallStatusCompleted)))
	sub.Update(acp.UpdateAgentMessageText("from the stray subagent"))
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}

// A subagent's work the agent never announced is shown on the session, as
// if no child were involved, even to a client that takes subagents, and
// replayed so: nothing is lost, no unknown id is sent.
func TestSession_unannouncedChildIsTheSessions(t *testing.T) {
	state := t.TempDir()
	caps := acp.ClientCapabilities{Subagents: &acp.SubagentCapabilities{}}
	e := editortest.StartEditorOffering(t, strayBackend{}, state, bridge.PersistAlways, caps)
	cwd := t.TempDir()
	id := e.NewSession(cwd)
	e.MustPrompt(id, "go")
	check := func(what string) {
		t.Helper()
		var us []acp.SessionUpdate
		for _, n := range e.Client.Notifications() {
			if n.SessionId != id {
				t.Fatalf("%s: an update of session %s", what, n.SessionId)
			}
			us = append(us, n.Update)
		}
		got := acptest.Conversation(us)
		if !strings.Contains(got, "from the stray subagent") || !strings.Contains(got, "ls") {
			t.Errorf("%s:%s\nwant the stray subagent's tool call and text", what, got)
		}
	}
	check("live")
	e.Stop()
	e = editortest.StartEditorOffering(t, strayBackend{}, state, bridge.PersistAlways, caps)
	e.Load(id, cwd)
	check("replayed")
}
