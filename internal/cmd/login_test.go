package cmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogin_runsTheAgentsOwnLogin: --login runs the agent's own login on
// the terminal, then says whether its credentials can be seen.
func TestLogin_runsTheAgentsOwnLogin(t *testing.T) {
	home := t.TempDir()
	codex := filepath.Join(t.TempDir(), "codex")
	script := "#!/bin/sh\necho \"codex $*\"\nmkdir -p \"$HOME/.codex\" && echo '{}' > \"$HOME/.codex/auth.json\"\n"
	if err := os.WriteFile(codex, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("CODEX_HOME", "")
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("CODEX_API_KEY", "")
	t.Setenv("ACPBRIDGE_CODEX", codex)
	var out, errs bytes.Buffer
	if code := run([]string{"--agent", "claude", "--agent", "codex", "--login"}, strings.NewReader(""), &out, &errs); code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, errs.String())
	}
	if out.String() != "codex login\n" {
		t.Errorf("the login printed %q, want codex run as `codex login`", out.String())
	}
	if !strings.Contains(errs.String(), "Codex is logged in (credentials in "+filepath.Join(home, ".codex", "auth.json")) {
		t.Errorf("stderr:\n%s\nwant it to say the login worked", errs.String())
	}
}

func TestLogin_refused(t *testing.T) {
	t.Setenv("ACPBRIDGE_CODEX", filepath.Join(t.TempDir(), "no-codex"))
	for _, tc := range []struct{ agent, want string }{
		{"mock", "mock has no login of its own"},
		{"codex", "codex: "},
		{"nope", "nope has no login acpbridge can run"},
	} {
		var errs bytes.Buffer
		code := run([]string{"--agent", tc.agent, "--login"}, strings.NewReader(""), &bytes.Buffer{}, &errs)
		if code != 1 || !strings.Contains(errs.String(), tc.want) {
			t.Errorf("--agent %s --login: exit %d, stderr %q; want 1 and %q", tc.agent, code, errs.String(), tc.want)
		}
	}
}
