package fakemessages

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/directive"
)

// Directives is the default script. It answers from the request's last
// user message:
//
// If that message carries tool_result blocks and no new text, the tool
// round is over: after a TaskCreate result it calls TaskUpdate
// {taskId: <the created task's id>, status: "in_progress"}, after a
// plan file's Write it calls ExitPlanMode (see exitplan); otherwise it
// gives the final text "Tool finished. Result was: <first result's
// content, trimmed to 200 characters>".
//
// Otherwise the first directive of the vocabulary (package directive)
// that it knows decides:
//
//	delegate: <prompt>            Agent {description: DelegateDescription, prompt,
//	                              subagent_type: "general-purpose"}: Claude runs a
//	                              subagent, whose own requests this script answers
//	                              (prompt's directives, without "delegate:"), and
//	                              whose answer is the Agent tool's result
//	tell: <message>               SendMessage {to: the last "agentId: <id>" the request's
//	                              messages hold (an Agent tool's result), message,
//	                              summary: TellSummary}: Claude runs that subagent again
//	                              with the message
//	run: <cmd>                    text "I'll run that.", then Bash {command: cmd,
//	                              description}
//	write: <path> <content...>    Write {file_path, content}
//	edit: <path> <old> => <new>   Edit {file_path, old_string, new_string}
//	exitplan                      ExitPlanMode {plan: PlanText}; first, when the
//	                              CLI defers ExitPlanMode (2.1.332), Write {file_path:
//	                              the plan file plan mode names, content: PlanText},
//	                              and ExitPlanMode after its result
//	ask                           AskUserQuestion {questions: [AskedQuestion, with the
//	                              options AskedOptions]}
//	todo                          TaskCreate {subject: "Write the tests", description,
//	                              activeForm: "Writing the tests"}, then TaskUpdate (above)
//	think                         a thinking block, then the answer
//	slow                          the answer in 20 text_delta events 100ms apart
//	fail500                       HTTP 500 api_error
//	fail401                       HTTP 401 authentication_error
//	fail529                       HTTP 529 overloaded_error
//
// and without one it answers directive.Plain(LastText): "Hello from fake
// model. You said: <LastText trimmed to 200 characters>".
func Directives() Script { return directives }

// What the default script says, for tests to compare against.
const (
	RanBashText         = "I'll run that."              // the text before run:'s Bash call
	DelegateDescription = "Delegated task"              // delegate:'s Agent description
	TellSummary         = "A follow-up"                 // tell:'s SendMessage summary
	BashDescription     = "Run the requested command"   // run:'s Bash description
	AnswerTextPrefix    = directive.AnswerPrefix        // the plain answer, then LastText
	FinalTextPrefix     = "Tool finished. Result was: " // the answer after a tool, then its result
	ThinkingText        = "Let me think about this request step by step before answering."
	TaskSubject         = "Write the tests"
	TaskDescription     = "Write unit tests that cover the new behaviour."
	TaskActiveForm      = "Writing the tests"
	AskedQuestion       = "Which color should the button be?"
	PlanText            = "1. Write the tests\n2. Make them pass"
)

// AskedOptions are the answers ask's question offers.
var AskedOptions = []string{"Red", "Blue"}

