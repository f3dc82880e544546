package edge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// call sends request id with method and params and returns its answer.
func (r *raw) call(id int, method, params string) map[string]any {
	r.t.Helper()
	var line bytes.Buffer
	if err := json.Compact(&line, fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)); err != nil {
		r.t.Fatal(err)
	}
	r.send(line.String())
	return r.next(response(id))
}

// said sends a prompt and returns the text of the agent's answer.
func (r *raw) said(id int, sid, text string) string {
	r.t.Helper()
	r.send(promptLine(id, sid, text))
	var b strings.Builder
	r.next(func(m map[string]any) bool {
		if m["method"] == "session/update" {
			u := m["params"].(map[string]any)["update"].(map[string]any)
			if c, ok := u["content"].(map[string]any); ok && u["sessionUpdate"] == "agent_message_chunk" {
				b.WriteString(fmt.Sprint(c["text"]))
			}
		}
		return response(id)(m)
	})
	return b.String()
}

// An agent that takes additional directories and system prompts has them
// advertised; one that takes neither has neither.
func TestSetup_advertisedPerAgent(t *testing.T) {
	for _, c := range []struct {
		r    *raw
		want []string
		not  []string
	}{
		{startRaw(t, t.TempDir()), []string{`"additionalDirectories":{}`, `"systemPrompt":{"mode":{"override":{}}}`}, nil},
		{startRawOn(t, noticer), nil, []string{`additionalDirectories`, `systemPrompt`}},
	} {
		caps := jsonOf(t, c.r.call(1, "initialize", `{"protocolVersion":1}`)["result"])
		for _, w := range c.want {
			if !strings.Contains(caps, w) {
				t.Errorf("initialize answered %s, want %s", caps, w)
			}
		}
		for _, n := range c.not {
			if strings.Contains(caps, n) {
				t.Errorf("initialize answered %s, want no %s", caps, n)
			}
		}
	}
}

// The mock is told the directories and the system prompt a session was
// made with; session/list shows the directories; a load gets the
// directories it sends (none) and keeps the system prompt it does not
// send again; a load that sends another one gets it.
func TestSetup_toldTheAgentKeptAndListed(t *testing.T) {
	dir, lib := t.TempDir(), t.TempDir()
	r := startRaw(t, dir)
	r.call(1, "initialize", `{"protocolVersion":1}`)
	res := r.call(2, "session/new", fmt.Sprintf(`{"cwd":"/tmp","additionalDirectories":[%q],"mcpServers":[],
		"systemPrompt":{"mode":"append","content":[{"type":"text","text":"Answer tersely."},{"type":"text","text":"In French."}]}}`, lib))
	sid, _ := res["result"].(map[string]any)["sessionId"].(string)
	if sid == "" {
		t.Fatalf("session/new answered %s", jsonOf(t, res))
	}
	if got, want := r.said(3, sid, "setup"), "Working in /tmp, and in "+lib+". System prompt (append): Answer tersely.\n\nIn French."; !strings.Contains(got, want) {
		t.Errorf("the mock said %q, want %q", got, want)
	}
	list := jsonOf(t, r.call(4, "session/list", `{}`)["result"])
	if want := fmt.Sprintf(`"additionalDirectories":[%q]`, lib); !strings.Contains(list, want) {
		t.Errorf("session/list answered %s, want %s", list, want)
	}
	r.call(5, "session/close", fmt.Sprintf(`{"sessionId":%q}`, sid))

	r2 := startRaw(t, dir) // another bridge on the same store
	r2.call(1, "initialize", `{"protocolVersion":1}`)
	if res := r2.call(2, "session/load", fmt.Sprintf(`{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}`, sid)); res["error"] != nil {
		t.Fatalf("session/load answered %s", jsonOf(t, res))
	}
	if got, want := r2.said(3, sid, "setup"), "Working in /tmp. System prompt (append): Answer tersely.\n\nIn French."; !strings.Contains(got, want) {
		t.Errorf("after a load without them, the mock said %q, want %q", got, want)
	}
	if list := jsonOf(t, r2.call(4, "session/list", `{}`)["result"]); strings.Contains(list, "additionalDirectories") {
		t.Errorf("session/list answered %s, want no directories after a load that sent none", list)
	}
	// A live session loaded again with other ones takes them.
	r2.call(5, "session/load", fmt.Sprintf(`{"sessionId":%q,"cwd":"/tmp","additionalDirectories":[%q],"mcpServers":[],
		"systemPrompt":{"mode":"override","content":[{"type":"text","text":"Be a pirate."}]}}`, sid, lib))
	if got, want := r2.said(6, sid, "setup"), "Working in /tmp, and in "+lib+". System prompt (override): Be a pirate."; !strings.Contains(got, want) {
		t.Errorf("after a load with new ones, the mock said %q, want %q", got, want)
	}
	// A fork begins with the parent's system prompt and the directories it asks for.
	res = r2.call(7, "session/fork", fmt.Sprintf(`{"sessionId":%q,"cwd":"/tmp","mcpServers":[]}`, sid))
	fork, _ := res["result"].(map[string]any)["sessionId"].(string)
	if got, want := r2.said(8, fork, "setup"), "Working in /tmp. System prompt (override): Be a pirate."; !strings.Contains(got, want) {
		t.Errorf("the fork's mock said %q, want %q", got, want)
	}
}

// What the schema forbids, and what an agent can't do, is refused with
// -32602 naming what is wrong, and no session is made.
func TestSetup_badInputRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "gone")
	for _, c := range []struct {
		on            *raw
		params, wants string
	}{
		{startRaw(t, t.TempDir()), `"systemPrompt":{"mode":"append","content":[]}`, "content is empty"},
		{startRaw(t, t.TempDir()), `"systemPrompt":{"mode":"append","content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`, "content[0] is not a text block"},
		{startRaw(t, t.TempDir()), `"systemPrompt":{"mode":"_terse","content":[{"type":"text","text":"x"}]}`, "is not one acpbridge knows"},
		{startRaw(t, t.TempDir()), `"additionalDirectories":["lib"]`, `additionalDirectories: \"lib\" is not an absolute path`},
		{startRaw(t, t.TempDir()), fmt.Sprintf(`"additionalDirectories":[%q]`, missing), missing},
		{startRaw(t, t.TempDir()), fmt.Sprintf(`"additionalDirectories":[%q]`, file), file + " is not a directory"},
		{startRawOn(t, noticer), `"additionalDirectories":["/tmp"]`, "agent noticer takes no additional directories"},
		{startRawOn(t, noticer), `"systemPrompt":{"mode":"append","content":[{"type":"text","text":"x"}]}`, "agent noticer takes no system prompt in append mode"},
	} {
		r := c.on
		r.call(1, "initialize", `{"protocolVersion":1}`)
		res := r.call(2, "session/new", `{"cwd":"/tmp","mcpServers":[],`+c.params+`}`)
		e, _ := res["error"].(map[string]any)
		if got := jsonOf(t, e); e == nil || e["code"] != float64(-32602) || !strings.Contains(got, c.wants) {
			t.Errorf("session/new with %s answered %s, want -32602 saying %q", c.params, jsonOf(t, res), c.wants)
		}
		if list := jsonOf(t, r.call(3, "session/list", `{}`)["result"]); strings.Contains(list, "sessionId") {
			t.Errorf("session/new with %s made a session: %s", c.params, list)
		}
	}
}
