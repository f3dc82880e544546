package bridge

import "errors"

// Errors of the engine, which the ACP edge turns into JSON-RPC codes beside
// the backend's (agent.ErrInvalidParams, agent.ErrAuthRequired,
// agent.ErrAgentUnavailable, which the engine reports too). Functions wrap
// them with detail ("%w: ..."), so match them with errors.Is.
var (
	// ErrSessionNotFound: no such session (-32002).
	ErrSessionNotFound = errors.New("session not found")
	// ErrBusy: the session has a turn running, and what was asked can't
	// wait for it (-32600): a load, a resume, a change of agent. Prompts
	// are queued instead (Session.Prompt).
	ErrBusy = errors.New("session busy")
	// ErrNotRecorded: the turn ran but its transcript could not be written
	// in full (a full disk, a read-only state directory); what it streamed
	// is not saved from that point on.
	ErrNotRecorded = errors.New("the turn could not be recorded in full")
)
