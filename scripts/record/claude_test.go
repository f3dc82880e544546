package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestClaudeRewriter(t *testing.T) {
	rw := claudeRewriter([]string{"/tmp/rc-1/project", "/private/tmp/rc-1/project"}, []string{"/tmp/rc-1", "/private/tmp/rc-1"})
	for in, want := range map[string]string{
		`{"cwd":"/tmp/rc-1/project","x":"/tmp/rc-1/project/a.txt"}`:             `{"cwd":"/home/dev/project","x":"/home/dev/project/a.txt"}`,
		`"/tmp/rc-1/.claude/projects/-tmp-rc-1-project/s.jsonl"`:                `"/home/dev/.claude/projects/-home-dev-project/s.jsonl"`,
		`"memory":"/tmp/rc-1/.claude/projects/-tmp-rc-1-project/memory/"`:       `"memory":"/home/dev/.claude/projects/-home-dev-project/memory/"`,
		`/private/tmp/rc-1/project and /private/tmp/rc-1 and -private-tmp-rc-1`: `/home/dev/project and /home/dev and -home-dev`,
		`nothing to see`: `nothing to see`,
	} {
		if got := rw.Rewrite(in); got != want {
			t.Errorf("rewrite(%s)\n got %s\nwant %s", in, got, want)
		}
	}
}

func TestClaudeSlug(t *testing.T) {
	if got := slug("/home/dev/my_project.v2"); got != "-home-dev-my-project-v2" {
		t.Errorf("slug = %q", got)
	}
}

func TestClaudeAnswer(t *testing.T) {
	got := roundTrip(t, claudeAnswer("r1", json.RawMessage(`{"subtype":"can_use_tool","tool_name":"Bash","input":{"command":"ls"}}`)))
	want := map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": "r1",
		"response": map[string]any{"behavior": "allow", "updatedInput": map[string]any{"command": "ls"}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("can_use_tool: %v", got)
	}
	got = roundTrip(t, claudeAnswer("r2", json.RawMessage(`{"subtype":"hook_callback","callback_id":"hook_0","input":{}}`)))
	want = map[string]any{"type": "control_response", "response": map[string]any{"subtype": "success", "request_id": "r2",
		"response": map[string]any{"continue": true}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hook_callback: %v", got)
	}
	got = roundTrip(t, claudeAnswer("r3", json.RawMessage(`{"subtype":"mcp_message"}`)))
	if r := got["response"].(map[string]any); r["subtype"] != "error" || r["request_id"] != "r3" || r["error"] == "" {
		t.Errorf("mcp_message: %v", got)
	}
}

func TestClaudeUsage(t *testing.T) {
	var stderr bytes.Buffer
	if code := runClaude(nil, &stderr); code != 2 || !strings.Contains(stderr.String(), "usage:") {
		t.Errorf("no args: exit %d, stderr %q", code, stderr.String())
	}
	if code := runClaude([]string{"-o", "x.jsonl"}, &stderr); code != 2 {
		t.Errorf("no prompt: exit %d", code)
	}
}

// claudeBin is the real CLI, as the recorder finds it, or a skip.
func claudeBin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("SKIPPED: real Claude CLI tests do not run with -short")
	}
	p, err := findClaude()
	if err == nil {
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	if os.Getenv("ACPBRIDGE_REQUIRE_E2E") == "1" {
		t.Fatalf("%v, and ACPBRIDGE_REQUIRE_E2E=1", err)
	}
	t.Skipf("SKIPPED: %v", err)
	return ""
}

// TestClaudeRecord records two turns with the real CLI and checks the file.
func TestClaudeRecord(t *testing.T) {
	bin := claudeBin(t)
	out := filepath.Join(t.TempDir(), "rec.jsonl")
	var stderr bytes.Buffer
	code := runClaude([]string{"-o", out, "-claude", bin, "WRITE_FILE: /home/dev/project/n.txt hi there", "Say hello"}, &stderr)
	t.Logf("stderr:\n%s", stderr.String())
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(os.TempDir())) {
		t.Errorf("the recording still holds a temporary path (%s)", os.TempDir())
	}
	checkClaudeRecording(t, b)
}

// checkClaudeRecording checks recording b: the initialize response
// first, the recorded working directory in init, the permission request
// for the file written with its recorded path, and both turns' results.
func checkClaudeRecording(t *testing.T, b []byte) {
	t.Helper()
	var types, results []string
	sawCwd, sawPermission := false, false
	for l := range bytes.Lines(b) {
		var m map[string]any
		if err := json.Unmarshal(l, &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		types = append(types, m["type"].(string))
		switch m["type"] {
		case "system":
			sawCwd = sawCwd || m["subtype"] == "init" && m["cwd"] == recordedCwd
		case "control_request":
			r := m["request"].(map[string]any)
			sawPermission = sawPermission || r["subtype"] == "can_use_tool" && r["input"].(map[string]any)["file_path"] == "/home/dev/project/n.txt"
		case "result":
			results = append(results, m["result"].(string))
		}
	}
	if types[0] != "control_response" {
		t.Errorf("first line is a %s, want the initialize control_response", types[0])
	}
	if !sawCwd || !sawPermission {
		t.Errorf("init with cwd %s: %v; can_use_tool for Write of /home/dev/project/n.txt: %v", recordedCwd, sawCwd, sawPermission)
	}
	if len(results) != 2 || !strings.HasPrefix(results[0], "Tool finished. Result was: File created successfully at: /home/dev/project/n.txt") ||
		results[1] != "Hello from fake model. You said: Say hello" {
		t.Errorf("results %q", results)
	}
}
