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
	"os/exec"

	"github.com/coder/acp-go-sdk"
)

// A Backend is one kind of coding agent (mock, claude, codex, ...). It starts
// whatever it shares between sessions lazily, in its first Open, and stops it
// in Close. Its methods are safe for concurrent use.
type Backend interface {
	// Info describes the backend. It is constant.
	Info() Info

	// Open starts a native session, or resumes the one named by
	// opts.NativeID. ctx is the session's lifetime: it ends when the
	// session closes or the bridge shuts down, and a Native may tie its
	// own to it. Open should return quickly (warming a process up in the
	// background where it can) and report failures it can see at once,
	// such as a missing executable, as errors wrapping ErrAgentUnavailable
	// or ErrAuthRequired. events receives the session's updates and
	// permission asks until Close; see Events. The session/new response
	// carries the Native's Config as Open returns it, so a backend should
	// know its options by then (waiting briefly for them if it must).
	Open(ctx context.Context, opts OpenOptions, events Events) (Native, error)

	// Close stops the backend and everything it shares. Sessions are closed
	// by the bridge first.
	Close() error
}

// Warmer is implemented by a Backend that can start what its sessions
// share before the first one needs it, and what the first session in the
// bridge's directory cwd will need ("" if the bridge has none): a spare
// process or thread, taken by the first Open there whose options it fits.
// Warm returns at once, and must not delay Open; what it starts is stopped
// by Close, or when no session took it in a while.
type Warmer interface {
	Warm(cwd string)
}

// LoginChecker is implemented by a Backend that can tell, without starting
// its agent, whether the agent has credentials (acpbridge doctor asks).
type LoginChecker interface {
	Login() Login
}

// Forker is implemented by a Backend whose agent can fork a session of its
// own (OpenOptions.ForkOf). A session/fork on any other backend opens a new
// native session and tells it the conversation so far with its first
// prompt, as a handoff does.
type Forker interface {
	Forks() bool
}

// LoginRunner is implemented by a Backend whose agent has a login of its
// own for a person to run in a terminal (`claude auth login`, `codex login`
// …). LoginCmd returns it ready to run, with the agent's environment and no
// stdio: the caller connects the terminal.
type LoginRunner interface {
	LoginCmd() (*exec.Cmd, error)
}

// AgentLogin is an agent's login as the bridge offers it to clients.
type AgentLogin struct {
	Agent, Title string
	Login        Login
}

// Login is what a backend can tell of its agent's login: OK when it found
// credentials, and what it found, or what to do. Required is set when the
// agent can't run at all without them (rather than, say, with a provider
// configured another way).
type Login struct {
	OK       bool
	Required bool
	Detail   string
}

// Info is what the bridge needs to know about a backend.
type Info struct {
	Name  string // the --agent name: "mock", "claude", ...
	Title string // shown in the agent config option

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
	// ForkOf, with NativeID "", starts a new native session that begins as
	// a copy of this one, which stays as it was. Only a Forker gets it.
	ForkOf string
	// Config holds the values of config options chosen earlier in the
	// session (by option id); an option not in it takes the backend's
	// default; a value the backend no longer offers may be ignored.
	Config map[string]string
	// Editor is the client's side, for an agent that calls it (fs,
	// terminals, extension methods). Nil in tests that don't need it.
	Editor Editor
	// History returns the session's conversation as the bridge recorded
	// it (nil for a new session), for an agent that can't restore its own
	// and is to be told what was said.
	History func() []acp.SessionUpdate
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
//
// A Native whose agent can return the conversation of a resumed session
// also implements HistoryReader; that is the one way a backend says where
// a session's history comes from.
type Native interface {
	// NativeID is the agent's own id for the session, or "" while the agent
	// has not made one yet. The bridge reads it after Open and after each
	// turn and records it for resume.
	NativeID() string
	Prompt(ctx context.Context, turn Turn) (TurnResult, error)
	// Config lists the session's config options with their current
	// values, in the order the client shows them. A session with modes
	// offers them as the option with id ConfigMode.
	Config() []ConfigOption
	// SetConfig applies a new value of an option that is not NextTurn.
	// The bridge has checked that the option and the value are offered.
	SetConfig(ctx context.Context, id, value string) error
	// Close ends the session and releases its process; it does not wait for
	// the agent to finish a turn.
	Close() error
}

// Turn is one prompt and what changed before it.
type Turn struct {
	Prompt []acp.ContentBlock
	// Config holds the NextTurn options the client changed since the last
	// turn, by id: the Native applies them with this turn.
	Config map[string]string
}

// ConfigOption is one of a session's settings, offered to the client as
// an ACP select config option.
type ConfigOption struct {
	ID          string // "mode", "model", "effort", ...
	Name        string
	Description string
	Category    acp.SessionConfigOptionCategory // mode, model, thought_level, or ""
	Current     string
	Choices     []Choice
	// NextTurn is set when the agent takes a new value only with its next
	// turn. The bridge then accepts a change at once, shows it as current,
	// and hands it to the next Prompt in Turn.Config instead of calling
	// SetConfig.
	NextTurn bool
}

// Choice is one value of a ConfigOption.
type Choice struct {
	Value, Name, Description string
}

// HistoryReader is implemented by a Native whose agent returns the
// conversation of a resumed session, so that with --persist auto the
// bridge keeps only the session's header and replays the agent's history.
type HistoryReader interface {
	History(ctx context.Context) ([]acp.SessionUpdate, error)
}

// TurnResult is how a turn ended.
type TurnResult struct {
	StopReason acp.StopReason
	Usage      *acp.Usage // nil if the agent reports none
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

	// ConfigChanged tells the bridge that Config changed by itself (say,
	// the agent reported its models once it had started, or switched its
	// own mode), so that it sends the client the session's config options
	// again. The Native must not hold its own locks when calling it.
	ConfigChanged()
}
