package edge

import (
	"context"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// scripted is a backend whose sessions send the same updates every turn
// and end it.
type scripted struct {
	name    string
	updates func() []acp.SessionUpdate
}

func (b scripted) Info() agent.Info { return agent.Info{Name: b.name, Title: b.name} }
func (scripted) Close() error       { return nil }
func (b scripted) Open(_ context.Context, _ agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	return scriptedNative{b, ev}, nil
}

type scriptedNative struct {
	b  scripted
	ev agent.Events
}

func (n scriptedNative) NativeID() string                                { return n.b.name + "-1" }
func (n scriptedNative) Config() []agent.ConfigOption                    { return nil }
func (n scriptedNative) SetConfig(context.Context, string, string) error { return nil }
func (n scriptedNative) Caps() agent.SessionCaps                         { return agent.SessionCaps{} }
func (n scriptedNative) Close() error                                    { return nil }
func (n scriptedNative) Prompt(context.Context, agent.Turn) (agent.TurnResult, error) {
	for _, u := range n.b.updates() {
		n.ev.Update(u)
	}
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}
