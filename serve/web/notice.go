package web

import (
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Notices and compactions on the web edges. The web edge's connection
// takes both (clientCapabilities.session.notices and .compaction), so the
// bridge sends them as they are rather than as agent text; each web
// protocol carries them as its own: the AI SDK stream as data-notice and
// data-compaction parts, AG-UI as a CUSTOM "notice" event and an
// ACTIVITY_SNAPSHOT of activity type "compaction". A notice is not
// history (the bridge records none), a compaction is: it comes back in a
// session's messages.

// webCapabilities are what the web edge's connection takes: notices,
// compactions and subagents (subagent.go) as ACP has them.
var webCapabilities = acp.ClientCapabilities{Session: &acp.ClientSessionCapabilities{
	Notices: &acp.NoticeCapabilities{}, Compaction: &acp.CompactionCapabilities{}},
	Subagents: &acp.SubagentCapabilities{}}

// NoticeData is what a web client is told of a notice.
type NoticeData struct {
	Severity    string `json:"severity"`
	Title       string `json:"title"`
	Description string `json:"description,omitempty"`
}

func NoticeOf(n *acp.SessionUpdateNotice) NoticeData {
	return NoticeData{Severity: string(n.Severity), Title: n.Title, Description: Deref(n.Description)}
}

// CompactionData is what a web client is told of a compaction: its
// state so far, the whole of it each time.
type CompactionData struct {
	ID      string `json:"id"`
	Status  string `json:"status"`
	Summary string `json:"summary,omitempty"` // its text blocks' text
	Error   string `json:"error,omitempty"`
}

// Compactions folds a turn's (or a replay's) compaction updates and
// summary chunks, each into its compaction's state so far.
type Compactions map[acp.CompactionId]*acp.SessionCompactionUpdate

// Fold folds u, a compaction update or summary chunk, and returns its
// compaction's state; ok is false for any other update.
func (cs Compactions) Fold(u acp.SessionUpdate) (d CompactionData, ok bool) {
	var id acp.CompactionId
	switch {
	case u.CompactionUpdate != nil:
		id = u.CompactionUpdate.CompactionId
	case u.CompactionSummaryChunk != nil:
		id = u.CompactionSummaryChunk.CompactionId
	default:
		return CompactionData{}, false
	}
	c := cs[id]
	if c == nil {
		c = &acp.SessionCompactionUpdate{CompactionId: id, Status: acp.CompactionStatusInProgress}
		cs[id] = c
	}
	agent.FoldCompaction(c, u)
	var summary strings.Builder
	for _, b := range c.Summary {
		if b.Text != nil {
			summary.WriteString(b.Text.Text)
		}
	}
	return CompactionData{ID: string(id), Status: string(c.Status), Summary: summary.String(), Error: Deref(c.Error)}, true
}
