package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/translators/codex/fakeresponses"
)

func TestCodexRewriter(t *testing.T) {
	rw := codexRewriter(
		[]string{"/tmp/rc-1/project", "/private/tmp/rc-1/project"},
		[]string{"/tmp/rc-1/.codex", "/private/tmp/rc-1/.codex"},
		[]string{"/tmp/rc-1", "/private/tmp/rc-1"})
	for in, want := range map[string]string{
		`{"cwd":"/tmp/rc-1/project","x":"/tmp/rc-1/project/a.txt"}`:            `{"cwd":"/home/dev/project","x":"/home/dev/project/a.txt"}`,
		`"path":"/tmp/rc-1/.codex/sessions/2026/11/21/rollout-x.jsonl"`:        `"path":"/home/dev/.codex/sessions/2026/11/21/rollout-x.jsonl"`,
		`"codexHome":"/private/tmp/rc-1/.codex","tmp":"/private/tmp/rc-1/tmp"`: `"codexHome":"/home/dev/.codex","tmp":"/home/dev/tmp"`,
		`nothing to see`: `nothing to see`,
	} {
		if got := rw.Rewrite(in); got != want {
			t.Errorf("rewrite(%s)\n got %s\nwant %s", in, got, want)
		}
	}
}

func TestCodexAnswer(t *testing.T) {
	for _, tc := range []struct {
		method, decision string
		want             map[string]any
	}{
		{"item/commandExecution/requestApproval", "accept", map[string]any{"id": float64(0), "result": map[string]any{"decision": "accept"}}},
		{"item/fileChange/requestApproval", "decline", map[string]any{"id": float64(0), "result": map[string]any{"decision": "decline"}}},
		{"execCommandApproval", "accept", map[string]any{"id": float64(0), "result": map[string]any{"decision": "approved"}}},
		{"applyPatchApproval", "cancel", map[string]any{"id": float64(0), "result": map[string]any{"decision": "abort"}}},
	} {
		if got := roundTrip(t, codexAnswer(json.RawMessage("0"), tc.method, tc.decision)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %s: %v", tc.method, tc.decision, got)
		}
	}
	got := roundTrip(t, codexAnswer(json.RawMessage(`"x"`), "item/tool/requestUserInput", "accept"))
	if e, _ := got["error"].(map[string]any); got["id"] != "x" || e["code"] != float64(-32601) {
		t.Errorf("other request: %v", got)
	}
}

func TestCodexFlags(t *testing.T) {
	var stderr bytes.Buffer
	if _, err := parseCodexFlags([]string{"hello"}, &stderr); err == nil {
		t.Error("no -o: no error")
	}
	o, err := parseCodexFlags([]string{"-o", "x.jsonl", "-approval", "never", "-args", "-c a=1", "p1", "p2"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.out != "x.jsonl" || o.approval != "never" || o.sandbox != "danger-full-access" || o.decision != "accept" ||
		!reflect.DeepEqual(o.extra, []string{"-c", "a=1"}) || !reflect.DeepEqual(o.prompts, []string{"p1", "p2"}) {
		t.Errorf("options %+v", o)
	}
}

// TestCodexRecord records two turns with the real codex.
func TestCodexRecord(t *testing.T) {
	bin := fakeresponses.CodexBin(t)
	out := filepath.Join(t.TempDir(), "out.jsonl")
	reqs := filepath.Join(t.TempDir(), "reqs.json")
	var stderr bytes.Buffer
	o := codexOptions{codex: bin, approval: "untrusted", sandbox: "danger-full-access", decision: "accept", clientName: "acpbridge",
		common: common{out: out, timeout: 30e9, requests: reqs, prompts: []string{"run: mkdir -p /home/dev/project/made && echo made", "planupdate"}}}
	if err := recordCodex(o, &stderr); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr.String())
	}
	checkCodexRecording(t, out)
	b, err := os.ReadFile(reqs)
	if err != nil || !strings.Contains(string(b), "/home/dev/project") {
		t.Errorf("requests file: %v", err)
	}
	if !strings.Contains(stderr.String(), "initialize answered") {
		t.Errorf("stderr:\n%s", stderr.String())
	}
}

// recordedCodexLine is what TestCodexRecord checks of a recorded line.
type recordedCodexLine struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Turn struct{ Status string }
		Item struct {
			Type, Command, Cwd string
		}
	} `json:"params"`
}

// checkCodexRecording checks the recording at path: the initialize
// response first, an approval, a plan update, two completed turns, and
// the recorded paths instead of the temporary ones.
func checkCodexRecording(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var methods, completed []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		m := checkCodexLine(t, sc.Text())
		methods = append(methods, m.Method)
		if m.Method == "turn/completed" {
			completed = append(completed, m.Params.Turn.Status)
		}
	}
	all := strings.Join(methods, " ")
	for _, want := range []string{"item/commandExecution/requestApproval", "serverRequest/resolved", "turn/plan/updated"} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s in %s", want, all)
		}
	}
	if !reflect.DeepEqual(completed, []string{"completed", "completed"}) {
		t.Errorf("turns %v", completed)
	}
	if methods[0] != "" {
		t.Errorf("the first line is %s, want the initialize response", methods[0])
	}
}

// checkCodexLine decodes a recorded line and checks that it has no
// temporary path, and a command item the recorded working directory.
func checkCodexLine(t *testing.T, line string) recordedCodexLine {
	t.Helper()
	var m recordedCodexLine
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("not JSON: %s", line)
	}
	if strings.Contains(line, os.TempDir()+"/recordcodex-") {
		t.Errorf("temporary path left in %s", line)
	}
	if m.Method == "item/completed" && m.Params.Item.Type == "commandExecution" {
		if m.Params.Item.Cwd != "/home/dev/project" || !strings.Contains(m.Params.Item.Command, "/home/dev/project/made") {
			t.Errorf("command item %s", line)
		}
	}
	return m
}
