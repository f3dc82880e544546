package edge

import (
	"context"
	"slices"
	"strings"

	"github.com/coder/acp-go-sdk"
)

// Login is how a client runs an agent's own login (`claude auth login`,
// `codex login` …) through acpbridge, in a terminal. Args are the arguments
// added to acpbridge's command line for agent (ACP terminal auth: the client
// runs the agent binary again, with these added); Self is that command line
// as this process was started (executable first), for clients that want a
// whole command instead (Zed's `_meta["terminal-auth"]`).
type Login struct {
	Args func(agent string) []string
	Self []string
}

// SetLogin makes initialize offer each agent's login as an auth method.
// Without it the bridge offers none.
func (s *Server) SetLogin(l Login) { s.login = l }

// authMethods offers one method per agent that has a login of its own,
// the default agent first, with id "<agent>-login". A client that can run
// a terminal (auth.terminal, or _meta "terminal-auth") gets terminal
// methods that run the login; any other gets methods it can only
// authenticate with once the user has logged in by hand, which
// authenticate checks.
func (s *Server) authMethods(caps acp.ClientCapabilities) []acp.AuthMethod {
	if s.login.Args == nil {
		return []acp.AuthMethod{}
	}
	metaTerminal, _ := caps.Meta["terminal-auth"].(bool)
	out := []acp.AuthMethod{}
	for _, l := range s.m.Logins() {
		args := s.login.Args(l.Agent)
		desc := "Runs " + l.Title + "'s own login in a terminal. Now: " + l.Login.Detail
		if !caps.Auth.Terminal && !metaTerminal {
			desc = "Run `acpbridge " + strings.Join(args, " ") + "` in a terminal, then choose this. " + l.Login.Detail
			out = append(out, acp.AuthMethod{Agent: &acp.AuthMethodAgent{Id: methodID(l.Agent), Name: "Log in to " + l.Title, Description: &desc}})
			continue
		}
		m := &acp.AuthMethodTerminalInline{Id: methodID(l.Agent), Name: "Log in to " + l.Title, Description: &desc, Args: args}
		if metaTerminal && len(s.login.Self) > 0 {
			m.Meta = map[string]any{"terminal-auth": map[string]any{
				"command": s.login.Self[0], "args": append(slices.Clone(s.login.Self[1:]), args...), "label": l.Title + " login"}}
		}
		out = append(out, acp.AuthMethod{Terminal: m})
	}
	return out
}

// AuthMethods are the auth methods initialize offers a client with caps:
// none without SetLogin. The v2 edge offers the same, in v2's shape.
func (s *Server) AuthMethods(caps acp.ClientCapabilities) []acp.AuthMethod {
	return s.authMethods(caps)
}

func methodID(agent string) acp.AuthMethodId { return acp.AuthMethodId(agent + "-login") }

// authCapabilities offers logout when the default agent has one.
func (s *Server) authCapabilities() acp.AgentAuthCapabilities {
	if !s.offersLogout() {
		return acp.AgentAuthCapabilities{}
	}
	return acp.AgentAuthCapabilities{Logout: &acp.LogoutCapabilities{}}
}

// Authenticate checks the login of the agent the method names: it answers
// when the agent's credentials can be seen now (the user ran its login, in
// the client's terminal or by hand), and auth_required saying what to run
// when they can't.
func (s *Server) Authenticate(_ context.Context, req acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	if s.login.Args == nil {
		return acp.AuthenticateResponse{}, acp.NewInvalidParams(map[string]any{
			"error": "unknown auth method " + string(req.MethodId) + "; acpbridge offers none"})
	}
	var ids []string
	for _, l := range s.m.Logins() {
		ids = append(ids, string(methodID(l.Agent)))
		if methodID(l.Agent) != req.MethodId {
			continue
		}
		if l.Login.OK {
			return acp.AuthenticateResponse{}, nil
		}
		return acp.AuthenticateResponse{}, &acp.RequestError{Code: -32000,
			Message: "Authentication required: " + l.Title + " has no credentials yet: " + l.Login.Detail +
				"; run `acpbridge " + strings.Join(s.login.Args(l.Agent), " ") + "` in a terminal",
			Data: map[string]any{"authMethods": []string{string(req.MethodId)}}}
	}
	return acp.AuthenticateResponse{}, acp.NewInvalidParams(map[string]any{
		"error": "unknown auth method " + string(req.MethodId) + "; acpbridge offers " + strings.Join(ids, ", ")})
}

// missingLogins are the auth methods of the agents whose credentials can't
// be seen, for an auth_required error to point at.
func (s *Server) missingLogins() []string {
	ids := []string{}
	if s.login.Args == nil {
		return ids
	}
	for _, l := range s.m.Logins() {
		if !l.Login.OK {
			ids = append(ids, string(methodID(l.Agent)))
		}
	}
	return ids
}
