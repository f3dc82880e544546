package bridge

import "errors"

// Errors the ACP edge turns into JSON-RPC codes. Functions wrap them with
// detail ("%w: ..."), so match them with errors.Is.
var (
	// ErrInvalidParams: the request is malformed (-32602).
	ErrInvalidParams = errors.New("invalid params")
	// ErrSessionNotFound: no such session (-32002).
	ErrSessionNotFound = errors.New("session not found")
	// ErrBusy: the session has a turn running, and what was asked can't
	// wait for it (-32600): a load, a resume, a change of agent. Prompts
	// are queued instead (Session.Prompt).
	ErrBusy = errors.New("session busy")
	// ErrAuthRequired: the agent needs a login first (-32000).
	ErrAuthRequired = errors.New("authentication required")
	// ErrNotRecorded: the turn ran but its transcript could not be written
	// in full (a full disk, a read-only state directory); what it streamed
	// is not saved from that point on.
	ErrNotRecorded = errors.New("the turn could not be recorded in full")
	// ErrAgentUnavailable: the agent cannot run here (missing executable,
	// not built into this binary).
	ErrAgentUnavailable = errors.New("agent unavailable")
)
