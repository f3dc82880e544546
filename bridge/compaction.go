package bridge

import (
	"bytes"
	"encoding/json"
	"maps"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// A compaction is history: the Accumulator folds its updates and summary
// chunks into one compaction_update entry, recorded when the turn ends
// (as a plan is), its fallback (agent.FallbackMeta) folded with it.
type compactionEntry struct {
	seq      int64
	c        acp.SessionCompactionUpdate // Meta without the fallback
	fallback []acp.SessionUpdate
}

// compaction folds a compaction update or summary chunk.
func (a *Accumulator) compaction(u acp.SessionUpdate) []Entry {
	id, meta := compactionOf(u)
	done := a.closeMessage()
	e := a.compactions[id]
	if e == nil {
		e = &compactionEntry{seq: a.seq(), c: acp.SessionCompactionUpdate{CompactionId: id, Status: acp.CompactionStatusInProgress}}
		a.compactions[id] = e
	}
	e.fallback = append(e.fallback, fallbackOf(meta)...)
	if len(meta) > 0 {
		if e.c.Meta == nil {
			e.c.Meta = make(map[string]any)
		}
		maps.Copy(e.c.Meta, meta)
		delete(e.c.Meta, agent.FallbackMeta)
		if len(e.c.Meta) == 0 {
			e.c.Meta = nil
		}
	}
	agent.FoldCompaction(&e.c, u)
	return done
}

func compactionOf(u acp.SessionUpdate) (acp.CompactionId, map[string]any) {
	if c := u.CompactionUpdate; c != nil {
		return c.CompactionId, c.Meta
	}
	return u.CompactionSummaryChunk.CompactionId, u.CompactionSummaryChunk.Meta
}

// fallbackOf is the fallback in an update's meta: as a Native gives it,
// or decoded from JSON (a recorded update), where it is a []any.
func fallbackOf(meta map[string]any) []acp.SessionUpdate {
	switch fb := meta[agent.FallbackMeta].(type) {
	case nil:
		return nil
	case []acp.SessionUpdate:
		return fb
	default:
		var us []acp.SessionUpdate
		if b, err := json.Marshal(fb); err == nil {
			json.Unmarshal(b, &us) // a fallback that does not decode is none
		}
		return us
	}
}

// entry is the compaction as recorded: its fallback folded as the
// transcript would fold those updates (a tool call in its final state).
func (e *compactionEntry) entry(newID func() string) Entry {
	c := e.c
	if len(e.fallback) > 0 {
		fold := NewAccumulator(1, newID)
		var fb []acp.SessionUpdate
		for _, u := range e.fallback {
			_, done := fold.Add(u)
			fb = appendUpdates(fb, done)
		}
		c.Meta = maps.Clone(c.Meta)
		if c.Meta == nil {
			c.Meta = make(map[string]any)
		}
		c.Meta[agent.FallbackMeta] = appendUpdates(fb, fold.Flush())
	}
	return Entry{Seq: e.seq, Update: acp.SessionUpdate{CompactionUpdate: &c}}
}

func appendUpdates(us []acp.SessionUpdate, es []Entry) []acp.SessionUpdate {
	for _, e := range es {
		us = append(us, e.Update)
	}
	return us
}

// takesCompaction reports whether a client offered
// clientCapabilities.session.compaction.
func takesCompaction(caps acp.ClientCapabilities) bool {
	return caps.Session != nil && caps.Session.Compaction != nil
}

// forClient is a live update as the client is to be sent it: a compaction
// update or summary chunk as it is, without its fallback, to a client that
// takes them, else its fallback (none, for most); a plan as planFor says.
func forClient(u acp.SessionUpdate, caps acp.ClientCapabilities) []acp.SessionUpdate {
	if u.CompactionUpdate == nil && u.CompactionSummaryChunk == nil {
		if p, ok := planFor(u, caps); ok {
			return []acp.SessionUpdate{p}
		}
		return nil
	}
	_, meta := compactionOf(u)
	if !takesCompaction(caps) {
		return fallbackOf(meta)
	}
	if _, ok := meta[agent.FallbackMeta]; ok {
		meta = maps.Clone(meta)
		delete(meta, agent.FallbackMeta)
		if len(meta) == 0 {
			meta = nil
		}
		if c := u.CompactionUpdate; c != nil {
			cc := *c
			cc.Meta = meta
			u = acp.SessionUpdate{CompactionUpdate: &cc}
		} else {
			cc := *u.CompactionSummaryChunk
			cc.Meta = meta
			u = acp.SessionUpdate{CompactionSummaryChunk: &cc}
		}
	}
	return []acp.SessionUpdate{u}
}

// compactionKey marks a recorded compaction (see userChunkKey).
var compactionKey = []byte(`"sessionUpdate":"compaction_update"`)

// rawForClient is recorded updates as the client is to be sent them: a
// compaction the bridge recorded (one with a fallback key) as forClient
// sends it live. A compaction an ACP agent sent as it came passes as it
// came.
func rawForClient(raw []json.RawMessage, caps acp.ClientCapabilities) []json.RawMessage {
	out := make([]json.RawMessage, 0, len(raw))
	for _, r := range raw {
		if !bytes.Contains(r, compactionKey) {
			if p, ok := rawPlanFor(r, caps); ok {
				out = append(out, p)
			}
			continue
		}
		var c struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		fb, ok := json.RawMessage(nil), false
		if json.Unmarshal(r, &c) == nil {
			fb, ok = c.Meta[agent.FallbackMeta]
		}
		switch {
		case !ok:
			out = append(out, r)
		case !takesCompaction(caps):
			var us []json.RawMessage
			json.Unmarshal(fb, &us) // a fallback that does not decode is none
			out = append(out, us...)
		default:
			out = append(out, withoutFallback(r))
		}
	}
	return out
}

// withoutFallback is a recorded compaction without its fallback key.
func withoutFallback(r json.RawMessage) json.RawMessage {
	var m map[string]any
	if json.Unmarshal(r, &m) != nil {
		return r
	}
	meta, _ := m["_meta"].(map[string]any)
	delete(meta, agent.FallbackMeta)
	if len(meta) == 0 {
		delete(m, "_meta")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return r
	}
	return b
}