// known is the vocabulary this fake answers (package directive).
var known = []directive.Name{directive.Delegate, directive.Tell, directive.Run, directive.Write, directive.Edit, directive.ExitPlan, directive.Ask,
	directive.Todo, directive.Think, directive.Slow, directive.Fail401, directive.Fail500, directive.Fail529}

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
		if isPlanFile(req.toolInput(first.ToolUseID)) && !first.IsError {
			return exitPlan()
		}
		return textReply(FinalTextPrefix + directive.Echo(first.Content))
	}
	text := req.LastText
	answer := directive.Plain(text)
	d, _ := directive.Find(text, known...)
	switch d.Name {
	case directive.Delegate:
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "Agent", Input: map[string]any{
			"description": DelegateDescription, "prompt": d.Command, "subagent_type": "general-purpose"}}}}
	case directive.Tell:
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "SendMessage", Input: map[string]any{
			"to": req.lastAgent(), "message": d.Command, "summary": TellSummary}}}}
	case directive.Run:
		return Reply{Blocks: []Block{
			{Type: "text", Text: RanBashText},
			{Type: "tool_use", Name: "Bash", Input: map[string]any{"command": d.Command, "description": BashDescription}},
		}}
	case directive.Write:
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "Write",
			Input: map[string]any{"file_path": d.Path, "content": d.Content}}}}
	case directive.Edit:
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "Edit",
			Input: map[string]any{"file_path": d.Path, "old_string": d.Old, "new_string": d.New}}}}
	case directive.ExitPlan:
		if path := req.planFile(); path != "" && !req.Offers("ExitPlanMode") {
			return Reply{Blocks: []Block{{Type: "tool_use", Name: "Write", Input: map[string]any{"file_path": path, "content": PlanText}}}}
		}
		return exitPlan()
	case directive.Ask:
		var opts []any
		for _, o := range AskedOptions {
			opts = append(opts, map[string]any{"label": o, "description": o + " it is"})
		}
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "AskUserQuestion", Input: map[string]any{"questions": []any{
			map[string]any{"question": AskedQuestion, "header": "Color", "options": opts, "multiSelect": false}}}}}}
	case directive.Todo:
		return Reply{Blocks: []Block{{Type: "tool_use", Name: "TaskCreate", Input: map[string]any{
			"subject": TaskSubject, "description": TaskDescription, "activeForm": TaskActiveForm}}}}
	case directive.Think:
		return Reply{Blocks: []Block{{Type: "thinking", Text: ThinkingText}, {Type: "text", Text: answer}}}
	case directive.Slow:
		r := textReply(answer)
		r.Chunks, r.Delay = slowChunks, slowDelay
		return r
	case directive.Fail500:
		return Reply{Status: http.StatusInternalServerError, ErrorType: "api_error", ErrorMessage: "Internal server error"}
	case directive.Fail401:
		return Reply{Status: http.StatusUnauthorized, ErrorType: "authentication_error", ErrorMessage: "invalid x-api-key"}
	case directive.Fail529:
		return Reply{Status: 529, ErrorType: "overloaded_error", ErrorMessage: "Overloaded"}
	}
	return textReply(answer)
}

func textReply(s string) Reply { return Reply{Blocks: []Block{{Type: "text", Text: s}}} }

func exitPlan() Reply {
	return Reply{Blocks: []Block{{Type: "tool_use", Name: "ExitPlanMode", Input: map[string]any{"plan": PlanText}}}}
}

// agentIDRE finds a subagent's id in its Agent tool's result, which ends
// "agentId: <id> (use SendMessage with to: '<id>' …)" in CLI 2.1.197.
var agentIDRE = regexp.MustCompile(`agentId: (\w+)`)

// lastAgent is the id of the subagent the request's messages last name,
// or "nobody".
func (r Request) lastAgent() string {
	body, _ := json.Marshal(r.Raw["messages"])
	m := agentIDRE.FindAllStringSubmatch(string(body), -1)
	if len(m) == 0 {
		return "nobody"
	}
	return m[len(m)-1][1]
}

// planFileRE finds the plan file in plan mode's reminder: "No plan file
// exists yet. You should create your plan at <path> using the Write
// tool." (CLI 2.1.197 and 2.1.332).
var planFileRE = regexp.MustCompile(`create your plan at (/\S+?\.md) using the Write tool`)

// planFile is the plan file plan mode's reminder names, or "". A CLI that
// defers ExitPlanMode behind ToolSearch (2.1.332) drops the plan the model
// passes it and asks with the plan file's text instead, so the exitplan
// directive writes the plan there first.
func (r Request) planFile() string {
	body, _ := json.Marshal(r.Raw["messages"]) // the path has no character JSON escapes
	if m := planFileRE.FindStringSubmatch(string(body)); m != nil {
		return m[1]
	}
	return ""
}

// isPlanFile reports whether a tool's input writes a plan file.
func isPlanFile(in map[string]any) bool {
	path, _ := in["file_path"].(string)
	return strings.Contains(path, "/.claude/plans/") && strings.HasSuffix(path, ".md")
}

// Offers reports whether the request offers the model a tool of that name
// with its schema (a deferred tool is only named in a reminder).
func (r Request) Offers(tool string) bool {
	tools, _ := r.Raw["tools"].([]any)
	for _, t := range tools {
		if t, _ := t.(map[string]any); t["name"] == tool {
			return true
		}
	}
	return false
}

// ToolName is the name of the tool_use block with that id in the
// request's assistant messages (the latest first), or "".
func (r Request) ToolName(toolUseID string) string {
	name, _ := r.toolUse(toolUseID)
	return name
}

// toolInput is the input of the tool_use block with that id, or nil.
func (r Request) toolInput(toolUseID string) map[string]any {
	_, in := r.toolUse(toolUseID)
	return in
}

// toolUse is the name and input of the tool_use block with that id in the
// request's assistant messages (the latest first).
func (r Request) toolUse(toolUseID string) (string, map[string]any) {
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
				in, _ := b["input"].(map[string]any)
				return name, in
			}
		}
	}
	return "", nil
}
