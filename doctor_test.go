package main

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
