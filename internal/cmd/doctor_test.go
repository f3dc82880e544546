package cmd

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

func TestDoctor(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	for _, v := range []string{"ACPBRIDGE_CLAUDE", "ACPBRIDGE_CODEX", "ACPBRIDGE_OPENCODE", "ACPBRIDGE_AMP"} {
		t.Setenv(v, none)
	}
	state := t.TempDir()
	var out bytes.Buffer
	if code := run([]string{"doctor", "--state-dir", state}, strings.NewReader(""), &out, &out); code != 0 {
		t.Errorf("doctor with the mock as the default: exit %d\n%s", code, out.String())
	}
	for _, want := range []string{"--  claude", "ACPBRIDGE_CLAUDE", "ok  mock", "ok  state directory " + state + " (writable)", `"mock (acpbridge)"`, `"type": "custom"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), `"claude (acpbridge)"`) {
		t.Errorf("the snippet offers an agent that can't run:\n%s", out.String())
	}
	out.Reset()
	if code := run([]string{"doctor", "--agent", "amp", "--state-dir", state}, strings.NewReader(""), &out, &out); code != 1 ||
		!strings.Contains(out.String(), "The default agent (--agent amp) can't run here") {
		t.Errorf("doctor with amp missing as the default: exit %d\n%s", code, out.String())
	}
}

// An --agent nobody knows is an error that lists every value --agent
// takes, acp and auto among them, in doctor (exit 1) as at start-up; an
// agent that runs but has no credentials says so on its status line.
func TestDoctor_unknownAgentAndMissingCredentials(t *testing.T) {
	t.Setenv("ACPBRIDGE_CLAUDE", "/bin/true")
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("CLAUDE_CODE_OAUTH_TOKEN", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	t.Setenv("HOME", t.TempDir())
	var out bytes.Buffer
	code := run([]string{"doctor", "--agent", "nosuchagent", "--state-dir", t.TempDir()}, strings.NewReader(""), &out, &out)
	if code != 1 {
		t.Errorf("doctor --agent nosuchagent: exit %d, want 1\n%s", code, out.String())
	}
	for _, want := range []string{`--  --agent "nosuchagent": unknown agent`, "mock, acp (", "auto (", "ok  claude (no credentials found"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("doctor lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := run([]string{"--agent", "nosuchagent"}, strings.NewReader(""), &out, &out); code != 1 || !strings.Contains(out.String(), "acp (an ACP agent's command after --), auto (") {
		t.Errorf("acpbridge --agent nosuchagent: exit %d\n%s", code, out.String())
	}
}
