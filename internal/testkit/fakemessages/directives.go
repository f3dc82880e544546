package fakemessages

import (
	"net/http"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/acpbridge/acpbridge/internal/testkit/chunk"
)

// Directives is the default script. It answers from the request's last
// user message:
//
// If that message carries tool_result blocks and no new text, the tool
// round is over: after a TaskCreate result it calls TaskUpdate
// {taskId: <the created task's id>, status: "in_progress"}; otherwise it
// gives the final text "Tool finished. Result was: <first result's
// content, trimmed to 200 characters>".
//
// Otherwise the first of these directives (case-sensitive) found in
// LastText decides:
//
//	RUN_BASH: <cmd>                  text "I'll run that.", then Bash {command: cmd
//	                                 (the rest of the line), description}
//	WRITE_FILE: <path> <content...>  Write {file_path, content: the rest of the line}
//	EDIT_FILE: <path> <old> <new>    Edit {file_path, old_string, new_string} (single words)
//	EXIT_PLAN                        ExitPlanMode {plan: PlanText}
//	ASK_USER                         AskUserQuestion {questions: [AskedQuestion, with the
//	                                 options AskedOptions]}
//	TASKS                            TaskCreate {subject: "Write the tests", description,
//	                                 activeForm: "Writing the tests"}, then TaskUpdate (above)
//	THINK                            a thinking block, then the answer
//	SLOW                             the answer in 20 text_delta events 100ms apart
//	ERROR_500                        HTTP 500 api_error
//	AUTH_401                         HTTP 401 authentication_error
//	OVERLOADED                       HTTP 529 overloaded_error
//
// and without one it answers "Hello from fake model. You said: <LastText
// trimmed to 200 characters>". The words other than RUN_BASH:, WRITE_FILE:
// and EDIT_FILE: must stand alone (THINKING is not THINK).
func Directives() Script { return directives }

// What the default script says, for tests to compare against.
const (
	RanBashText      = "I'll run that."                    // the text before RUN_BASH's Bash call
	BashDescription  = "Run the requested command"         // RUN_BASH's Bash description
	AnswerTextPrefix = "Hello from fake model. You said: " // the plain answer, then LastText
	FinalTextPrefix  = "Tool finished. Result was: "       // the answer after a tool, then its result
	ThinkingText     = "Let me think about this request step by step before answering."
	TaskSubject      = "Write the tests"
	TaskDescription  = "Write unit tests that cover the new behaviour."
	TaskActiveForm   = "Writing the tests"
	AskedQuestion    = "Which color should the button be?"
	PlanText         = "1. Write the tests\n2. Make them pass"
)

// AskedOptions are the answers ASK_USER's question offers.
var AskedOptions = []string{"Red", "Blue"}

const (
	slowChunks = 20
	slowDelay  = 100 * time.Millisecond
)

// taskCreatedRE finds the task id in TaskCreate's tool_result, which reads
// "Task #1 created successfully: Write the tests" in CLI 2.1.197.
var taskCreatedRE = regexp.MustCompile(`Task #(\S+?) created`)

func directives(req Request) Reply {
	if len(req.Results) > 0 && strings.TrimSpace(req.LastText) == "" {
		first := req.Results[0]
		if req.ToolName(first.ToolUseID) == "TaskCreate" && !first.IsError {
			id := "1"
			if m := taskCreatedRE.FindStringSubmatch(first.Content); m != nil {
				id = m[1]
			}
			return Reply{Blocks: []Block{{Type: "tool_use", Name: "TaskUpdate",
				Input: map[string]any{"taskId": id, "status": "in_progress"}}}}
		}
		return textReply(FinalTextPrefix + chunk.Echo(first.Content))
	}
	text := req.LastText
	if cmd, ok := chunk.AfterDirective(text, "RUN_BASH:"); ok && cmd != "" {
		return Reply{Blocks: []Block{
			{Type: "text", Text: RanBashText},
			{Type: "tool_use", Name: "Bash", Input: map[string]any{"command": cmd, "description": BashDescription}},
		}}
	}
	if rest, ok := chunk.AfterDirective(text, "WRITE_FILE:"); ok {
		if path, content, _ := strings.Cut(rest, " "); path != "" {
			return Reply{Blocks: []Block{{Type: "tool_use", Name: "Write",
				Input: map[string]any{"file_path": path, "content": strings.TrimSpace(content)}}}}
		}
	}
	if rest, ok := chunk.AfterDirective(text, "EDIT_FILE:"); ok {
		if f := strings.Fields(rest); len(f) >= 3 {
			return Reply{Blocks: []Block{{Type: "tool_use", Name: "Edit",
				Input: map[string]any{"file_path": f[0], "old_string": f[1], "new_string": f[2]}}}}
		}
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}) {
		words[w] = true
	}
	answer := AnswerTextPrefix + chunk.Echo(text)
	switch {
	case words["EXIT_PLAN"]:
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "ExitPlanMode", Input: map[string]any{"plan": PlanText}}}}
	case words["ASK_USER"]:
		var opts []any
		for _, o := range AskedOptions {
			opts = append(opts, map[string]any{"label": o, "description": o + " it is"})
		}
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "AskUserQuestion", Input: map[string]any{"questions": []any{
			map[string]any{"question": AskedQuestion, "header": "Color", "options": opts, "multiSelect": false}}}}}}
	case words["TASKS"]:
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "TaskCreate", Input: map[string]any{
			"subject": TaskSubject, "description": TaskDescription, "activeForm": TaskActiveForm}}}}
	case words["THINK"]:
		return Reply{Blocks: []Block{{Type: "thinking", Text: ThinkingText}, {Type: "text", Text: answer}}}
	case words["SLOW"]:
		r := textReply(answer)
		r.Chunks, r.Delay = slowChunks, slowDelay
		return r
	case words["ERROR_500"]:
		return Reply{Status: http.StatusInternalServerError, ErrorType: "api_error", ErrorMessage: "Internal server error"}
	case words["AUTH_401"]:
		return Reply{Status: http.StatusUnauthorized, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"}
	case words["OVERLOADED"]:
		return Reply{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}
	}
	return textReply(answer)
}

func textReply(s string) Reply { return Reply{Blocks: []Block{{Type: "text", Text: s}}} }

// ToolName is the name of the tool_use block with that id in the
// request's assistant messages (the latest first), or "".
func (r Request) ToolName(toolUseID string) string {
	msgs, _ := r.Raw["messages"].([]any)
	for i := len(msgs) - 1; i >= 0; i-- {
		m, _ := msgs[i].(map[string]any)
		if m["role"] != "assistant" {
			continue
		}
		blocks, _ := m["content"].([]any)
		for _, b := range blocks {
			if b, _ := b.(map[string]any); b["type"] == "tool_use" && b["id"] == toolUseID {
				name, _ := b["name"].(string)
				return name
			}
		}
	}
	return ""
}
