package fakeresponses

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/directive"
)

// Directives is the default script. It answers from the request:
//
// If the input ends with tool outputs (Request.Outputs), the tool round is
// over and it gives the final text: "Plan updated." after an update_plan
// call; after an apply_patch call (a custom_tool_call_output) "Patch
// applied." if its output reports "Success.", else "Patch not applied:
// <output>" (e.g. "patch rejected by user" when the approval was
// declined); and otherwise "Tool finished. Output was: <the first output's text
// after its "Output:" line, trimmed to 200 characters>".
//
// After codex's collaboration tools (features.multi_agent_v2, see
// MultiAgent) it goes on delegating: after spawn_agent it waits
// (wait_agent, 10 s, the least codex takes); once the input holds the
// spawned agent's final answer (Request.AgentAnswer) it answers
// FinalTextPrefix and that answer. A wait that ends without one asks
// list_agents, and waits again while the agent is running; an agent that
// stopped unfinished (interrupted, say, which codex does not tell the
// waiter) has it answer NoAnswerPrefix and list_agents' output.
//
// Otherwise the first directive of the vocabulary (package directive)
// that it knows decides:
//
//	delegate: <prompt>    when the request offers collaboration.spawn_agent,
//	                      spawn_agent {task_name: DelegateTask, message: prompt,
//	                      fork_turns: "none"}: codex runs a spawned agent on a
//	                      thread of its own, whose requests this script answers
//	                      (prompt's directives); without the tool, prompt's
//	                      directives are answered at once
//	run: <cmd>            text "I'll run `<cmd>` now.", then a call of the
//	                      shell tool the request offers: exec_command
//	                      {"cmd"}, shell_command {"command"} or shell
//	                      {"command": argv}
//	write: <file> <line>  text "Creating <file>.", then apply_patch
//	                      "*** Add File: <file>" with the one line <line>
//	edit: <file> <old> => <new>
//	                      text "Editing <file>.", then apply_patch
//	                      "*** Update File: <file>" replacing the line
//	                      <old> by <new>
//	todo                  an update_plan call (PlanArguments)
//	think                 a reasoning item (summary "Planning the answer."),
//	                      then the answer
//	slow                  the answer in 40 deltas 100ms apart
//	fail500               HTTP 500 server_error
//
// and without one it answers directive.Plain(LastUserText): "Hello from
// fake model. You said: <LastUserText trimmed to 200 characters>".
// apply_patch is a custom_tool_call when the tool is offered as a custom
// (freeform) tool, as with the embedded model catalog, else a
// function_call with {"input": patch}.
func Directives() Script { return directives }

// What the default script says, for tests to compare against.
const (
	AnswerTextPrefix  = directive.AnswerPrefix        // the plain answer, then LastUserText
	FinalTextPrefix   = "Tool finished. Output was: " // the answer after a shell call, then its output
	NoAnswerPrefix    = "The agent did not answer: "  // the answer when a spawned agent stopped unfinished, then list_agents' output
	PatchedText       = "Patch applied."              // the answer after apply_patch succeeded
	PatchFailedPrefix = "Patch not applied: "         // the answer after apply_patch failed, then its output
	PlanUpdatedText   = "Plan updated."               // the answer after update_plan
	ReasoningText     = "Planning the answer."        // think's reasoning summary
	AddedLine         = "hello from apply_patch"      // the line the tests and recordings write
	EditedLine        = "hello EDITED by apply_patch" // what they edit AddedLine into
	PlanArguments     = `{"explanation":"fake plan","plan":[{"step":"first step","status":"in_progress"},{"step":"second step","status":"pending"}]}`
)

// DelegateTask is the task_name delegate: gives the agent it spawns, which
// codex calls /root/<DelegateTask>.
const DelegateTask = "helper"

// MultiAgent is the HomeOptions.Extra that offers the model codex's
// collaboration tools (spawn_agent, wait_agent, … in the namespace
// "collaboration"): multi_agent_v2, in the [features] table WriteHome's
// config ends with. Codex 0.169.0 offers them for no model of its
// catalog by default.
const MultiAgent = "multi_agent_v2 = true"

// RunText is the text before run:'s shell call.
func RunText(cmd string) string { return "I'll run `" + cmd + "` now." }

// known is the vocabulary this fake answers (package directive).
var known = []directive.Name{directive.Delegate, directive.Run, directive.Write, directive.Edit, directive.Todo,
	directive.Think, directive.Slow, directive.Fail500}

const (
	slowDeltas = 40
	slowDelay  = 100 * time.Millisecond
)

