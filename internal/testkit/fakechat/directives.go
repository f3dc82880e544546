package fakechat

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/acpbridge/acpbridge/internal/testkit/chunk"
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
// Otherwise the first of these directives found in LastUserText, in this
// order, decides:
//
//	run: <cmd>               text "I'll run `<cmd>` now.", then bash
//	                         {command, description: BashDescription}
//	write: <path> <content>  write {filePath, content: the rest of the
//	                         line and a newline}
//	edit: <path> <old> => <new>
//	                         edit {filePath, oldString, newString} (old
//	                         and new may hold spaces)
//	read: <path>             read {filePath}
//	todo                     todowrite {todos: TodoArguments' two items}
//	ask                      question {questions: [QuestionArguments']}
//	think                    reasoning_content ReasoningText first, then
//	                         the answer
//	slow                     the answer in 40 deltas 100ms apart
//	fail400                  HTTP 400 invalid_request_error
//	fail500                  HTTP 500 server_error (OpenCode retries it
//	                         for ≈72 s)
//
// and without one it answers "Hello from fake model. You said:
// <LastUserText trimmed to 200 characters>", followed by " I see <n>
// image(s)." when the last user message holds n > 0 images. run:,
// write:, edit: and read: take the rest of their line, and are
// case-sensitive; the other words must stand alone (thinking is not
// think, todowrite is not todo), in any case. A relative <path> is joined
// to Request.Cwd (OpenCode's working directory, from its system prompt)
// when there is one, so the tools always get absolute paths.
func Directives() Script { return directives }

// What the default script says, for tests to compare against.
const (
	AnswerTextPrefix = "Hello from fake model. You said: " // the plain answer, then LastUserText
	FinalTextPrefix  = "Tool finished. Output was: "       // the answer after a tool, then its output
	BashDescription  = "Run the requested command"         // run:'s bash description
	ReasoningText    = "Thinking about it."                // think's reasoning
	Fail400Message   = "fake bad request"                  // fail400's error message
	Fail500Message   = "fake upstream failure"             // fail500's error message
	TodoArguments    = `{"todos":[{"id":"1","content":"first step","status":"in_progress","priority":"high"},{"id":"2","content":"second step","status":"pending","priority":"low"}]}`
	QuestionText     = "Pick a colour?"
	QuestionHeader   = "Colour"
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
		return Reply{Text: FinalTextPrefix + chunk.Echo(req.Results[0].Content)}
	}
	text := req.LastUserText
	if cmd, ok := chunk.AfterDirective(text, "run:"); ok && cmd != "" {
		return Reply{Text: RunText(cmd), Calls: []Call{call("bash", map[string]any{"command": cmd, "description": BashDescription})}}
	}
	if rest, ok := chunk.AfterDirective(text, "write:"); ok && rest != "" {
		path, content, _ := strings.Cut(rest, " ")
		return Reply{Calls: []Call{call("write", map[string]any{"filePath": abs(req, path), "content": strings.TrimSpace(content) + "\n"})}}
	}
	if rest, ok := chunk.AfterDirective(text, "edit:"); ok && rest != "" {
		path, change, _ := strings.Cut(rest, " ")
		old, new, _ := strings.Cut(change, "=>")
		return Reply{Calls: []Call{call("edit", map[string]any{"filePath": abs(req, path),
			"oldString": strings.TrimSpace(old), "newString": strings.TrimSpace(new)})}}
	}
	if path, ok := chunk.AfterDirective(text, "read:"); ok && path != "" {
		return Reply{Calls: []Call{call("read", map[string]any{"filePath": abs(req, path)})}}
	}
	words := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}) {
		words[strings.ToLower(w)] = true
	}
	answer := AnswerTextPrefix + chunk.Echo(text)
	if req.Images > 0 {
		answer += " " + ImagesText(req.Images)
	}
	switch {
	case words["todo"]:
		return Reply{Calls: []Call{{Name: "todowrite", Arguments: TodoArguments}}}
	case words["ask"]:
		return Reply{Calls: []Call{{Name: "question", Arguments: QuestionArguments}}}
	case words["think"]:
		return Reply{Reasoning: ReasoningText, Text: answer}
	case words["slow"]:
		return Reply{Text: answer, Deltas: slowDeltas, Delay: slowDelay}
	case words["fail400"]:
		return Reply{Status: http.StatusBadRequest, ErrorMessage: Fail400Message}
	case words["fail500"]:
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
