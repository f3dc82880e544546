package edge_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/internal/testkit/sdkclient"
	"github.com/acpbridge/acpbridge/translators/mock"
)

// The official TS SDK's unstable v1 client, opted into everything,
// accepts every message of a mock session with a directory and a system
// prompt, and sees them advertised, told to the agent and listed.
func TestSDKUnstable_mock(t *testing.T) {
	lib := t.TempDir()
	r := sdkclient.Run(t, mock.New(), sdkclient.Plan{Cwd: t.TempDir(), Dirs: []string{lib}, Mode: "override",
		SystemPrompt: "Answer tersely.", Prompts: []string{"setup", "demo"}})
	caps := sdkclient.JSON(r.Capabilities)
	for _, want := range []string{`"additionalDirectories":{}`, `"systemPrompt":{"mode":{"override":{}}}`} {
		if !strings.Contains(caps, want) {
			t.Errorf("agentCapabilities %s; want %s", caps, want)
		}
	}
	said := sdkclient.JSON(r.Updates)
	if text := sdkclient.Text(r.Updates, "agent_message_chunk"); !strings.Contains(text, "and in "+lib+".") || !strings.Contains(text, "System prompt (override): Answer tersely.") {
		t.Errorf("the mock was not told the directory and the system prompt: %q", text)
	}
	if !strings.Contains(said, `"name":"edit"`) || r.Asks != 1 || !slices.Equal(r.Stops, []string{"end_turn", "end_turn"}) {
		t.Errorf("stops %v, %d asks, updates:\n%s", r.Stops, r.Asks, said)
	}
	if got := sdkclient.JSON(r.Listed); !strings.Contains(got, `"additionalDirectories":["`+lib+`"]`) {
		t.Errorf("session/list shows %s", got)
	}
	if kinds := sdkclient.Kinds(r.Updates); !slices.Contains(kinds, "plan_update") || slices.Contains(kinds, "plan") {
		t.Errorf("the turns' kinds %v; want plan_update, no plan, for a client that takes plan operations", kinds)
	}
	if kinds := sdkclient.Kinds(r.Replay); !slices.Contains(kinds, "user_message_chunk") || !slices.Contains(kinds, "tool_call") || !slices.Contains(kinds, "plan_update") {
		t.Errorf("the replay's kinds %v", kinds)
	}
}

// The TS SDK's unstable v1 client accepts a turn of the mock's that
// delegates to a subagent (a child session with an ask of its own), live
// and replayed.
func TestSDKUnstable_mockSubagent(t *testing.T) {
	r := sdkclient.Run(t, mock.New(), sdkclient.Plan{Cwd: t.TempDir(), Mode: "append", SystemPrompt: "Be brief.", Prompts: []string{"delegate"}})
	for what, us := range map[string][]map[string]any{"turn": r.Updates, "replay": r.Replay} {
		if kinds := sdkclient.Kinds(us); !slices.Contains(kinds, "subagent_update") || !slices.Contains(kinds, "tool_call") {
			t.Errorf("the %s's kinds %v; want subagent_update and the child's tool calls", what, kinds)
		}
	}
	if r.Asks != 1 || !slices.Equal(r.Stops, []string{"end_turn"}) {
		t.Errorf("stops %v, %d asks", r.Stops, r.Asks)
	}
}
