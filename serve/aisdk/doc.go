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
// It has no locks of its own: a translator is its turn's pump's alone.
package aisdk
