package claude

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/daemontest"
)

// TestMain lets the test binary play the claude CLI when FAKE_CLAUDE is
// set: a scripted stream-json peer for process faults that the real CLI
// can't be made to show on demand.
func TestMain(m *testing.M) {
	daemontest.KeepFromHere() // of the shared spares
	if os.Getenv("FAKE_CLAUDE") != "" {
		fakeClaude()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// fake is the scripted CLI's state.
type fake struct {
	out     *json.Encoder
	in      *bufio.Scanner
	session string
	turns   int
}

func fakeClaude() {
	if f := os.Getenv("FAKE_CLAUDE_ARGS"); f != "" {
		os.WriteFile(f, []byte(strings.Join(os.Args[1:], " ")), 0o600)
	}
	if os.Getenv("FAKE_CLAUDE_REFUSE_BYPASS") != "" && slices.Contains(os.Args, "--allow-dangerously-skip-permissions") {
		fmt.Fprintln(os.Stderr, "--dangerously-skip-permissions cannot be used with root/sudo privileges for security reasons")
		os.Exit(1)
	}
	f := &fake{out: json.NewEncoder(os.Stdout), in: bufio.NewScanner(os.Stdin), session: "fake-session-1"}
	for i, a := range os.Args {
		if a == "--resume" && i+1 < len(os.Args) {
			f.session = os.Args[i+1]
		}
	}
	f.in.Buffer(nil, 1<<20)
	for f.in.Scan() {
		f.handle(f.in.Bytes())
	}
}

func (f *fake) send(v map[string]any) { f.out.Encode(v) }

func (f *fake) handle(line []byte) {
	var msg struct {
		Type      string         `json:"type"`
		RequestID string         `json:"request_id"`
		Request   map[string]any `json:"request"`
		Message   struct {
			Content []map[string]any `json:"content"`
		} `json:"message"`
	}
	json.Unmarshal(line, &msg)
	switch msg.Type {
	case "control_request":
		f.control(msg.RequestID, msg.Request)
	case "user":
		text, _ := msg.Message.Content[0]["text"].(string)
		f.turn(text)
	}
}

func (f *fake) control(id string, req map[string]any) {
	resp := map[string]any{}
	switch req["subtype"] {
	case "initialize":
		resp = map[string]any{"commands": []any{map[string]any{"name": "review", "description": "Review code", "argumentHint": "[target]"}},
			"models": []any{map[string]any{"value": "default", "displayName": "Default", "resolvedModel": "fake-model-1"},
				map[string]any{"value": "fake-fast", "displayName": "Fake Fast", "resolvedModel": "fake-fast-1"}}}
	case "set_permission_mode":
		resp = map[string]any{"mode": req["mode"]}
	}
	f.send(map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": id, "response": resp}})
}

// turn plays one turn; words in the prompt pick the script.
func (f *fake) turn(text string) {
	f.turns++
	model := os.Getenv("FAKE_CLAUDE_MODEL") // as if set in Claude's settings
	if model == "" {
		model = "fake-model-1"
	}
	f.send(map[string]any{"type": "system", "subtype": "init", "session_id": f.session, "model": model, "permissionMode": "default", "slash_commands": []string{"review"}})
	switch {
	case strings.Contains(text, "crash"):
		f.delta("partial answer")
		fmt.Fprintln(os.Stderr, "fake claude: boom")
		os.Exit(3)
	case strings.Contains(text, "garbage"):
		fmt.Println("this is not json")
		f.delta("still fine")
	case strings.Contains(text, "bash"):
		f.bash()
	case strings.Contains(text, "slow"):
		f.slow()
		return
	case os.Getenv("FAKE_CLAUDE_REPLAY") != "":
		f.replay(os.Getenv("FAKE_CLAUDE_REPLAY"))
		return
	case strings.Contains(text, "autherr"):
		f.send(map[string]any{"type": "result", "subtype": "success", "is_error": true, "api_error_status": 401,
			"result": "Invalid API key · Please run /login", "session_id": f.session})
		return
	default:
		f.delta(fmt.Sprintf("turn %d: %s", f.turns, text))
	}
	f.result("success")
}

func (f *fake) delta(text string) {
	f.send(map[string]any{"type": "stream_event", "event": map[string]any{"type": "message_start", "message": map[string]any{"id": fmt.Sprintf("msg_%d", f.turns)}}})
	f.send(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": text}}})
	f.send(map[string]any{"type": "assistant", "message": map[string]any{"id": fmt.Sprintf("msg_%d", f.turns), "content": []any{map[string]any{"type": "text", "text": text}}}})
}

func (f *fake) result(subtype string) {
	f.send(map[string]any{"type": "result", "subtype": subtype, "is_error": subtype != "success", "session_id": f.session,
		"stop_reason": "end_turn", "total_cost_usd": 0.01, "usage": map[string]any{"input_tokens": 10, "output_tokens": 5},
		"modelUsage": map[string]any{"fake": map[string]any{"contextWindow": 200000}}})
}

// bash asks permission for a Bash call and runs it (pretends to) if allowed.
func (f *fake) bash() {
	input := map[string]any{"command": "echo hi", "description": "Say hi"}
	f.send(map[string]any{"type": "assistant", "message": map[string]any{"id": "msg_b", "content": []any{map[string]any{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": input}}}})
	f.send(map[string]any{"type": "control_request", "request_id": "ask-1", "request": map[string]any{"subtype": "can_use_tool", "tool_name": "Bash", "input": input, "tool_use_id": "toolu_1",
		"permission_suggestions": []any{map[string]any{"type": "addRules", "behavior": "allow", "destination": "localSettings", "rules": []any{map[string]any{"toolName": "Bash", "ruleContent": "echo hi"}}}}}})
	answer := f.await("ask-1")
	behavior, _ := answer["behavior"].(string)
	result := map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}
	if behavior != "allow" || answer["updatedInput"] == nil {
		result["content"], result["is_error"] = "denied: "+fmt.Sprint(answer["message"]), true
	} else if answer["updatedPermissions"] != nil {
		result["content"] = "hi (always)"
	}
	f.send(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": []any{result}}})
	f.delta("done")
}

// replay prints a recorded turn (scripts/record's output): every line but
// the recorded control responses, each control request's answer awaited
// before the next line. The recorded turn's result ends the turn.
func (f *fake) replay(file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake claude:", err)
		os.Exit(2)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var msg struct {
			Type      string `json:"type"`
			Subtype   string `json:"subtype"`
			RequestID string `json:"request_id"`
		}
		json.Unmarshal([]byte(line), &msg)
		switch {
		case msg.Type == "control_response", msg.Type == "system" && msg.Subtype == "init": // turn sent its own init
			continue
		}
		fmt.Println(line)
		if msg.Type == "control_request" {
			f.await(msg.RequestID)
		}
	}
}

// await reads stdin until the control_response to id.
func (f *fake) await(id string) map[string]any {
	for f.in.Scan() {
		var msg struct {
			Type     string `json:"type"`
			Response struct {
				RequestID string         `json:"request_id"`
				Response  map[string]any `json:"response"`
			} `json:"response"`
		}
		json.Unmarshal(f.in.Bytes(), &msg)
		if msg.Type == "control_response" && msg.Response.RequestID == id {
			return msg.Response.Response
		}
		f.handle(f.in.Bytes())
	}
	os.Exit(0)
	return nil
}

// slow streams until interrupted, then ends the turn aborted.
func (f *fake) slow() {
	lines := make(chan []byte)
	go func() {
		for f.in.Scan() {
			lines <- append([]byte(nil), f.in.Bytes()...)
		}
		close(lines)
	}()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				os.Exit(0)
			}
			var msg struct {
				Type      string         `json:"type"`
				RequestID string         `json:"request_id"`
				Request   map[string]any `json:"request"`
			}
			json.Unmarshal(l, &msg)
			if msg.Type == "control_request" && msg.Request["subtype"] == "interrupt" {
				f.control(msg.RequestID, msg.Request)
				f.send(map[string]any{"type": "result", "subtype": "error_during_execution", "is_error": true, "session_id": f.session, "terminal_reason": "aborted_streaming"})
				for l := range lines { // back to normal turns
					f.handle(l)
				}
				os.Exit(0)
			}
		case <-tick.C:
			f.send(map[string]any{"type": "stream_event", "event": map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": "."}}})
		}
	}
}
