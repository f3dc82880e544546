// Package aisdk is acpbridge serve's edge for the AI SDK's chat protocol
// (package ai 5.x to 7.x, what useChat's DefaultChatTransport speaks):
// POST /api/chat streams a chat's turn as a UI message stream, GET
// /api/chat/{id}/stream resumes it, GET /v1/sessions lists the bridge's
// sessions and GET /v1/sessions/{id}/messages gives one's conversation as
// UIMessages. Its chats, turns and asks are package web's, as AG-UI's
// are.
//
// The layout: handler.go, the Handler and its routes; stream.go, the
// translation of a turn's ACP events into UI message chunks (a
// web.Translator); messages.go, UIMessages in (a user message as a
// prompt, the history a new session is told) and out (a session/load
// replay folded as the AI SDK's processUIMessageStream folds the chunks).
//
// A subagent (web.Subagents) is a data-subagent part keyed by its session
// id, so that each chunk of it replaces the one before, its work inside as
// UIMessage-shaped parts: the AI SDK has no nesting of parts and no chunk
// that adds to a tool part's children, and a data part with an id is its
// way of one thing that changes as it goes (the plan's and compaction's
// too); a client draws it under the tool call its toolCallId names. Its
// permission ask must be answerable the AI SDK's way, which knows
// approvals on tool parts only: it is a tool part of its own
// (toolMetadata.subagent), in a step of its own so that the chat core's
// lastAssistantMessageIsCompleteWithApprovalResponses is not held back by
// the delegating call, which still runs.
//
// It has no locks of its own: a translator is its turn's pump's alone.
package aisdk
