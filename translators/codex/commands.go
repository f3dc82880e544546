package codex

import (
	"context"
	"fmt"
	"strings"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Codex has no slash commands over app-server; the session offers the ones
// its CLI has that app-server can do, as Zed's Codex adapter does:
//
//	/review [instructions]  review/start on the thread: the uncommitted
//	                        changes, or the instructions given; a turn
//	/compact                thread/compact/start: a turn that summarises
//	                        the conversation
//	/status                 answered by the bridge: the thread, mode,
//	                        model and effort
//	/rename NAME            thread/name/set
//
// and the skills skills/list finds for the session's directory, as $name:
// a prompt "/$name …" goes to codex as "$name …", which codex reads as
// the skill's mention.
var builtins = []acp.AvailableCommand{
	{Name: "review", Description: "Review the uncommitted changes, or with the instructions given", Input: hint("optional review instructions")},
	{Name: "compact", Description: "Summarize the conversation to free the context"},
	{Name: "status", Description: "Show the session's thread, mode, model and effort"},
	{Name: "rename", Description: "Rename the session's thread", Input: hint("new name")},
}

func hint(h string) *acp.AvailableCommandInput {
	return &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: h}}
}

// listCommands tells the client the session's commands: the built-ins and
// the directory's skills.
func (s *session) listCommands(ctx context.Context, srv *server) {
	cmds := append([]acp.AvailableCommand(nil), builtins...)
	var res struct {
		Data []struct {
			Skills []struct {
				Name             string `json:"name"`
				Description      string `json:"description"`
				ShortDescription string `json:"shortDescription"`
				Enabled          *bool  `json:"enabled"`
			} `json:"skills"`
		} `json:"data"`
	}
	if err := srv.call(ctx, "skills/list", map[string]any{"cwds": []string{s.cwd}}, &res); err != nil {
		s.log.Debug("listing codex's skills", "err", err)
	}
	for _, e := range res.Data {
		for _, sk := range e.Skills {
			if sk.Enabled != nil && !*sk.Enabled {
				continue
			}
			desc := sk.ShortDescription
			if desc == "" {
				desc = sk.Description
			}
			cmds = append(cmds, acp.AvailableCommand{Name: "$" + sk.Name, Description: desc})
		}
	}
	s.out.Lock()
	s.out.Send([]acp.SessionUpdate{{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}})
	s.out.Unlock()
}

// slashCommand reads a prompt "/name arguments" naming a built-in; ok is
// false for any other prompt (a skill's "/$name" is rewritten to "$name"
// by toCodex's caller, see skillMention).
func slashCommand(prompt []acp.ContentBlock) (name, args string, ok bool) {
	name, args, ok = agentkit.SlashCommand(prompt)
	for _, b := range builtins {
		if ok && b.Name == name {
			return name, args, true
		}
	}
	return "", "", false
}

// skillMention turns a prompt's leading "/$skill" into codex's "$skill".
func skillMention(prompt []acp.ContentBlock) []acp.ContentBlock {
	if len(prompt) == 0 || prompt[0].Text == nil || !strings.HasPrefix(strings.TrimSpace(prompt[0].Text.Text), "/$") {
		return prompt
	}
	out := append([]acp.ContentBlock(nil), prompt...)
	out[0] = acp.TextBlock(strings.TrimPrefix(strings.TrimSpace(prompt[0].Text.Text), "/"))
	return out
}

// startCommand starts the turn of /review or /compact.
func (s *session) startCommand(srv *server, name, args string) error {
	s.mu.Lock()
	s.turnID, s.turnErr = "", ""
	thread := s.thread
	s.mu.Unlock()
	switch name {
	case "review":
		target := map[string]any{"type": "uncommittedChanges"}
		if args != "" {
			target = map[string]any{"type": "custom", "instructions": args}
		}
		var res struct {
			Turn struct {
				ID string `json:"id"`
			} `json:"turn"`
		}
		if err := srv.call(s.life, "review/start", map[string]any{"threadId": thread, "target": target}, &res); err != nil {
			return err
		}
		s.mu.Lock()
		s.turnID = res.Turn.ID
		s.mu.Unlock()
		return nil
	case "compact":
		return srv.call(s.life, "thread/compact/start", map[string]any{"threadId": thread}, nil)
	}
	return fmt.Errorf("%s is not a command that runs a turn", name)
}

// localCommand answers /status and /rename without a codex turn.
func (s *session) localCommand(ctx context.Context, name, args string) (agent.TurnResult, error) {
	srv, err := s.at.Server(ctx)
	if err != nil {
		return agent.TurnResult{}, err
	}
	s.mu.Lock()
	thread := s.thread
	s.mu.Unlock()
	var answer string
	switch name {
	case "status":
		answer = fmt.Sprintf("Thread %s in %s — mode %s, model %s, effort %s.", thread, s.cwd,
			s.cfg.Get(agent.ConfigMode), s.cfg.Get(agent.ConfigModel), s.cfg.Get(agent.ConfigEffort))
	case "rename":
		if args == "" {
			answer = "Usage: /rename NEW NAME"
			break
		}
		if err := srv.call(ctx, "thread/name/set", map[string]any{"threadId": thread, "name": args}, nil); err != nil {
			return agent.TurnResult{}, err
		}
		answer = "Renamed the thread to " + args + "."
	}
	s.out.Lock()
	s.out.Send([]acp.SessionUpdate{acp.UpdateAgentMessageText(answer)})
	s.out.Unlock()
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}
