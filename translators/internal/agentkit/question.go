package agentkit

import (
	"context"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Choice is what the user did with an agent.Question.
type Choice struct {
	Label     string // the answer picked; "" when the user would not answer
	Answered  bool
	Cancelled bool // the client cancelled the question: the turn ends
	Withdrawn bool // the agent took the question back; it wants no answer
	Err       error
}

// Choose asks q about the tool call call (key as for Ask, and withdrawn
// the same ways) and waits.
func (as *Asks) Choose(ctx context.Context, key, call string, q agent.Question) Choice {
	return as.ChooseIn(ctx, "", key, call, q)
}

// ChooseIn is Choose for the child session child (a subagent; see
// agent.Events.Child), "" for the session's own.
func (as *Asks) ChooseIn(ctx context.Context, child, key, call string, q agent.Question) Choice {
	ev := as.ev
	if child != "" {
		ev = ev.Child(child)
	}
	ctx, done := as.pend(ctx, key)
	a, err := ev.AskQuestion(ctx, acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(call)}, q)
	if done() {
		return Choice{Withdrawn: true}
	}
	if err != nil {
		return Choice{Err: err}
	}
	return Choice{Label: a.Label, Answered: a.Answered, Cancelled: a.Cancelled}
}
