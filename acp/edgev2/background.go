package edgev2

import (
	"slices"

	"github.com/coder/acp-go-sdk"
)

// A session's background work, as v2's state snapshots list it, is its
// subagents still at work once its foreground work ended: a subagent in
// the background (Claude Code's, sent a SendMessage) goes on after the
// turn that started it. The edge learns who works from the
// subagent_updates it sends (running, idle). Once a session's snapshot
// has listed any, every later one carries the list, [] when it is empty;
// while the session is idle, a child's start or end is followed by a
// snapshot that says so (idle again, no stopReason: a repeated snapshot
// is not another turn's end).

// kidUpdate takes note of a child's state in a subagent_update of session
// sid, once it was sent: with the session idle, a change is told in a
// new snapshot. A replay's subagent_updates are history, not work.
func (c *conn) kidUpdate(sid string, u *acp.SessionSubagentUpdate) {
	if u.State == nil {
		return
	}
	kid, working := string(u.SessionId), u.State.Idle == nil
	c.mu.Lock()
	if c.replays[sid] > 0 {
		c.mu.Unlock()
		return
	}
	kids := c.kids[sid]
	if kids == nil {
		kids = make(map[string]bool)
		c.kids[sid] = kids
	}
	changed := kids[kid] != working
	if working {
		kids[kid] = true
	} else {
		delete(kids, kid)
	}
	idle := c.active[sid] == 0
	c.mu.Unlock()
	if changed && idle {
		c.state(sid, "idle", "")
	}
}

// background is the session's background work to list in a snapshot:
// ok is false until there has been any.
func (c *conn) background(sid string) (work []any, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kids := c.kids[sid]
	if len(kids) == 0 && !c.listed[sid] {
		return nil, false
	}
	c.listed[sid] = true
	ids := make([]string, 0, len(kids))
	for id := range kids {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	work = []any{}
	for _, id := range ids {
		work = append(work, map[string]any{"type": "subagent", "sessionId": id})
	}
	return work, true
}

// replaying counts a replay of session sid starting (+1) or ending (-1).
func (c *conn) replaying(sid string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replays[sid] += n
	if c.replays[sid] == 0 {
		delete(c.replays, sid)
	}
}
