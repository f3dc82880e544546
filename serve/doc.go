// Package serve is acpbridge's HTTP edge (acpbridge serve): the same
// sessions the stdio edge serves, reached over HTTP by remote editors, web
// apps and sandbox-agent's clients. Every client connection it accepts is
// one ACP connection of the shared core, served by a Connector on in-memory
// pipes; the package moves JSON-RPC messages between HTTP and those pipes
// and knows no agent.
//
// Where things are:
//   - server.go: Options, New and Run: the listener, the routes (mount),
//     shutdown; guard.go: the Host and Origin checks, CORS and the token;
//     throttle.go: the cap on each client's wrong tokens (10, then one a
//     second; 429 past it); state.go: the token made at start (a token
//     given must be as long, MinTokenLength), serve.json and serve.token;
//     listener.go: the cap on connections served at once; body.go: the
//     deadline on a request's body (DefaultBodyTimeout, 60 s), and a
//     refused request's body never read, its connection closed.
//   - conn.go: one client connection: its Connector on in-memory pipes,
//     the client's messages (Send, Call), bounded buffering; output.go:
//     the agent side's messages, routed without waiting, and the stall
//     watchdog; mailbox.go: the bounded queues of a connection's output,
//     one receiver each; registry.go: the server's connections, and the
//     sessions each has attached; msg.go: JSON-RPC messages.
//   - acphttp.go, sse.go, ws.go: ACP over Streamable HTTP (its POSTs, its
//     SSE streams) and WebSocket at /acp, as @agentclientprotocol/sdk
//     2.4.0's transports implement the RFD; a WebSocket is pinged every
//     Limits.PingInterval (30 s) and closed when its pong has not come by
//     the next ping.
//   - sandbox.go: sandbox-agent 0.4's API under /v1 (NewSandboxHandler);
//     sandbox_acp.go: its ACP servers (POST, the SSE stream, DELETE);
//     sandbox_log.go: the bounded log each server's streams replay;
//     sandbox_ext.go: its _sandboxagent/session methods; sandbox_agents.go:
//     GET /v1/agents.
//   - The web edges, each an ACP client of the core like any editor:
//     webconn.go, their in-process connections (a peer) and the sessions
//     opened on them; weblink.go, how a connection reaches the Connector
//     (pipes, or a Conn of the Registry); websession.go, a session's turn,
//     its ordered queue of updates, asks and end, and the asks waiting for
//     the web client; webchat.go, what the edges share: their chats (the
//     web client's ids, at most 1,024 bytes) bound to sessions, webstore.go
//     the map of them kept in the state dir, a file per chat, and
//     webturn.go the pump that streams a turn through a protocol's
//     translator into one HTTP response per segment (a permission ask
//     ends one; the request that answers it streams the next). aisdk.go is the AI SDK's chat protocol (POST /api/chat, its
//     resume, GET /v1/sessions and a session's UIMessages), aisdk_stream.go
//     its translation of ACP into UI message chunks, aisdk_messages.go
//     UIMessages in and out; agui.go is AG-UI 1.0 (POST /ag-ui),
//     agui_events.go its translation into events, agui_messages.go its
//     messages in and out.
//   - page.go, web/: the chat page at /, compiled in (plain ES modules, no
//     build step): it chats over POST /api/chat as the AI SDK's useChat
//     does; its browser tests drive it in headless Chromium
//     (browser_test.go, pageflow_test.go).
package serve
