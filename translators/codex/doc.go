// Package codex drives Codex through one shared `codex app-server` process
// per bridge, spoken to as a JSON-RPC client (github.com/creachadair/jrpc2)
// over its stdio: threads are sessions, turns are prompts, and approvals
// arrive as requests from the server (../shared/docs/codex.md). Translator
// turns a thread's notifications into ACP updates.
package codex
