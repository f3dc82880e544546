package sandbox

import (
	"context"
	"net/http"
)

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

// sandboxAgent is an agent as sandbox-agent's GET /v1/agents has it
// (AgentInfo): what its SDK and inspector read, and acpbridge's title and
// problem besides.
type sandboxAgent struct {
	ID                   string              `json:"id"`
	Installed            bool                `json:"installed"`
	CredentialsAvailable bool                `json:"credentialsAvailable"`
	Version              string              `json:"version,omitempty"`
	Capabilities         sandboxCapabilities `json:"capabilities"`
	// ConfigError says, when ?config=true asks for them, why there are no
	// configOptions: acpbridge has a session's, not an agent's.
	ConfigError string `json:"configError,omitempty"`
	Title       string `json:"title,omitempty"`
	Problem     string `json:"problem,omitempty"`
}

// sandboxCapabilities are sandbox-agent's AgentCapabilities: which kinds
// of events an agent's sessions have.
type sandboxCapabilities struct {
	PlanMode         bool `json:"planMode"`
	Permissions      bool `json:"permissions"`
	Questions        bool `json:"questions"`
	ToolCalls        bool `json:"toolCalls"`
	ToolResults      bool `json:"toolResults"`
	TextMessages     bool `json:"textMessages"`
	Images           bool `json:"images"`
	FileAttachments  bool `json:"fileAttachments"`
	SessionLifecycle bool `json:"sessionLifecycle"`
	ErrorEvents      bool `json:"errorEvents"`
	Reasoning        bool `json:"reasoning"`
	Status           bool `json:"status"`
	CommandExecution bool `json:"commandExecution"`
	FileChanges      bool `json:"fileChanges"`
	McpTools         bool `json:"mcpTools"`
	StreamingDeltas  bool `json:"streamingDeltas"`
	ItemStarted      bool `json:"itemStarted"`
	SharedProcess    bool `json:"sharedProcess"`
}

// bridgeCapabilities are what the bridge gives the sessions of every
// agent it runs (README, "What works, per agent"): streamed text,
// thoughts, tool calls with their output and diffs, plans, permission
// asks, images and embedded files in prompts, and the client's MCP
// servers passed on (the mock has none to use). Questions (Claude's and
// OpenCode's) are not every agent's; sandbox-agent's lifecycle, status,
// error and item-started events, and its shared processes, are none's.
var bridgeCapabilities = sandboxCapabilities{
	PlanMode: true, Permissions: true, ToolCalls: true, ToolResults: true, TextMessages: true,
	Images: true, FileAttachments: true, Reasoning: true, FileChanges: true, McpTools: true,
	StreamingDeltas: true,
}

// configError is ConfigError's text.
const configError = "acpbridge reports config options per session (session/new's configOptions), not per agent"

// agents answers GET /v1/agents.
func (h *sandboxHandler) agents(w http.ResponseWriter, r *http.Request) {
	list := []sandboxAgent{}
	for _, a := range h.listAgents(r.Context()) {
		list = append(list, toSandboxAgent(a, r.URL.Query().Get("config") == "true"))
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": list})
}

// agent answers GET /v1/agents/{agent}; an agent the bridge does not run
// is 400, as the daemon answers.
func (h *sandboxHandler) agent(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("agent")
	for _, a := range h.listAgents(r.Context()) {
		if a.ID == name {
			writeJSON(w, http.StatusOK, toSandboxAgent(a, r.URL.Query().Get("config") == "true"))
			return
		}
	}
	sandboxProblem(w, http.StatusBadRequest, "unsupported_agent", "Unsupported Agent", "unsupported agent: "+name+" (GET /v1/agents lists this bridge's)")
}

func (h *sandboxHandler) listAgents(ctx context.Context) []AgentStatus {
	if h.o.Agents == nil {
		return nil
	}
	return h.o.Agents(ctx)
}

// knownAgent reports whether the bridge runs an agent of that name.
func (h *sandboxHandler) knownAgent(ctx context.Context, name string) bool {
	for _, a := range h.listAgents(ctx) {
		if a.ID == name {
			return true
		}
	}
	return false
}

func toSandboxAgent(a AgentStatus, config bool) sandboxAgent {
	s := sandboxAgent{ID: a.ID, Installed: a.Installed, CredentialsAvailable: a.CredentialsAvailable,
		Version: a.Version, Capabilities: bridgeCapabilities, Title: a.Title, Problem: a.Problem}
	if config {
		s.ConfigError = configError
	}
	return s
}
