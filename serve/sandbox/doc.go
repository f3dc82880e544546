// Package sandbox is sandbox-agent 0.4's HTTP API under /v1 (the daemon
// of npm sandbox-agent 0.4.2, whose SDK and acp-http-client drive it):
// its ACP servers, each a core.Conn of the server's Registry under a
// client-chosen id, the SSE log each server's streams replay, its
// _sandboxagent/session extension methods, /v1/health and /v1/agents.
// Problem answers (RFC 9457) are sandbox-agent's shape; the server in
// front uses Refuse for what it refuses under /v1.
//
// Where things are: sandbox.go, the handler (NewHandler, Options) and its
// problems; acp.go, an ACP server's POST, SSE stream and DELETE; log.go,
// the bounded log each server's streams replay; ext.go, the
// _sandboxagent/session methods; agents.go, GET /v1/agents
// (AgentStatus).
//
// Lock order: handler.mu → core.Registry.mu and core.Conn.mu (create
// starts a server's connection with it held); sbServer.mu and
// eventLog.mu are leaves, taken under core.Conn.wmu when route files the
// agent side's messages; hold's timer lock is taken with none held.
package sandbox
