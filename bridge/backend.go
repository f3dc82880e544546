// Package bridge owns acpbridge's sessions: one running turn per session,
// the order of each session's updates, and the transcript that every update
// is folded into ("two outputs, one input": each update goes to the client
// and, through an Accumulator, to the store that session/load replays).
//
// The bridge speaks ACP's data types (github.com/coder/acp-go-sdk) but no
// JSON-RPC: the ACP edge calls a Manager and hands it a Client to send
// through. Agents plug in behind the Backend interface, one package each
// under translators/.
package bridge

import (
	"context"

	"github.com/coder/acp-go-sdk"
)

// A Backend is one kind of coding agent (mock, claude, codex, ...). It starts
// whatever it shares between sessions lazily, in its first Open, and stops it
// in Close. Its methods are safe for concurrent use.
type Backend interface {
	// Info describes the backend. It is constant.
	Info() Info

	// Open starts a native session, or resumes the one named by
	// opts.NativeID. It should return quickly (warming a process up in the
	// background where it can) and report failures it can see at once,
	// such as a missing executable, as errors wrapping ErrAgentUnavailable
	// or ErrAuthRequired. events receives the session's updates and
	// permission asks until Close; see Events.
	Open(ctx context.Context, opts OpenOptions, events Events) (Native, error)

	// Close stops the backend and everything it shares. Sessions are closed
	// by the bridge first.
	Close() error
}

// Info is what the bridge needs to know about a backend.
type Info struct {
	Name  string // the --agent name: "mock", "claude", ...
	Title string // shown in the agent config option

	// ReplaysHistory is set when a resumed native session can return its
	// conversation (the Native implements HistoryReader), so that with
	// --persist auto the bridge keeps only the session's header.
	ReplaysHistory bool

	// Prompt is what content a prompt may carry besides text and
	// resource links.
	Prompt acp.PromptCapabilities
	// MCP is which MCP transports besides stdio the agent accepts.
	MCP acp.McpCapabilities
}

// OpenOptions says which native session to open and how.
type OpenOptions struct {
	Cwd        string
	MCPServers []acp.McpServer
	NativeID   string // resume this native session; "" starts a new one
	Mode       string // "" for the backend's default
	Model      string // "" for the backend's default
}

// Native is one open session of a backend.
//
// Prompt runs one turn. The bridge never runs two at once on one Native.
// Cancellation is ctx: when the client cancels the turn (or closes the
// session, or disconnects) ctx is cancelled, and the Native must stop the
// agent's turn promptly (interrupt, abort), may still deliver its last
// updates through Events, and returns. The bridge reports the turn as
// cancelled whatever Prompt returns then.
//
// Other methods may be called while a turn runs.
type Native interface {
	// NativeID is the agent's own id for the session, or "" while the agent
	// has not made one yet. The bridge reads it after Open and after each
	// turn and records it for resume.
	NativeID() string
	Prompt(ctx context.Context, prompt []acp.ContentBlock) (TurnResult, error)
	Modes() ModeState
	SetMode(ctx context.Context, id string) error
	Models() ModelState
	SetModel(ctx context.Context, id string) error
	// Close ends the session and releases its process; it does not wait for
	// the agent to finish a turn.
	Close() error
}

// HistoryReader is implemented by a Native whose agent can return the
// conversation of a resumed session (Info.ReplaysHistory).
type HistoryReader interface {
	History(ctx context.Context) ([]acp.SessionUpdate, error)
}

// TurnResult is how a turn ended.
type TurnResult struct {
	StopReason acp.StopReason
	Usage      *acp.Usage // nil if the agent reports none
}

// ModeState lists a session's modes; Available is empty if it has none.
type ModeState struct {
	Current   string
	Available []acp.SessionMode
}

// ModelState lists the models a session can use.
type ModelState struct {
	Current   string
	Available []Model
}

// Model is one choice of model.
type Model struct {
	ID, Name, Description string
}

// Events is how a Native reports back. Its methods are safe for concurrent
// use, but a Native should call Update from one goroutine at a time if the
// order of its updates matters (it always does within a turn).
type Events interface {
	// Update delivers one update to the client and the transcript. It may
	// be called at any time between Open and Close, inside a turn or not.
	Update(u acp.SessionUpdate)

	// RequestPermission asks the client about a tool call that the Native
	// has already announced with a tool_call update. ctx should be the
	// turn's; when the turn is cancelled the ask resolves as cancelled.
	RequestPermission(ctx context.Context, call acp.ToolCallUpdate, options []acp.PermissionOption) (acp.RequestPermissionOutcome, error)

	// ConfigChanged tells the bridge that Modes or Models changed (say,
	// the agent reported its models once it had started), so that it
	// sends the client the session's config options again. The Native
	// must not hold its own locks when calling it.
	ConfigChanged()
}
