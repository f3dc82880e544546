package claude

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
)

// Claude Code's own rule: as root, only IS_SANDBOX=1 exactly or a true
// CLAUDE_CODE_BUBBLEWRAP; anyone else, always.
func TestBypassAllowed_isClaudesRule(t *testing.T) {
	for _, c := range []struct {
		root bool
		env  []string
		want bool
	}{
		{false, nil, true},
		{true, nil, false},
		{true, []string{"IS_SANDBOX=1"}, true},
		{true, []string{"IS_SANDBOX=yes"}, false},
		{true, []string{"IS_SANDBOX=true"}, false},
		{true, []string{"IS_SANDBOX=1", "IS_SANDBOX=0"}, false},
		{true, []string{"CLAUDE_CODE_BUBBLEWRAP=True"}, true},
		{true, []string{"CLAUDE_CODE_BUBBLEWRAP=0"}, false},
	} {
		if got := bypassAllowed(c.root, c.env); got != c.want {
			t.Errorf("bypassAllowed(root %v, %q) = %v, want %v", c.root, c.env, got, c.want)
		}
	}
}

// A CLI that refuses to start over --allow-dangerously-skip-permissions is
// started again without it, and the session no longer offers
// bypassPermissions; the prompt runs.
func TestSession_refusedBypassStartsWithout(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the CLI refuses the flag only as root")
	}
	ev := nativetest.NewRecorder("allow")
	n, args := openFake(t, agent.OpenOptions{}, ev, "IS_SANDBOX=1", "FAKE_CLAUDE_REFUSE_BYPASS=1")
	res, err := prompt(t, n, "hello")
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("turn after the refusal: %+v, %v", res, err)
	}
	if got, _ := os.ReadFile(args); strings.Contains(string(got), "--allow-dangerously-skip-permissions") {
		t.Errorf("the CLI that ran was started with the refused flag: %s", got)
	}
	var values []string
	for _, c := range option(n, agent.ConfigMode).Choices {
		values = append(values, c.Value)
	}
	if slices.Contains(values, "bypassPermissions") {
		t.Errorf("modes after the refusal still offer bypassPermissions: %v", values)
	}
	if strings.Contains(ev.JSON(), `"sessionUpdate":"notice"`) {
		t.Errorf("a session not in bypassPermissions was told it was refused:\n%s", ev.JSON())
	}
}

// A session in bypassPermissions whose CLI refuses it runs in the default
// mode, and the client is told so in a notice.
func TestSession_refusedBypassModeIsANotice(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the CLI refuses the flag only as root")
	}
	ev := nativetest.NewRecorder("allow")
	n, _ := openFake(t, agent.OpenOptions{Config: map[string]string{agent.ConfigMode: "bypassPermissions"}}, ev, "IS_SANDBOX=1", "FAKE_CLAUDE_REFUSE_BYPASS=1")
	if res, err := prompt(t, n, "hello"); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("turn after the refusal: %+v, %v", res, err)
	}
	if mode := option(n, agent.ConfigMode).Current; mode != "default" || !strings.Contains(ev.JSON(), `"severity":"warning","title":"Claude Code refused bypassPermissions"`) {
		t.Errorf("mode %q after the refusal, updates:\n%s\nwant default, and a notice", mode, ev.JSON())
	}
}

// As root with IS_SANDBOX=yes, which Claude does not count as a sandbox,
// the CLI is started without the flag it would refuse.
func TestSession_rootWithIsSandboxYes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the CLI refuses the flag only as root")
	}
	t.Setenv("IS_SANDBOX", "yes")
	ev := nativetest.NewRecorder("allow")
	n, args := openFake(t, agent.OpenOptions{}, ev, "FAKE_CLAUDE_REFUSE_BYPASS=1")
	if res, err := prompt(t, n, "hello"); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("turn: %+v, %v", res, err)
	}
	if got, _ := os.ReadFile(args); strings.Contains(string(got), "--allow-dangerously-skip-permissions") {
		t.Errorf("started with a flag Claude refuses as root with IS_SANDBOX=yes: %s", got)
	}
}
