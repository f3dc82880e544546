// Package acphttp is ACP over HTTP at /acp: Streamable HTTP (a POST per
// client message, SSE streams for the agent side's) and WebSocket (a text
// frame per message), as @agentclientprotocol/sdk 2.4.0's transports
// implement the RFD "streamable-http-websocket-transport". Each client
// connection is a core.Conn of the server's Registry.
//
// Where things are: acphttp.go, the handler (NewHandler), its POSTs and
// DELETE, and httpConn, a connection's streams and where each message
// goes; sse.go, the SSE streams (GET); ws.go, a connection over
// WebSocket, pinged every Limits.PingInterval (30 s) and closed when its
// pong has not come by the next ping.
//
// Lock order: httpConn.mu → core.Conn.mu (of the connection's
// Mailboxes). httpConn.route runs under the Conn's write lock
// (core.Conn.wmu), so it and httpConn.detached never wait for a client.
// wsConn has no mutex: its reader and its writer own what each uses.
package acphttp
