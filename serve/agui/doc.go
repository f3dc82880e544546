// Package agui is acpbridge serve's AG-UI 1.0 edge (@ag-ui/client's
// HttpAgent): POST /ag-ui takes a RunAgentInput and streams the run's
// events. A thread is a bridge session; its chats, turns and asks are
// package web's, as the AI SDK edge's are.
//
// The layout: handler.go, the Handler, a run's set-up and the answers to
// its interrupts; events.go, the events and the translation of a turn's
// ACP events into runs (a web.Translator); messages.go, AG-UI messages
// in (a user message as a prompt, the history a new session is told) and
// out (a session/load replay as MESSAGES_SNAPSHOT).
//
// A subagent (web.Subagents) is an activity of type "subagent" keyed by
// its session id, replaced whole as it goes, as the compaction's is, and
// replayed in MESSAGES_SNAPSHOT; AG-UI 1.0's SUBAGENT_* events are not
// used, as a snapshot would keep none of the subagent's title and state.
//
// It has no locks of its own: a translator is its turn's pump's alone.
package agui
