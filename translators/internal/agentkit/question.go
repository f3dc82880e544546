package agentkit

import (
	"cmp"
	"context"
	"strconv"
	"strings"

	"github.com/coder/acp-go-sdk"
)

// Question is a question an agent puts to the user with answers to pick
// from (Claude's AskUserQuestion, OpenCode's question tool). ACP has no
// question request that every client shows, so it goes as a permission
// ask whose options are the answers.
type Question struct {
	Text, Header string
	Options      []QuestionOption
}

// QuestionOption is one answer to pick.
type QuestionOption struct{ Label, Description string }

// Choice is what the user did with a Question.
type Choice struct {
	Label     string // the answer picked; "" when the user would not answer
	Answered  bool
	Cancelled bool // the client answered the ask cancelled: the turn ends
	Withdrawn bool // the agent took the question back; it wants no answer
	Err       error
}

// Choose asks q about the tool call call (key as for Ask) and waits.
func (as *Asks) Choose(ctx context.Context, key, call string, q Question) Choice {
	opts := make([]acp.PermissionOption, 0, len(q.Options)+1)
	for i, o := range q.Options {
		opts = append(opts, acp.PermissionOption{OptionId: acp.PermissionOptionId("answer-" + strconv.Itoa(i)),
			Name: o.Label + Prefixed(" — ", o.Description), Kind: acp.PermissionOptionKindAllowOnce})
	}
	opts = append(opts, acp.PermissionOption{OptionId: "reject", Name: "Don't answer", Kind: acp.PermissionOptionKindRejectOnce})
	title, kind := cmp.Or(q.Text, q.Header), acp.ToolKindOther
	ans := as.Ask(ctx, key, acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(call), Title: &title, Kind: &kind}, opts)
	switch {
	case ans.Withdrawn:
		return Choice{Withdrawn: true}
	case ans.Err != nil:
		return Choice{Err: ans.Err}
	case ans.Chosen() == "":
		return Choice{Cancelled: true}
	}
	i, err := strconv.Atoi(strings.TrimPrefix(ans.Chosen(), "answer-"))
	if err != nil || i < 0 || i >= len(q.Options) {
		return Choice{}
	}
	return Choice{Label: q.Options[i].Label, Answered: true}
}
