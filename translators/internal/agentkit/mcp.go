package agentkit

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// MCP transports, as an agent's backend lists those it takes.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http"
	MCPSSE   = "sse"
)

// MCPServer is an MCP server the client passed, whatever its transport:
// what each agent's configuration format is made from.
type MCPServer struct {
	Name      string
	Transport string // MCPStdio, MCPHTTP or MCPSSE
	Command   string // stdio
	Args      []string
	Env       map[string]string
	URL       string // http and sse
	Headers   map[string]string
}

// Fields is the server as most agents' configurations spell it:
// command, args and env for a stdio server, else url and the headers under
// the key headers (agents differ on that one).
func (m MCPServer) Fields(headers string) map[string]any {
	if m.Transport == MCPStdio {
		return map[string]any{"command": m.Command, "args": m.Args, "env": m.Env}
	}
	return map[string]any{"url": m.URL, headers: m.Headers}
}

// MCPServers converts the client's MCP servers, refusing with an
// invalid-params error a transport that the agent does not take.
func MCPServers(name string, servers []acp.McpServer, takes ...string) ([]MCPServer, error) {
	out := make([]MCPServer, 0, len(servers))
	for _, s := range servers {
		var m MCPServer
		switch {
		case s.Stdio != nil:
			m = MCPServer{Name: s.Stdio.Name, Transport: MCPStdio, Command: s.Stdio.Command, Args: s.Stdio.Args, Env: map[string]string{}}
			for _, e := range s.Stdio.Env {
				m.Env[e.Name] = e.Value
			}
		case s.Http != nil:
			m = MCPServer{Name: s.Http.Name, Transport: MCPHTTP, URL: s.Http.Url, Headers: headerMap(s.Http.Headers)}
		case s.Sse != nil:
			m = MCPServer{Name: s.Sse.Name, Transport: MCPSSE, URL: s.Sse.Url, Headers: headerMap(s.Sse.Headers)}
		default:
			return nil, fmt.Errorf("%w: an MCP server with no known transport", agent.ErrInvalidParams)
		}
		if !slices.Contains(takes, m.Transport) {
			return nil, fmt.Errorf("%w: %s takes %s MCP servers, not %s (%s)", agent.ErrInvalidParams,
				name, strings.Join(takes, " and "), m.Transport, m.Name)
		}
		out = append(out, m)
	}
	return out, nil
}

func headerMap(hs []acp.HttpHeader) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}
