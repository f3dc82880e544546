package fakechat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/directive"
)

// Directives is the default script. It answers from the request:
//
// A request that offers no tools (Request.Title) is OpenCode's title
// generation: the answer is TitleFor(LastUserText), plain text.
//
// If the messages end with tool results (Request.Results), the tool round
// is over and it gives the final text "Tool finished. Output was: <the
// first result's content, trimmed to 200 characters>".
//
// Otherwise the first directive of the vocabulary (package directive)
// that it knows decides:
//
//	delegate: <prompt>       task {description: DelegateDescription, prompt,
//	                         subagent_type: DelegateAgent}: OpenCode runs
//	                         the subagent in a child session, whose own
//	                         requests (Request.SessionID the child's) this
//	                         script answers (prompt's directives, without
//	                         "delegate:"), and whose answer is the task's
//	                         result
//	run: <cmd>               text "I'll run `<cmd>` now.", then bash
//	                         {command, description: BashDescription}
//	write: <path> <content>  write {filePath, content: the rest of the
//	                         line and a newline}
//	edit: <path> <old> => <new>
//	                         edit {filePath, oldString, newString}
//	read: <path>             read {filePath}
//	ask                      question {questions: [QuestionArguments']}
//	todo                     todowrite {todos: TodoArguments' two items}
//	think                    reasoning_content ReasoningText first, then
//	                         the answer
//	slow                     the answer in 40 deltas 100ms apart
//	fail400                  HTTP 400 invalid_request_error
//	fail500                  HTTP 500 server_error (OpenCode retries it
//	                         for ≈72 s)
//
// and without one it answers directive.Plain(LastUserText): "Hello from
// fake model. You said: <LastUserText trimmed to 200 characters>",
// followed by " I see <n> image(s)." when the last user message holds
// n > 0 images. A relative <path> is joined to Request.Cwd (OpenCode's
// working directory, from its system prompt) when there is one, so the
// tools always get absolute paths.
func Directives() Script { return directives }

// What the default script says, for tests to compare against.
const (
	AnswerTextPrefix    = directive.AnswerPrefix        // the plain answer, then LastUserText
	FinalTextPrefix     = "Tool finished. Output was: " // the answer after a tool, then its output
	BashDescription     = "Run the requested command"   // run:'s bash description
	DelegateDescription = "Delegated task"              // delegate:'s task description
	DelegateAgent       = "general"                     // delegate:'s task subagent_type
	ReasoningText       = "Thinking about it."          // think's reasoning
	Fail400Message      = "fake bad request"            // fail400's error message
	Fail500Message      = "fake upstream failure"       // fail500's error message
	TodoArguments       = `{"todos":[{"id":"1","content":"first step","status":"in_progress","priority":"high"},{"id":"2","content":"second step","status":"pending","priority":"low"}]}`
	QuestionText        = "Pick a colour?"
	QuestionHeader      = "Colour"
)

// QuestionArguments are ask's question arguments: one question,
// QuestionText, with the options red (warm) and blue (cool).
const QuestionArguments = `{"questions":[{"question":"Pick a colour?","header":"Colour","options":[{"label":"red","description":"warm"},{"label":"blue","description":"cool"}]}]}`

// RunText is the text before run:'s bash call.
func RunText(cmd string) string { return "I'll run `" + cmd + "` now." }

// ImagesText is what the plain answer adds for n images.
func ImagesText(n int) string { return fmt.Sprintf("I see %d image(s).", n) }

// TitleFor is the title the default script gives a session whose first
// prompt is text: its first five words, "Untitled" if none.
func TitleFor(text string) string {
	words := strings.Fields(text)
	if len(words) == 0 {
		return "Untitled"
	}
	return strings.Join(words[:min(len(words), titleWords)], " ")
}

// known is the vocabulary this fake answers (package directive).
var known = []directive.Name{directive.Delegate, directive.Run, directive.Write, directive.Edit, directive.Read, directive.Ask,
	directive.Todo, directive.Think, directive.Slow, directive.Fail400, directive.Fail500}

const (
	slowDeltas = 40
	slowDelay  = 100 * time.Millisecond
	titleWords = 5
)

func directives(req Request) Reply {
	if req.Title {
		return Reply{Text: TitleFor(req.LastUserText)}
	}
	if len(req.Results) > 0 {
		return Reply{Text: FinalTextPrefix + directive.Echo(req.Results[0].Content)}
	}
	text := req.LastUserText
	answer := directive.Plain(text)
	if req.Images > 0 {
		answer += " " + ImagesText(req.Images)
	}
	d, _ := directive.Find(text, known...)
	switch d.Name {
	case directive.Delegate:
		return Reply{Calls: []Call{call("task", map[string]any{"description": DelegateDescription, "prompt": d.Command, "subagent_type": DelegateAgent})}}
	case directive.Run:
		return Reply{Text: RunText(d.Command), Calls: []Call{call("bash", map[string]any{"command": d.Command, "description": BashDescription})}}
	case directive.Write:
		return Reply{Calls: []Call{call("write", map[string]any{"filePath": abs(req, d.Path), "content": d.Content + "\n"})}}
	case directive.Edit:
		return Reply{Calls: []Call{call("edit", map[string]any{"filePath": abs(req, d.Path), "oldString": d.Old, "newString": d.New})}}
	case directive.Read:
		return Reply{Calls: []Call{call("read", map[string]any{"filePath": abs(req, d.Path)})}}
	case directive.Ask:
		return Reply{Calls: []Call{{Name: "question", Arguments: QuestionArguments}}}
	case directive.Todo:
		return Reply{Calls: []Call{{Name: "todowrite", Arguments: TodoArguments}}}
	case directive.Think:
		return Reply{Reasoning: ReasoningText, Text: answer}
	case directive.Slow:
		return Reply{Text: answer, Deltas: slowDeltas, Delay: slowDelay}
	case directive.Fail400:
		return Reply{Status: http.StatusBadRequest, ErrorMessage: Fail400Message}
	case directive.Fail500:
		return Reply{Status: http.StatusInternalServerError, ErrorMessage: Fail500Message}
	}
	return Reply{Text: answer}
}

// call is a call of the tool name with args as its JSON arguments.
func call(name string, args map[string]any) Call {
	b, _ := json.Marshal(args)
	return Call{Name: name, Arguments: string(b)}
}

// abs is path joined to the request's working directory when it is
// relative and the request names one.
func abs(req Request, path string) string {
	if filepath.IsAbs(path) || req.Cwd == "" {
		return path
	}
	return filepath.Join(req.Cwd, path)
}
