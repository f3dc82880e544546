package opencode

import (
	"context"
	"errors"
	"net/http"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// command is one of OpenCode's commands, as GET /command lists them:
// built-ins (init, review), the user's and the project's own (.opencode
// command files, config), and skills.
type command struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Source      string `json:"source"`
	Hints       []string
}

// listCommands tells the client the session's commands, once it is on a
// server: ACP's available_commands_update, each with an input hint when
// its template takes arguments.
func (s *session) listCommands(ctx context.Context, srv *server) {
	var cmds []command
	if err := srv.call(ctx, http.MethodGet, "/command", s.dir, nil, &cmds); err != nil {
		s.log.Warn("listing opencode's commands", "err", err)
		return
	}
	names := map[string]bool{}
	avail := make([]acp.AvailableCommand, 0, len(cmds))
	for _, c := range cmds {
		names[c.Name] = true
		a := acp.AvailableCommand{Name: c.Name, Description: c.Description}
		if len(c.Hints) > 0 {
			a.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: "arguments"}}
		}
		avail = append(avail, a)
	}
	s.mu.Lock()
	s.commands = names
	s.mu.Unlock()
	s.out.Lock()
	s.out.Send([]acp.SessionUpdate{{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: avail}}})
	s.out.Unlock()
}

// asCommand reads a prompt that invokes one of the session's commands —
// its first block a text "/name arguments" — and returns the name and the
// arguments; ok is false for any other prompt.
func (s *session) asCommand(prompt []acp.ContentBlock) (name, args string, ok bool) {
	name, args, ok = agentkit.SlashCommand(prompt)
	s.mu.Lock()
	defer s.mu.Unlock()
	return name, args, ok && s.commands[name]
}

// sendCommand runs a command (POST /session/{id}/command) with the mode,
// model and effort a prompt would run with. The call answers only when the
// command's turn is over, so it runs on its own: the turn streams and ends
// on the session's events, as a prompt's does; a command OpenCode refuses
// ends the turn with its answer.
func (s *session) sendCommand(srv *server, name, args string, changed map[string]string) {
	id, body := s.turnBody(changed)
	body["command"], body["arguments"] = name, args
	if m, ok := body["model"].(map[string]any); ok {
		body["model"] = m["providerID"].(string) + "/" + m["modelID"].(string) // this endpoint takes "provider/model"
	}
	s.tasks.Go(func() {
		err := srv.callLong(s.life, http.MethodPost, "/session/"+id+"/command", s.dir, body, nil)
		if err != nil && s.life.Err() == nil && !errors.Is(err, context.Canceled) {
			s.turns.End(&turnEnd{refused: err})
		}
	})
}
