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
//     state.go: the token made at start, serve.json and serve.token;
//     listener.go: the cap on connections served at once.
//   - conn.go: one client connection: its Connector, the messages it
//     writes routed by JSON-RPC id and session, bounded buffering.
//   - acphttp.go, ws.go: ACP over Streamable HTTP and WebSocket at /acp,
//     as @agentclientprotocol/sdk 2.4.0's transports implement the RFD.
//   - sandbox.go: sandbox-agent 0.4's API under /v1.
package serve

import (
	"context"
	"io"
)

// Connector serves one ACP client connection: it reads the client's
// JSON-RPC messages from r (one per line) and writes the agent side's to w
// (one per line) until r ends or ctx is done. agent names the agent that
// the connection's new sessions run ("" for the bridge's default). The
// binary's is acp.Server.ServeConn; it shares one bridge.Manager between
// every connection, and when a connection ends its sessions go on
// unattached (turns run to their end and are recorded; open permission
// asks end cancelled) until another connection loads or resumes them.
type Connector func(ctx context.Context, r io.Reader, w io.Writer, agent string) error

// AgentStatus is one agent this bridge runs, as GET /v1/agents reports it
// (sandbox-agent's shape): whether it can run here, its version, and
// whether credentials were found for it.
type AgentStatus struct {
	ID, Title string
	// Installed: the agent's CLI was found (and runs); Problem says what is
	// missing when it is not.
	Installed bool
	Problem   string
	Version   string
	// CredentialsAvailable: a login or API key was seen for it.
	CredentialsAvailable bool
}

// Agents lists the agents the bridge runs, its default first.
type Agents func(ctx context.Context) []AgentStatus
