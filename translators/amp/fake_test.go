package amp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary play amp when FAKE_AMP is set, and
// acpbridge's permission delegate when amp runs it.
func TestMain(m *testing.M) {
	switch {
	case len(os.Args) > 1 && os.Args[1] == DelegateCommand:
		os.Exit(RunDelegate(os.Stdin, os.Stderr))
	case os.Getenv("FAKE_AMP") != "":
		os.Exit(fakeAmp(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// fakeBuiltin is the fake's built-in permission rules: ls is allowed,
// other commands are asked about, edits allowed.
const fakeBuiltin = `[{"tool":"Bash","action":"allow","matches":{"cmd":["ls","ls *"]}},{"tool":"Bash","action":"ask"},{"tool":"edit_file","action":"allow"}]`

// fake is one run of the fake amp.
type fake struct {
	args     []string
	thread   string
	thinking bool
	allowAll bool
	settings string
	out      *json.Encoder
	parent   any // the lines' parent_tool_use_id: a Task's, while its subagent works
}

// fakeAmp plays amp as the pinned CLI (@ampcode/cli 0.0.1790142911)
// behaves: the thread commands, one turn per process with the prompt on
// stdin (--stream-json-input), and the result line only once stdin ends.
// The prompt's first word picks what the turn does.
func fakeAmp(args []string) int {
	if f := os.Getenv("FAKE_AMP_ARGS"); f != "" {
		log, _ := os.OpenFile(f, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		fmt.Fprintln(log, strings.Join(args, " "))
		log.Close()
	}
	if strings.Join(args, " ") == "permissions list --builtin --json" {
		fmt.Println(fakeBuiltin)
		return 0
	}
	f := &fake{args: args, thread: "T-fake-new", out: json.NewEncoder(os.Stdout)}
	if !f.parse() {
		return 1
	}
	prompt, images, err := readPrompt()
	if err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		return 1
	}
	return f.turn(prompt, images)
}

// parse reads the command line; it fails as amp does without the flags a
// stream-json-input turn needs.
func (f *fake) parse() bool {
	has := map[string]bool{}
	for i, a := range f.args {
		has[a] = true
		switch {
		case a == "continue" && i+1 < len(f.args):
			f.thread = f.args[i+1]
		case a == "--settings-file" && i+1 < len(f.args):
			f.settings = f.args[i+1]
		}
	}
	f.thinking, f.allowAll = has["--stream-json-thinking"], has["--dangerously-allow-all"]
	for _, need := range []string{"--execute", "--stream-json", "--stream-json-input"} {
		if !has[need] {
			fmt.Fprintf(os.Stderr, "Error: fake amp wants %s\n", need)
			return false
		}
	}
	return true
}

// readPrompt reads stdin to its end, as amp's --stream-json-input does,
// checking each line as amp does.
func readPrompt() (text string, images int, err error) {
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var msg struct {
			Type    string `json:"type"`
			Message struct {
				Content []map[string]any `json:"content"`
			} `json:"message"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.Type != "user" {
			return "", 0, fmt.Errorf("invalid stream JSON input: %s", sc.Text())
		}
		for _, b := range msg.Message.Content {
			switch b["type"] {
			case "text":
				s, _ := b["text"].(string)
				text += s
			case "image":
				images++
			}
		}
	}
	if images > 4 {
		return "", 0, fmt.Errorf("too many images")
	}
	return text, images, nil
}

func (f *fake) send(v map[string]any) { f.out.Encode(v) }

func (f *fake) assistant(stop string, blocks ...map[string]any) {
	f.send(map[string]any{"type": "assistant", "session_id": f.thread, "parent_tool_use_id": f.parent,
		"message": map[string]any{"type": "message", "role": "assistant", "content": blocks, "stop_reason": stop,
			"usage": map[string]any{"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0}}})
}

func (f *fake) result(errText string) {
	if errText == "" {
		f.send(map[string]any{"type": "result", "subtype": "success", "is_error": false, "num_turns": 1, "result": "done", "session_id": f.thread})
		return
	}
	f.send(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "num_turns": 1, "error": errText, "session_id": f.thread})
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

func (f *fake) turn(prompt string, images int) int {
	word, rest, _ := strings.Cut(prompt, " ")
	switch word {
	case "login":
		fmt.Print("No API key found. Starting login flow...\nIf your browser does not open automatically, visit:\n\nhttps://ampcode.com/auth/cli-login?authToken=x\n\nWhen prompted, paste your code here: ")
		time.Sleep(time.Minute)
		return 1
	case "offline":
		fmt.Fprintln(os.Stderr, "Error: Couldn't connect to the Amp server at https://ampcode.com/.")
		return 1
	case "silent":
		time.Sleep(time.Minute)
		return 0
	}
	if f.thread == "T-fake-new" {
		f.thread = "T-fake-1"
	}
	f.send(map[string]any{"type": "system", "subtype": "init", "cwd": mustGetwd(), "session_id": f.thread, "tools": []string{"Bash", "edit_file"}, "agent_mode": "medium"})
	f.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{text(prompt)}}, "parent_tool_use_id": nil, "session_id": f.thread})
	switch word {
	case "crash":
		fmt.Fprintln(os.Stderr, "boom: the fake crashed")
		return 3
	case "approval":
		f.result("The following tools require user approval, which is not supported in stream JSON mode: Bash")
		return 0
	case "unauthorized":
		f.result("Unauthorized: invalid API key")
		return 0
	case "sleep":
		return f.sleep()
	case "garbage":
		fmt.Println("this is not json")
		fmt.Println(`{"type":"assistant","message":{"content":[{"type":"tool_use","input":"not an object"}]}}`)
		fmt.Println(`{"type":`)
	case "bash":
		if !f.bash("toolu_bash", rest) {
			return 0
		}
	case "task", "task-lines":
		if !f.task(rest, word == "task-lines") {
			return 0
		}
	}
	blocks := []map[string]any{text(fmt.Sprintf("echo: %s (thread %s, %d images)", prompt, f.thread, images))}
	if f.thinking {
		blocks = append([]map[string]any{{"type": "thinking", "thinking": "thinking about " + word}}, blocks...)
	}
	f.assistant("end_turn", blocks...)
	f.result("")
	return 0
}

func mustGetwd() string {
	wd, _ := os.Getwd()
	return wd
}

// sleep waits for a signal, as a long turn would, and ends cancelled.
func (f *fake) sleep() int {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	select {
	case <-sig:
		f.result("User cancelled (SIGINT/SIGTERM)")
	case <-time.After(time.Minute):
	}
	return 0
}

// Task's input and its subagent's answer, for "task <cmd>".
const (
	fakeTaskDescription = "Run the command"
	fakeTaskAnswer      = "The subagent ran it."
)

// task runs a Task whose subagent runs cmd (bash): with lines, the
// subagent's lines are printed, with the Task's parent_tool_use_id, as
// the amp SDK's types declare them; without, they are not, as the pinned
// CLI drops them. It reports whether the turn goes on.
func (f *fake) task(cmd string, lines bool) bool {
	f.assistant("tool_use", map[string]any{"type": "tool_use", "id": "toolu_task", "name": "Task",
		"input": map[string]any{"description": fakeTaskDescription, "prompt": "bash " + cmd}})
	if lines {
		f.parent = "toolu_task"
		if !f.bash("toolu_sub_bash", cmd) {
			return false
		}
		f.assistant("end_turn", text(fakeTaskAnswer))
		f.parent = nil
	}
	result := map[string]any{"type": "tool_result", "tool_use_id": "toolu_task", "content": fakeTaskAnswer, "is_error": false}
	f.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{result}}, "parent_tool_use_id": nil, "session_id": f.thread})
	return true
}

// bash runs a Bash tool_use (id) through the permission rules, as amp
// does; it reports whether the turn goes on.
func (f *fake) bash(id, cmd string) bool {
	f.assistant("tool_use", map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": map[string]any{"cmd": cmd}})
	action, to := "allow", ""
	if !f.allowAll {
		action, to = f.rule("Bash", cmd)
	}
	result := map[string]any{"type": "tool_result", "tool_use_id": id, "content": `{"output":"ran ` + cmd + `","exitCode":0}`, "is_error": false}
	switch action {
	case "ask":
		f.result("The following tools require user approval, which is not supported in stream JSON mode: Bash")
		return false
	case "delegate":
		if msg, ok := f.delegate(to, id, "Bash", map[string]any{"cmd": cmd}); !ok {
			result["content"], result["is_error"] = msg, true
		}
	case "reject":
		result["content"], result["is_error"] = "rejected by a rule", true
	}
	f.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{result}}, "parent_tool_use_id": f.parent, "session_id": f.thread})
	return true
}

// rule is the first of the settings file's rules that matches (then the
// built-in ones), as amp evaluates them.
func (f *fake) rule(tool, cmd string) (action, to string) {
	var settings struct {
		Rules []rule `json:"amp.permissions"`
	}
	if f.settings != "" {
		data, _ := os.ReadFile(f.settings)
		json.Unmarshal(data, &settings)
	}
	var builtin []rule
	json.Unmarshal([]byte(fakeBuiltin), &builtin)
	for _, r := range append(settings.Rules, builtin...) {
		if r.Tool == tool && matches(r.Matches, cmd) {
			return r.Action, r.To
		}
	}
	return "allow", ""
}

func matches(raw json.RawMessage, cmd string) bool {
	if len(raw) == 0 {
		return true
	}
	var m struct {
		Cmd any `json:"cmd"`
	}
	json.Unmarshal(raw, &m)
	var pats []string
	switch v := m.Cmd.(type) {
	case string:
		pats = []string{v}
	case []any:
		for _, p := range v {
			s, _ := p.(string)
			pats = append(pats, s)
		}
	}
	for _, p := range pats {
		if ok, _ := path.Match(p, cmd); ok {
			return true
		}
	}
	return false
}

// delegate runs a delegate rule's program as amp does: no arguments, the
// input on stdin, the tool in the environment, 10 s at most.
func (f *fake) delegate(to, id, tool string, input map[string]any) (string, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, to)
	in, _ := json.Marshal(input)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), "AGENT=amp", "AMP_THREAD_ID="+f.thread, "AGENT_TOOL_NAME="+tool, "AGENT_TOOL_USE_ID="+id)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return strings.TrimSpace(stderr.String()), false
	}
	return "", true
}
