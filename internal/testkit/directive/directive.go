// Package directive is the one prompt vocabulary of the fake model APIs
// (fakemessages for claude, fakeresponses for codex, fakechat for
// opencode): words a test puts in its prompt to say what the fake model
// answers. Every directive is lowercase and case-sensitive: Think, THINK
// and RUN: are plain text.
//
// A line directive is its name and a colon, anywhere in the prompt; it
// takes the rest of that line, trimmed. A word directive must stand alone
// as a word (a run of letters, digits and '_': thinking is not think,
// todowrite is not todo).
//
//	delegate: <prompt>           hand prompt to a subagent (its own requests answer
//	                             prompt's directives; so delegate: comes first)
//	tell: <message>              send a message to the subagent the conversation last
//	                             named (its agent id)
//	run: <command>               run a shell command
//	write: <path> <content>      write content (the rest of the line, may be empty) to path
//	edit: <path> <old> => <new>  replace old by new in path (old and new may hold spaces)
//	read: <path>                 read path
//	exitplan                     leave plan mode with a plan
//	ask                          ask the user a question with options
//	todo                         set a todo list (a plan)
//	think                        think, then answer
//	slow                         answer in many pieces, slowly (for cancel tests)
//	fail400, fail401, fail500    the API answers with that HTTP status and an error body
//	fail529                      the API answers 529, overloaded (Anthropic's)
//
// Which fake knows which, and the tool it calls:
//
//	           fakemessages (claude)         fakeresponses (codex)       fakechat (opencode)
//	delegate:  Agent (general-purpose)       spawn_agent, wait_agent     task (general)
//	tell:      SendMessage                   -                           -
//	run:       Bash                          its shell tool              bash
//	write:     Write                         apply_patch Add File        write
//	edit:      Edit                          apply_patch Update File     edit
//	read:      -                             -                           read
//	exitplan   ExitPlanMode                  -                           -
//	ask        AskUserQuestion               -                           question
//	todo       TaskCreate, then TaskUpdate   update_plan                 todowrite
//	think      a thinking block              a reasoning item            reasoning_content
//	slow       yes                           yes                         yes
//	fail400    -                             -                           yes
//	fail401    yes                           -                           -
//	fail500    yes                           yes                         yes
//	fail529    yes                           -                           -
//
// A fake takes the first directive, in the order of this table, that it
// knows (Find); the others are plain text to it. Without one it answers
// Plain(prompt): "Hello from fake model. You said: <prompt>". Each fake's
// Directives documents what exactly it answers, and what it answers once
// a tool has run.
package directive

import (
	"strings"
	"unicode"
)

// Name is a directive's name: what a prompt says, less the colon of a
// line directive.
type Name string

// The vocabulary, in the order Find tries it.
const (
	Delegate Name = "delegate"
	Tell     Name = "tell"
	Run      Name = "run"
	Write    Name = "write"
	Edit     Name = "edit"
	Read     Name = "read"
	ExitPlan Name = "exitplan"
	Ask      Name = "ask"
	Todo     Name = "todo"
	Think    Name = "think"
	Slow     Name = "slow"
	Fail400  Name = "fail400"
	Fail401  Name = "fail401"
	Fail500  Name = "fail500"
	Fail529  Name = "fail529"
)

var (
	lines = []Name{Delegate, Tell, Run, Write, Edit, Read}
	words = []Name{ExitPlan, Ask, Todo, Think, Slow, Fail400, Fail401, Fail500, Fail529}
)

// Directive is the directive a prompt carries, with its arguments.
type Directive struct {
	Name    Name
	Command string // run: the rest of the line; delegate: the subagent's prompt; tell: the message
	Path    string // write, edit, read: the first word after the colon
	Content string // write: the rest of the line after Path
	Old     string // edit: what comes before "=>", after Path, trimmed
	New     string // edit: what comes after "=>", trimmed
}

// Find returns the first directive in text, in the vocabulary's order,
// that is one of known; false if there is none. A line directive whose
// line lacks what it needs (a command, a path, edit's "=>") is not there.
func Find(text string, known ...Name) (Directive, bool) {
	has := func(n Name) bool {
		for _, k := range known {
			if k == n {
				return true
			}
		}
		return false
	}
	for _, n := range lines {
		if !has(n) {
			continue
		}
		if d, ok := line(text, n); ok {
			return d, true
		}
	}
	inText := map[string]bool{}
	for _, w := range strings.FieldsFunc(text, func(r rune) bool {
		return !(r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r))
	}) {
		inText[w] = true
	}
	for _, n := range words {
		if has(n) && inText[string(n)] {
			return Directive{Name: n}, true
		}
	}
	return Directive{}, false
}

// line parses the line directive n in text.
func line(text string, n Name) (Directive, bool) {
	i := strings.Index(text, string(n)+":")
	if i < 0 {
		return Directive{}, false
	}
	rest, _, _ := strings.Cut(text[i+len(n)+1:], "\n")
	rest = strings.TrimSpace(rest)
	if rest == "" {
		return Directive{}, false
	}
	d := Directive{Name: n}
	path, after, _ := strings.Cut(rest, " ")
	switch n {
	case Run, Delegate, Tell:
		d.Command = rest
	case Write:
		d.Path, d.Content = path, strings.TrimSpace(after)
	case Edit:
		old, new, ok := strings.Cut(after, "=>")
		if !ok {
			return Directive{}, false
		}
		d.Path, d.Old, d.New = path, strings.TrimSpace(old), strings.TrimSpace(new)
	case Read:
		d.Path = rest
	}
	return d, true
}

// MaxEcho is how many runes of a prompt a fake model echoes back.
const MaxEcho = 200

// AnswerPrefix starts a fake's answer to a prompt without a directive.
const AnswerPrefix = "Hello from fake model. You said: "

// Plain is a fake's answer to a prompt without a directive.
func Plain(text string) string { return AnswerPrefix + Echo(text) }

// Echo trims space around s and cuts it to MaxEcho runes, as a fake model
// repeats what it was told.
func Echo(s string) string {
	s = strings.TrimSpace(s)
	n := 0
	for i := range s {
		if n == MaxEcho {
			return s[:i]
		}
		n++
	}
	return s
}
