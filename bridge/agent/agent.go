// Package agent is the contract between acpbridge's session engine
// (package bridge) and the agents behind it (one package each under
// translators/): what a backend implements, what it declares it can do,
// and what the engine hands it. It holds no engine: a translator imports
// this package, not the bridge.
//
// A backend is one kind of coding agent (Backend); it opens native
// sessions (Native), each of which runs one turn at a time and reports
// through Events. What a backend can do beyond that is declared, not
// discovered: Info.Caps for the backend, Native.Caps for a session. A nil
// capability is one the backend lacks, and the engine does without it as
// the field's doc says.
//
// The types are ACP's (github.com/coder/acp-go-sdk), but no JSON-RPC: a
// backend never sees the connection to the client.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"

	"github.com/coder/acp-go-sdk"
)

// A Backend is one kind of coding agent (mock, claude, codex, ...). It starts
// whatever it shares between sessions lazily, in its first Open, and stops it
// in Close. Its methods are safe for concurrent use.
type Backend interface {
	// Info describes the backend and declares its capabilities. It is
	// constant.
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

// Info is what the engine needs to know about a backend.
type Info struct {
	Name  string // the --agent name: "mock", "claude", ...
	Title string // shown in the agent config option

	// Prompt is what content a prompt may carry besides text and
	// resource links; the engine refuses other content with
	// ErrInvalidParams before the backend sees it.
	Prompt acp.PromptCapabilities
	// MCP is which MCP transports besides stdio the agent accepts.
	MCP acp.McpCapabilities

	// Caps is what else the backend can do.
	Caps Caps
}

// Caps is the one set of optional capabilities a backend declares. Every
// field may be left zero: the backend lacks that capability.
type Caps struct {
	// Forks says the agent forks a session of its own: Open takes
	// OpenOptions.ForkOf. Without it, session/fork opens a new native
	// session and tells it the conversation so far with its first prompt,
	// as a handoff does (and so does a forker whose fork fails: see
	// agentkit.Retell).
	Forks bool

	// Check says, quickly and without starting the agent, why it can't
	// run here (its executable is missing, say), as an error wrapping
	// ErrAgentUnavailable; nil if it can. A backend whose Check fails is
	// left out of the agent option. Nil: it always can.
	Check func() error

	// Version returns the agent's own version (its CLI's --version), for
	// acpbridge doctor. Nil: it has none to tell.
	Version func(ctx context.Context) (string, error)

	// Login tells, without starting the agent, whether the agent has
	// credentials (acpbridge doctor shows it, and initialize's auth
	// methods). Nil: the agent needs none the bridge can see.
	Login func() Login

	// LoginCmd returns the agent's own login (`claude auth login`, `codex
	// login` …) ready to run, with the agent's environment and no stdio:
	// the caller connects a terminal. acpbridge --login runs it and
	// initialize offers it as an auth method. Nil: the agent has none.
	LoginCmd func() (*exec.Cmd, error)

	// LogoutCmd returns the agent's own logout (`claude auth logout`,
	// `codex logout` …), which must run without a terminal: ACP's logout
	// runs the default agent's. Nil: the agent has none that runs
	// unattended.
	LogoutCmd func() (*exec.Cmd, error)

	// Warm starts, once the client's initialize is answered, what the
	// backend's sessions share (a server), and what the first session in
	// the bridge's directory cwd will need ("" if the bridge has none): a
	// spare process or thread, taken by the first Open there whose options
	// it fits. It returns at once and must not delay Open; what it starts
	// is stopped by Close, or when no session took it in a while. Nil:
	// nothing to warm.
	Warm func(cwd string)

	// ClientCapabilities is told what the client offers (fs, terminals),
	// when the client initializes and before Warm: an agent that speaks
	// ACP itself is told it at its own initialize. Nil: the backend need
	// not know.
	ClientCapabilities func(acp.ClientCapabilities)

	// Directories says the agent works in more workspace roots than its
	// cwd: Open takes OpenOptions.Directories. Without it, a session asked
	// for some is refused (ErrInvalidParams, naming the agent).
	Directories bool

	// SystemPrompt is how the agent takes the client's system-level
	// instructions: Open takes OpenOptions.SystemPrompt in these modes.
	// Zero: in none, and a session asked for one is refused.
	SystemPrompt PromptModes
}

// PromptModes is which of ACP's system prompt modes an agent takes:
// Append adds the client's instructions to the agent's own, Override
// replaces the agent's built-in instructions (its tools, MCP servers and
// permissions stay).
type PromptModes struct {
	Append, Override bool
}

// SystemPrompt is the client's system-level instructions for a session.
type SystemPrompt struct {
	Override bool   // replace the agent's instructions, rather than add to them
	Text     string // the instructions, the text blocks the client sent, joined
}

// Takes says whether an agent with modes m takes p.
func (m PromptModes) Takes(p SystemPrompt) bool {
	if p.Override {
		return m.Override
	}
	return m.Append
}

// SessionCaps is what a native session can do beyond Native's methods.
// Every field may be left zero.
type SessionCaps struct {
	// History returns the conversation of a resumed session as the agent
	// keeps it. With it, --persist auto keeps only the session's header
	// (and its plans) and replays the agent's history; without it, the
	// bridge's transcript is the history.
	History func(ctx context.Context) ([]acp.SessionUpdate, error)

	// Extension takes an extension method ("_…") the client sent about
	// the session (its params name it, with the bridge's session id): a
	// request (notify false), answered with its result, or a
	// notification. Nil: the client is told the method is not found.
	Extension func(ctx context.Context, method string, params json.RawMessage, notify bool) (json.RawMessage, error)

	// CancelChild stops the current work of the child session the agent
	// calls id (see Events.Child), leaving this session's turn running,
	// for a client's session/cancel of the child; the agent's
	// subagent_update says capabilities.cancel for a child it can stop.
	// Nil: no child can be stopped alone.
	CancelChild func(ctx context.Context, id string) error

	// Meta is what the agent has to say about how the session was opened
	// (whether a reopened session's agent restored its own conversation,
	// say), for the _meta of the session/new, load and resume answers.
	Meta map[string]any
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

// OpenOptions says which native session to open and how.
type OpenOptions struct {
	Cwd string
	// Directories are more workspace roots, absolute, beside Cwd: the
	// agent may read and write in them as in Cwd. Only a backend whose
	// Caps say Directories gets any.
	Directories []string
	MCPServers  []acp.McpServer
	// SystemPrompt is the client's instructions for the session, nil for
	// none; only in a mode the backend's Caps.SystemPrompt takes.
	SystemPrompt *SystemPrompt
	NativeID     string // resume this native session; "" starts a new one
	// ForkOf, with NativeID "", starts a new native session that begins as
	// a copy of this one, which stays as it was. Only a backend whose Caps
	// say Forks gets it.
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
	// and is to be told what was said (render it with HistoryText).
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
	// Caps declares what the session can do beyond these methods; the
	// bridge reads it after Open (and again for each answer's Meta).
	Caps() SessionCaps
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

// TurnResult is how a turn ended.
type TurnResult struct {
	StopReason acp.StopReason
	Usage      *acp.Usage // nil if the agent reports none
}

// Config option ids the engine knows: the mode (also offered as ACP
// session modes, for clients that predate config options) and the model.
// Backends that offer a thinking effort call it ConfigEffort.
const (
	ConfigMode   = "mode"
	ConfigModel  = "model"
	ConfigEffort = "effort"
)

// ConfigOption is one of a session's settings, offered to the client as
// an ACP select config option.
type ConfigOption struct {
	ID          string // "mode", "model", "effort", ...
	Name        string
	Description string
	Category    acp.SessionConfigOptionCategory // mode, model, thought_level, or ""
	Current     string
	Choices     []ConfigValue
	// NextTurn is set when the agent takes a new value only with its next
	// turn. The bridge then accepts a change at once, shows it as current,
	// and hands it to the next Prompt in Turn.Config instead of calling
	// SetConfig.
	NextTurn bool
}

// ConfigValue is one value a ConfigOption offers.
type ConfigValue struct {
	Value, Name, Description string
}

// FallbackMeta is the _meta key under which a compaction update (or
// summary chunk) carries what a client that takes no compaction updates
// is shown instead: a list of updates, the agent's text or tool call as
// before ACP had compaction. The bridge records it with the compaction and
// sends it to no client: one that takes compaction updates gets them
// without it, another gets the list.
const FallbackMeta = "acpbridge/fallback"

// Events is how a Native reports back. Its methods are safe for concurrent
// use, but a Native should call Update from one goroutine at a time if the
// order of its updates matters (it always does within a turn).
type Events interface {
	// Update delivers one update to the client and the transcript. It may
	// be called at any time between Open and Close, inside a turn or not.
	Update(u acp.SessionUpdate)

	// UpdateRaw delivers an update of a kind the bridge's ACP types don't
	// know (from an agent that speaks a newer ACP than they do), as the
	// agent encoded it: it reaches the client unchanged and the transcript
	// as it came, and a replay sends it again as it came. Call it in order
	// with Update.
	UpdateRaw(u json.RawMessage)

	// RequestPermission asks the client about a tool call that the Native
	// has already announced with a tool_call update. ctx should be the
	// turn's; when the turn is cancelled the ask resolves as cancelled.
	RequestPermission(ctx context.Context, call acp.ToolCallUpdate, options []acp.PermissionOption) (acp.RequestPermissionOutcome, error)

	// AskQuestion puts an agent's question about a tool call it has
	// announced (call names it) to the user, as RequestPermission does an
	// ask: as a form where the client takes forms, else as a permission
	// ask (AskAsPermission).
	AskQuestion(ctx context.Context, call acp.ToolCallUpdate, q Question) (QuestionAnswer, error)

	// ConfigChanged tells the bridge that Config changed by itself (say,
	// the agent reported its models once it had started, or switched its
	// own mode), so that it sends the client the session's config options
	// again. The Native must not hold its own locks when calling it.
	ConfigChanged()

	// Child is the Events of a child session of this one: a subagent the
	// agent delegated to, which the agent calls id (its own id for it,
	// unique within the session). The Native announces the child first,
	// with a subagent_update Update on this session whose SessionId is id
	// (title, description, state; later ones patch it, an idle state ends
	// its work, capabilities.cancel says SessionCaps.CancelChild stops
	// it); then the child's messages, tool calls and permission asks go
	// through Child(id), in order with this session's Updates. The bridge
	// gives the child a session id of its own for a client that takes
	// subagents, and shows its tool calls on this session to one that
	// does not. A child never announced is shown on this session. A
	// message between this session and a child (session_message, on this
	// session's Update) names the child by id and leaves this session out;
	// only a client that takes subagents is sent it. Child's
	// UpdateRaw, Child and ConfigChanged are this session's.
	Child(id string) Events
}

// SubagentUpdate is the update that announces a child session (see
// Events.Child) or patches what was said of it: title and description
// when not "", state when not nil.
func SubagentUpdate(id, title, description string, state *acp.StateUpdate) acp.SessionUpdate {
	u := &acp.SessionSubagentUpdate{SessionId: acp.SessionId(id), State: state}
	if title != "" {
		u.Title = &title
	}
	if description != "" {
		u.Description = &description
	}
	return acp.SessionUpdate{SubagentUpdate: u}
}

// SubagentOf is the _meta of a subagent_update that says which of the
// session's tool calls started (or, for a message, ran again) the child:
// {"acpbridge": {"toolCallId": id}}, so that a client may show the child
// under that call. (ACP's own link, a tool call's "session" content, is
// not in the schemas of the TS SDK 2.4.0, which clients validate with.)
func SubagentOf(toolCallID string) map[string]any {
	return map[string]any{"acpbridge": map[string]any{"toolCallId": toolCallID}}
}

// Running is a child's state while it works.
func Running() *acp.StateUpdate {
	return &acp.StateUpdate{Running: &acp.StateUpdateRunning{State: "running"}}
}

// Idle is a child's state once its work ended, and why.
func Idle(why acp.StopReason) *acp.StateUpdate {
	r := string(why)
	return &acp.StateUpdate{Idle: &acp.StateUpdateIdle{State: "idle", StopReason: &r}}
}

// Errors a backend reports, which the ACP edge turns into JSON-RPC codes.
// Wrap them with detail ("%w: ..."); they are matched with errors.Is.
var (
	// ErrInvalidParams: the request is malformed, or asks for what the
	// agent can't take (-32602).
	ErrInvalidParams = errors.New("invalid params")
	// ErrAuthRequired: the agent needs a login first (-32000).
	ErrAuthRequired = errors.New("authentication required")
	// ErrAgentUnavailable: the agent cannot run here (missing executable,
	// not built into this binary).
	ErrAgentUnavailable = errors.New("agent unavailable")
)
