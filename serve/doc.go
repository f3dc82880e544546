// Package serve is acpbridge's HTTP edge (acpbridge serve): the same
// sessions the stdio edge serves, reached over HTTP by remote editors, web
// apps and sandbox-agent's clients. Every client connection it accepts is
// one ACP connection of the shared core, served by a Connector on in-memory
// pipes; the edges move JSON-RPC messages between HTTP and those pipes
// and know no agent.
//
// The layout: one package per protocol, each importing the connection
// core and none importing another edge (the two web edges import web,
// what they share); this package is the shell that mounts them.
//
//   - serve (this package): Options, New and Run (server.go: the
//     listener, the routes, shutdown); guard.go: the Host and Origin
//     checks, CORS and the token; throttle.go: the cap on each client's
//     wrong tokens (10, then one a second; 429 past it); state.go: the
//     token made at start (a token given must be as long,
//     MinTokenLength), serve.json and serve.token; listener.go: the cap
//     on connections served at once; body.go: the deadline on a request's
//     body (DefaultBodyTimeout, 60 s), and a refused request's body never
//     read, its connection closed.
//   - internal/core: one client connection (a Connector on in-memory
//     pipes), its bounded output queues, the Registry of a server's
//     connections and the sessions each has attached, JSON-RPC messages.
//   - acphttp: ACP over Streamable HTTP and WebSocket at /acp.
//   - sandbox: sandbox-agent 0.4's API under /v1.
//   - web: what the two web edges share, each an ACP client of the core
//     like any editor: their in-process connections, the chats bound to
//     sessions (kept in the state dir, a file per chat), the turn pump
//     that streams a turn through a protocol's translator into one HTTP
//     response per segment (a permission ask ends one; the request that
//     answers it streams the next), and the one tool-call model both
//     translators keep.
//   - aisdk: the AI SDK's chat protocol (POST /api/chat, its resume, GET
//     /v1/sessions and a session's UIMessages): its translation of ACP
//     into UI message chunks, UIMessages in and out.
//   - agui: AG-UI 1.0 (POST /ag-ui): its translation of ACP into events,
//     its messages in and out.
//   - page: the chat page at /, compiled in, and its browser tests.
//   - internal/privfile: the 0600 files written whole (serve.json,
//     serve.token, the web chats).
//   - internal/servetest, internal/pagetest, internal/webtest: what the
//     packages' tests share (a fake agent, the bridge on the mock agent,
//     headless Chromium; the web edges' requests, stream readers, node
//     scripts and golden turns).
//
// The tests here run the whole server: its guard and shutdown, the hostile
// clients, sandbox-agent's SDK behind the token, the page in Chromium
// against a fake and the real chat, and the two web edges together (a
// session taken over from one by the other, the real agents through both,
// the benchmark of every edge).
//
// Lock order of this package (each package's doc has its own; a mutex may
// be held while taking those after it in its line): throttle.mu is a
// leaf.
package serve
