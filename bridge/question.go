package bridge

import (
	"slices"

	"github.com/acpbridge/acpbridge/bridge/agent"
)

// questionForm is q as an elicitation form: one field, "answer", whose
// values are q's answers (with their descriptions as titles).
func questionForm(q agent.Question) map[string]any {
	values := make([]any, 0, len(q.Options))
	for _, o := range q.Options {
		title := o.Label
		if o.Description != "" {
			title += " — " + o.Description
		}
		values = append(values, map[string]any{"const": o.Label, "title": title})
	}
	field := map[string]any{"type": "string", "title": q.Header, "description": q.Text, "oneOf": values}
	return map[string]any{"type": "object", "properties": map[string]any{"answer": field}, "required": []any{"answer"}}
}

// formAnswer is what the user did with the form of q: an answer accepted
// (one of q's), declined (no answer), or cancelled (the turn ends).
func formAnswer(q agent.Question, action string, content map[string]any) agent.QuestionAnswer {
	switch action {
	case "cancel":
		return agent.QuestionAnswer{Cancelled: true}
	case "accept":
		label, _ := content["answer"].(string)
		if slices.ContainsFunc(q.Options, func(o agent.QuestionOption) bool { return o.Label == label }) {
			return agent.QuestionAnswer{Label: label, Answered: true}
		}
	}
	return agent.QuestionAnswer{}
}
