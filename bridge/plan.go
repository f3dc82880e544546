package bridge

import (
	"bytes"
	"encoding/json"

	"github.com/coder/acp-go-sdk"
)

// planID is the planId of a session's plan in plan_update and
// plan_removed: the agents here keep one plan per session, which each
// plan update replaces whole.
const planID acp.PlanId = "plan"

// takesPlanOps reports whether a client takes plan operations
// (clientCapabilities.plan): plan_update and plan_removed.
func takesPlanOps(caps acp.ClientCapabilities) bool { return caps.Plan != nil }

// planFor is a plan update as the client is to be sent it. A client that
// takes plan operations gets a plan as plan_update (the entries as the
// items of the session's plan), or plan_removed when the plan has no
// entries left; another gets plan operations (from an ACP agent) as the
// plan they leave: their items, or none for a removed one. A plan as a
// file or markdown has no entries to show such a client, and is dropped.
func planFor(u acp.SessionUpdate, caps acp.ClientCapabilities) (acp.SessionUpdate, bool) {
	switch ops := takesPlanOps(caps); {
	case u.Plan != nil && ops && len(u.Plan.Entries) == 0:
		return acp.SessionUpdate{PlanRemoved: &acp.SessionUpdatePlanRemoved{PlanId: planID, Meta: u.Plan.Meta}}, true
	case u.Plan != nil && ops:
		items := &acp.PlanUpdateContentItems{Type: "items", PlanId: planID, Entries: u.Plan.Entries}
		return acp.SessionUpdate{PlanUpdate: &acp.SessionPlanUpdate{Plan: acp.PlanUpdateContent{Items: items}, Meta: u.Plan.Meta}}, true
	case u.PlanUpdate != nil && !ops:
		items := u.PlanUpdate.Plan.Items
		if items == nil {
			return u, false
		}
		return acp.SessionUpdate{Plan: &acp.SessionUpdatePlan{Entries: items.Entries, Meta: u.PlanUpdate.Meta}}, true
	case u.PlanRemoved != nil && !ops:
		return acp.SessionUpdate{Plan: &acp.SessionUpdatePlan{Entries: []acp.PlanEntry{}}}, true
	}
	return u, true
}

// planKeys mark the recorded plan updates that planFor may change.
var planKeys = [][]byte{[]byte(`"sessionUpdate":"plan"`), []byte(`"sessionUpdate":"plan_update"`), []byte(`"sessionUpdate":"plan_removed"`)}

// rawPlanFor is planFor for a recorded update: r itself unless it is a
// plan update that the client is to get otherwise.
func rawPlanFor(r json.RawMessage, caps acp.ClientCapabilities) (json.RawMessage, bool) {
	if !hasPlanKey(r) {
		return r, true
	}
	var u acp.SessionUpdate
	if json.Unmarshal(r, &u) != nil {
		return r, true
	}
	out, ok := planFor(u, caps)
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(out)
	if err != nil {
		return r, true
	}
	return b, true
}

func hasPlanKey(r json.RawMessage) bool {
	for _, k := range planKeys {
		if bytes.Contains(r, k) {
			return true
		}
	}
	return false
}
