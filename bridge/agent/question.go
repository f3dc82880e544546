package agent

import (
	"cmp"
	"context"
	"strconv"
	"strings"

	"github.com/coder/acp-go-sdk"
)

// Question is a question an agent puts to the user with answers to pick
// from (Claude's AskUserQuestion, OpenCode's question tool), about a tool
// call it has announced. The bridge asks it as a form (ACP's
// elicitation/create) when the client takes forms, else as a permission
// ask whose options are the answers (AskAsPermission).
type Question struct {
	Text, Header string
	Options      []QuestionOption
}

// QuestionOption is one answer to pick.
type QuestionOption struct{ Label, Description string }

// QuestionAnswer is what the user did with a Question.
type QuestionAnswer struct {
	Label    string // the answer picked; "" when the user would not answer
	Answered bool
	// Cancelled is set when the client cancelled the question: as with a
	// permission ask answered cancelled, the turn ends.
	Cancelled bool
}

// AskAsPermission asks q about call as a permission ask (through ask, an
// Events.RequestPermission) whose options are the answers, plus one not to
// answer: for a client that takes no forms.
func AskAsPermission(ctx context.Context, ask func(context.Context, acp.ToolCallUpdate, []acp.PermissionOption) (acp.RequestPermissionOutcome, error),
	call acp.ToolCallUpdate, q Question) (QuestionAnswer, error) {
	opts := make([]acp.PermissionOption, 0, len(q.Options)+1)
	for i, o := range q.Options {
		name := o.Label
		if o.Description != "" {
			name += " — " + o.Description
		}
		opts = append(opts, acp.PermissionOption{OptionId: acp.PermissionOptionId("answer-" + strconv.Itoa(i)),
			Name: name, Kind: acp.PermissionOptionKindAllowOnce})
	}
	opts = append(opts, acp.PermissionOption{OptionId: "reject", Name: "Don't answer", Kind: acp.PermissionOptionKindRejectOnce})
	title, kind := cmp.Or(q.Text, q.Header), acp.ToolKindOther
	call.Title, call.Kind = &title, &kind
	out, err := ask(ctx, call, opts)
	if err != nil || out.Selected == nil {
		return QuestionAnswer{Cancelled: err == nil}, err
	}
	i, err := strconv.Atoi(strings.TrimPrefix(string(out.Selected.OptionId), "answer-"))
	if err != nil || i < 0 || i >= len(q.Options) {
		return QuestionAnswer{}, nil
	}
	return QuestionAnswer{Label: q.Options[i].Label, Answered: true}, nil
}
