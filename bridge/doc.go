// Package bridge is acpbridge's session engine: it owns the sessions of its
// client connections (one on stdio; one per client under acpbridge serve,
// each session attached to one of them at a time: see Conn), one running
// turn per session, the order of each
// session's updates, and the transcript that every update is folded into
// ("two outputs, one input": each update goes to the client and, through
// an Accumulator, to the store that session/load replays).
//
// It speaks ACP's data types (github.com/coder/acp-go-sdk) but no
// JSON-RPC: an edge (the ACP edge, package acp/edge) calls a Manager and hands
// it a Client to send through. Agents plug in behind the contract of
// package agent, one package each under translators/; the engine knows no
// agent's wire format.
//
// Where things are:
//   - manager.go: the Manager, its Config, and session/new, load, resume,
//     close, delete and shutdown; conn.go: client connections, the
//     sessions attached to each, and taking one over; list.go: session/list; fork.go:
//     session/fork.
//   - session.go: a Session, opening its native session and closing it, and
//     the Events it hands the agent.
//   - turns.go: prompts, queued in arrival order (Order), one turn at a
//     time, and cancellation.
//   - record.go: the transcript as a turn streams: the Accumulator's
//     entries, checkpoints of a running turn, the header.
//   - replay.go: session/load's replay, from the transcript or the agent's
//     own history.
//   - handoff.go: changing a session's agent, and telling the next agent
//     (or a fork's) the conversation so far.
//   - idle.go: stopping agents idle too long, or beyond MaxAgents.
//   - config.go: the session's config options, the agent's and the
//     bridge's own (agent, edits); edits.go: edits through the editor.
//   - editor.go: the client's fs, terminals and extension methods, as an
//     agent's agent.Editor.
//   - subagents.go: child sessions (an agent's subagents, agent.Events.Child):
//     their ids, announcements, updates and asks, as the client takes them
//     (clientCapabilities.subagents) or flattened onto the parent; their
//     replay, restrictions and cancel.
//   - accumulator.go, encode.go: folding updates into transcript entries
//     and encoding them.
//
// Locks: a Session's sendMu (the order of its updates) is taken before its
// mu (its state), the Manager's mu and a Conn's mu (a send reads the
// client), never after any. The Manager's mu covers only its own fields and is
// never held while a Session's lock is taken.
package bridge
