package agentkit

import (
	"fmt"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Retell is, for the first turn of a fork the agent could not make of its
// own session, the conversation so far from the bridge's transcript
// (recorded, agent.OpenOptions.History) without the prompt about to run,
// which the bridge has recorded already; and the thought that tells the
// client so: why, then "it was given the conversation so far (N KB)"
// where. ok is false when there is nothing to tell.
func Retell(recorded func() []acp.SessionUpdate, why, where string) (said string, thought acp.SessionUpdate, ok bool) {
	if recorded == nil {
		return "", acp.SessionUpdate{}, false
	}
	said = agent.HistoryText(withoutPrompt(recorded()), agent.HistoryBudget, agent.ForkIntro)
	if said == "" {
		return "", acp.SessionUpdate{}, false
	}
	note := fmt.Sprintf("%s: it was given the conversation so far (%d KB) %s.", why, (len(said)+1023)/1024, where)
	return said, acp.UpdateAgentThoughtText(note), true
}

// withoutPrompt is a recorded conversation without the user's message at
// its end: the prompt about to be sent.
func withoutPrompt(us []acp.SessionUpdate) []acp.SessionUpdate {
	n := len(us)
	for n > 0 && us[n-1].UserMessageChunk != nil {
		n--
	}
	return us[:n]
}