func directives(req Request) Reply {
	if len(req.Outputs) > 0 {
		first, last := req.Outputs[0], req.Outputs[len(req.Outputs)-1]
		switch {
		case req.AgentAnswer != "" && (last.Name == "wait_agent" || last.Name == "list_agents"):
			return textReply(FinalTextPrefix + directive.Echo(req.AgentAnswer))
		case last.Name == "spawn_agent" || (last.Name == "list_agents" && working(last.Output)):
			return Reply{Items: []Item{{Type: "function_call", Namespace: collaboration, Name: "wait_agent", Arguments: `{"timeout_ms":10000}`}}}
		case last.Name == "wait_agent":
			return Reply{Items: []Item{{Type: "function_call", Namespace: collaboration, Name: "list_agents", Arguments: `{}`}}}
		case last.Name == "list_agents":
			return textReply(NoAnswerPrefix + directive.Echo(last.Output))
		case first.Name == "update_plan":
			return textReply(PlanUpdatedText)
		case first.Type == "custom_tool_call_output" || first.Name == "apply_patch":
			if !strings.Contains(first.Output, "Success.") {
				return textReply(PatchFailedPrefix + directive.Echo(commandOutput(first.Output)))
			}
			return textReply(PatchedText)
		}
		return textReply(FinalTextPrefix + directive.Echo(commandOutput(first.Output)))
	}
	text := req.LastUserText
	answer := directive.Plain(text)
	d, _ := directive.Find(text, known...)
	if d.Name == directive.Delegate && !req.HasTool(collaboration+".spawn_agent") {
		d, _ = directive.Find(text, known[1:]...)
	}
	switch d.Name {
	case directive.Delegate:
		b, _ := json.Marshal(map[string]string{"task_name": DelegateTask, "message": d.Command, "fork_turns": "none"})
		return Reply{Items: []Item{{Type: "function_call", Namespace: collaboration, Name: "spawn_agent", Arguments: string(b)}}}
	case directive.Run:
		return Reply{Items: []Item{{Type: "message", Text: RunText(d.Command)}, shellCall(req, d.Command)}}
	case directive.Write:
		patch := "*** Begin Patch\n*** Add File: " + d.Path + "\n+" + d.Content + "\n*** End Patch\n"
		return Reply{Items: []Item{{Type: "message", Text: "Creating " + d.Path + "."}, patchCall(req, patch)}}
	case directive.Edit:
		patch := "*** Begin Patch\n*** Update File: " + d.Path + "\n@@\n-" + d.Old + "\n+" + d.New + "\n*** End Patch\n"
		return Reply{Items: []Item{{Type: "message", Text: "Editing " + d.Path + "."}, patchCall(req, patch)}}
	case directive.Todo:
		return Reply{Items: []Item{{Type: "function_call", Name: "update_plan", Arguments: PlanArguments}}}
	case directive.Think:
		return Reply{Items: []Item{{Type: "reasoning", Text: ReasoningText}, {Type: "message", Text: answer}}}
	case directive.Slow:
		r := textReply(answer)
		r.Deltas, r.Delay = slowDeltas, slowDelay
		return r
	case directive.Fail500:
		return Reply{Status: http.StatusInternalServerError, ErrorType: "server_error", ErrorMessage: "The server had an error while processing your request."}
	}
	return textReply(answer)
}

// working reports whether list_agents' output says that the agent
// delegate: spawned works still: {"agents":[{"agent_name":"/root/helper",
// "agent_status":"running"},…]}.
func working(output string) bool {
	var list struct {
		Agents []struct {
			Name   string `json:"agent_name"`
			Status string `json:"agent_status"`
		} `json:"agents"`
	}
	json.Unmarshal([]byte(output), &list)
	for _, a := range list.Agents {
		if a.Name == "/root/"+DelegateTask {
			return a.Status == "running" || a.Status == "pending_init"
		}
	}
	return false
}

// collaboration is the namespace of codex's tools for spawned agents.
const collaboration = "collaboration"

func textReply(s string) Reply { return Reply{Items: []Item{{Type: "message", Text: s}}} }

// shellCall calls the shell tool the request offers (exec_command when it
// offers none) with cmd.
func shellCall(req Request, cmd string) Item {
	var name string
	var args any
	switch {
	case req.HasTool("exec_command") || (!req.HasTool("shell_command") && !req.HasTool("shell")):
		name, args = "exec_command", map[string]any{"cmd": cmd}
	case req.HasTool("shell_command"):
		name, args = "shell_command", map[string]any{"command": cmd}
	default:
		name, args = "shell", map[string]any{"command": []string{"bash", "-lc", cmd}}
	}
	b, _ := json.Marshal(args)
	return Item{Type: "function_call", Name: name, Arguments: string(b)}
}

// patchCall calls apply_patch with patch: freeform when the tool is a
// custom tool (or not offered at all), else as a function with {"input"}.
func patchCall(req Request, patch string) Item {
	switch req.ToolType("apply_patch") {
	case "", "custom":
		return Item{Type: "custom_tool_call", Name: "apply_patch", Input: patch}
	}
	b, _ := json.Marshal(map[string]string{"input": patch})
	return Item{Type: "function_call", Name: "apply_patch", Arguments: string(b)}
}

// commandOutput is the command's own output in a shell tool's output:
// what follows the "Output:" line that codex's exec tools put after their
// header (exit code, wall time, …), or all of it without one.
func commandOutput(s string) string {
	if strings.HasPrefix(s, "Output:\n") {
		return s[len("Output:\n"):]
	}
	if i := strings.Index(s, "\nOutput:\n"); i >= 0 {
		return s[i+len("\nOutput:\n"):]
	}
	return s
}

// AddPrompt is a prompt that has codex add file holding AddedLine.
func AddPrompt(file string) string { return "write: " + file + " " + AddedLine }

// EditPrompt is a prompt that has codex turn AddedLine in file into
// EditedLine.
func EditPrompt(file string) string { return "edit: " + file + " " + AddedLine + " => " + EditedLine }
