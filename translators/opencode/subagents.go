package opencode

import (
	"encoding/json"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// Subagents: OpenCode's task tool runs a subagent in a child session of
// its own (POST /session with parentID, done by the tool itself): its
// session.created names the parent (info.parentID), the task part's
// state.metadata.sessionId names the child once it runs (before the
// child's prompt), and the child's events come on the directory's event
// stream under its own sessionID, its permission asks too; its
// session.idle ends its work, and the task part completes after it. The
// Translator of the parent reports the child as a child session
// (agent.Events.Child) whose id is OpenCode's, announced when the task
// part names it (or, failing that, before its first update), its events
// translated by a Translator of its own. Events of a session that is
// neither the Translator's nor a child of it (or of a child) are skipped.

// kid is what the parent's Translator knows of one child session.
type kid struct {
	tr      *Translator
	title   string // its session's title, announced if no task call names it first
	shown   bool   // announced
	running bool   // working: announced and not ended since
	busy    bool   // OpenCode said it is busy, and not idle since
	stop    bool   // to be stopped (StopKid): aborted once it starts, cancelled when it ends
	err     *SessionError
}

// Own tells the Translator its session's OpenCode id: events of other
// sessions are its children's.
func (t *Translator) Own(id string) { t.own = id }

// sessionInfo is what the translator reads of a session.created or
// session.updated info.
type sessionInfo struct {
	ParentID string `json:"parentID"`
	Title    string `json:"title"`
}

// ParentID is the parent session a session.created names, "" for none.
func (d Decoded) ParentID() string {
	if d.Type != "session.created" {
		return ""
	}
	var info sessionInfo
	json.Unmarshal(d.props.Info, &info) // what does not decode names no parent
	return info.ParentID
}

// childEvent translates an event of another session than the
// Translator's: a child's, or of a child about to be (session.created
// naming this session or a child of it as its parent).
func (t *Translator) childEvent(d Decoded) (Output, error) {
	id := d.SessionID()
	k := t.kids[id]
	if k == nil {
		return t.newKid(d), nil
	}
	switch d.Type {
	case "session.created", "session.updated":
		var info sessionInfo
		json.Unmarshal(d.props.Info, &info)
		if info.Title != "" {
			k.title = info.Title
		}
		return Output{}, nil
	case "session.error":
		k.err = d.props.Error
		return Output{}, nil
	case "session.idle":
		if !k.busy { // an abort before it started says it is idle, and it then starts all the same
			return Output{Child: id}, nil
		}
		k.busy = false
		return Output{Child: id, Idle: true, Parent: t.endKid(id, k)}, nil
	}
	out, err := k.tr.TranslateDecoded(d)
	if err != nil {
		return Output{}, err
	}
	res := Output{Child: id, Updates: out.Updates, Ask: out.Ask, Question: out.Question, Replied: out.Replied, Skipped: out.Skipped, Busy: out.Busy,
		Step: out.Step} // its tokens are the turn's too
	k.busy = k.busy || out.Busy
	res.Abort = out.Busy && k.stop
	switch {
	case len(out.Updates) > 0 || out.Ask != nil || out.Question != nil:
		res.Parent = t.showKid(id, k, "", nil)
	case out.Busy && k.shown && !k.running: // it runs again (a task resumed)
		k.running = true
		res.Parent = []acp.SessionUpdate{agent.SubagentUpdate(id, "", "", agent.Running())}
	}
	return res, nil
}

// StopKid says child session id is being stopped (a session/cancel of
// it or of the turn): it ends cancelled, and, as an abort before
// OpenCode started it is lost, the event that says it started says to
// abort it (Output.Abort). It reports whether id is a running child.
func (t *Translator) StopKid(id string) bool {
	k := t.kids[id]
	if k == nil || !k.running {
		return false
	}
	k.stop = true
	return true
}

// RunningKids are the child sessions working, announced and not ended.
func (t *Translator) RunningKids() []string {
	var ids []string
	for id, k := range t.kids {
		if k.running {
			ids = append(ids, id)
		}
	}
	return ids
}

// newKid takes note of a child session its session.created announces.
func (t *Translator) newKid(d Decoded) Output {
	if d.Type != "session.created" {
		return Output{Skipped: d.Type}
	}
	var info sessionInfo
	json.Unmarshal(d.props.Info, &info)
	if info.ParentID == "" || (info.ParentID != t.own && t.kids[info.ParentID] == nil) {
		return Output{Skipped: d.Type}
	}
	t.kids[d.SessionID()] = t.kid(d.SessionID(), info.Title)
	return Output{}
}

// kid is a new child session id, with its title.
func (t *Translator) kid(id, title string) *kid {
	tr := NewTranslator(t.cwd)
	tr.own, tr.isChild = id, true
	k := &kid{tr: tr, title: title}
	t.kids[id] = k
	return k
}

// taskPart announces the child a task part names (state.metadata
// sessionId), as the subagent that call started: its title the task's
// description, its description the subagent type. The task's end ends
// the child if its own session.idle did not. adopt is the child, if its
// session.created was not seen.
func (t *Translator) taskPart(p partDoc) (us []acp.SessionUpdate, adopt string) {
	id := p.State.Metadata.Str("sessionId")
	if id == "" || id == t.own {
		return nil, ""
	}
	k := t.kids[id]
	if k == nil {
		k, adopt = t.kid(id, ""), id
	}
	var out []acp.SessionUpdate
	if t.calls[p.CallID] != id {
		t.calls[p.CallID] = id
		what := ""
		if sub := p.State.Input.Str("subagent_type"); sub != "" {
			what = sub + " subagent"
		}
		out = t.showKid(id, k, p.State.Input.Str("description"), &what)
		if len(out) == 0 { // shown before the call named it: now it is linked
			u := agent.SubagentUpdate(id, p.State.Input.Str("description"), what, nil)
			u.SubagentUpdate.Meta = agent.SubagentOf(p.CallID)
			out = []acp.SessionUpdate{u}
		} else {
			out[0].SubagentUpdate.Meta = agent.SubagentOf(p.CallID)
		}
	}
	if p.State.Status == "completed" || p.State.Status == "error" {
		if p.State.Status == "error" && k.err == nil && k.running {
			k.err = &SessionError{Name: "TaskError"}
			k.err.Data.Message = p.State.Error
		}
		out = append(out, t.endKid(id, k)...)
	}
	return out, adopt
}

// showKid is the subagent_update that announces child id, or nothing if
// it was: running, with the title given (else its session's), what it
// is (else nothing), and that a session/cancel of it aborts it.
func (t *Translator) showKid(id string, k *kid, title string, what *string) []acp.SessionUpdate {
	if k.shown {
		return nil
	}
	k.shown, k.running = true, true
	if title == "" {
		title = k.title
	}
	desc := ""
	if what != nil {
		desc = *what
	}
	u := agent.SubagentUpdate(id, title, desc, agent.Running())
	u.SubagentUpdate.Capabilities = &acp.SubagentSessionCapabilities{Cancel: &acp.SessionCancelCapabilities{}} // POST /session/{id}/abort
	return []acp.SessionUpdate{u}
}

// endKid is the subagent_update that says child id's work ended, and
// why, or nothing if it was not running: aborted is cancelled, another
// error an error.
func (t *Translator) endKid(id string, k *kid) []acp.SessionUpdate {
	if !k.running {
		return nil
	}
	k.running = false
	err, stopped := k.err, k.stop
	k.err, k.stop = nil, false
	state := agent.Idle(acp.StopReasonEndTurn)
	switch {
	case stopped: // an abort as it started ends it without an error
		state = agent.Idle(acp.StopReasonCancelled)
	case err == nil:
	case err.Aborted() || strings.Contains(strings.ToLower(err.Data.Message), "aborted"):
		state = agent.Idle(acp.StopReasonCancelled)
	default:
		why := "error"
		state.Idle.StopReason = &why
		state.Idle.Error = &acp.Error{Code: acp.ErrorCode{InternalError: ptr(acp.ErrorCodeInternalError(-32603))}, Message: "the subagent failed: " + err.Message()}
	}
	return []acp.SessionUpdate{agent.SubagentUpdate(id, "", "", state)}
}

func ptr[T any](v T) *T { return &v }
