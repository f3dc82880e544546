package claude

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// request sends a control request to the CLI and waits for its answer.
// Answers are read by the read loop, so requests may come from anywhere,
// including while the CLI is still starting.
func (s *session) request(ctx context.Context, p *proc.Process, req map[string]any) (json.RawMessage, error) {
	ch := make(chan reply, 1)
	s.mu.Lock()
	s.nextID++
	id := fmt.Sprintf("req_%d", s.nextID)
	s.pending[id] = ch
	s.mu.Unlock()
	if err := s.write(p, map[string]any{"type": "control_request", "request_id": id, "request": req}); err != nil {
		s.forget(id)
		return nil, err
	}
	select {
	case r := <-ch:
		return r.body, r.err
	case <-ctx.Done():
		s.forget(id)
		return nil, fmt.Errorf("claude did not answer %s: %w", req["subtype"], ctx.Err())
	}
}

func (s *session) forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, id)
}

// resolve hands a control_response to the request waiting for it.
func (s *session) resolve(raw json.RawMessage) {
	var r struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		s.log.Warn("undecodable control_response from claude", "err", err)
		return
	}
	s.mu.Lock()
	ch := s.pending[r.RequestID]
	delete(s.pending, r.RequestID)
	s.mu.Unlock()
	if ch == nil {
		return
	}
	if r.Subtype == "error" {
		ch <- reply{err: errors.New(r.Error)}
		return
	}
	ch <- reply{body: r.Response}
}

// toolAsk is a can_use_tool request.
type toolAsk struct {
	Subtype     string           `json:"subtype"`
	ToolName    string           `json:"tool_name"`
	Input       map[string]any   `json:"input"`
	ToolUseID   string           `json:"tool_use_id"`
	AgentID     string           `json:"agent_id"` // a subagent's ask: its task id
	Suggestions []map[string]any `json:"permission_suggestions"`
	child       string           // the child session asking (see Translator.ChildOf)
}

// control answers a request from the CLI. Permission asks wait for the
// user, so they are answered from their own goroutine.
func (s *session) control(p *proc.Process, id string, raw json.RawMessage) {
	var req toolAsk
	if err := json.Unmarshal(raw, &req); err != nil {
		s.respondError(p, id, "acpbridge could not decode the request: "+err.Error())
		return
	}
	switch req.Subtype {
	case "can_use_tool":
		s.canUseTool(p, id, req)
	case "hook_callback":
		s.respond(p, id, map[string]any{"continue": true})
	default:
		s.respondError(p, id, "acpbridge does not handle "+req.Subtype+" requests")
	}
}

func (s *session) canUseTool(p *proc.Process, id string, req toolAsk) {
	if taskTool(req.ToolName) { // the task list is shown as the plan; nothing to ask
		s.respond(p, id, allow(req.Input))
		return
	}
	s.out.Lock()
	req.child = s.tr.ChildOf(req.ToolUseID, req.AgentID)
	s.out.SendIn(req.child, s.tr.Announce(req.ToolUseID, req.ToolName, req.Input))
	s.out.Unlock()
	if req.ToolName == "AskUserQuestion" {
		ctx := s.turns.Context()
		s.tasks.Go(func() { s.question(ctx, p, id, req) })
		return
	}
	ctx := s.turns.Context()
	s.tasks.Go(func() { s.ask(ctx, p, id, req) })
}

// question puts AskUserQuestion's questions to the user one by one, as
// asks whose options are the answers, and allows the tool with the
// answers in its input — {"answers": {question: label}}, as Claude Code's
// own dialog answers it. A question left unanswered is left out (Claude is
// told the user did not answer it); a multiple-choice question takes one
// answer. An ask the client answers cancelled ends the turn.
func (s *session) question(ctx context.Context, p *proc.Process, id string, req toolAsk) {
	answers := map[string]any{}
	for _, q := range questions(req.Input) {
		c := s.asks.ChooseIn(ctx, req.child, id, req.ToolUseID, q)
		switch {
		case c.Withdrawn:
			return
		case c.Err != nil:
			s.respond(p, id, deny("acpbridge could not ask the user: "+c.Err.Error(), false))
			return
		case c.Cancelled:
			s.dismissed.Store(true)
			s.respond(p, id, deny("The user cancelled the turn.", true))
			return
		case c.Answered:
			answers[q.Text] = c.Label
		}
	}
	in := maps.Clone(req.Input)
	if in == nil {
		in = map[string]any{}
	}
	in["answers"] = answers
	s.respond(p, id, allow(in))
}

// questions are AskUserQuestion's well-formed questions.
func questions(input map[string]any) []agent.Question {
	var out []agent.Question
	for _, q := range agentkit.Input(input).Objects("questions") {
		aq := agent.Question{Text: q.Str("question"), Header: q.Str("header")}
		for _, o := range q.Objects("options") {
			if o.Str("label") != "" {
				aq.Options = append(aq.Options, agent.QuestionOption{Label: o.Str("label"), Description: o.Str("description")})
			}
		}
		if aq.Text != "" && len(aq.Options) > 0 {
			out = append(out, aq)
		}
	}
	return out
}

// ask puts a permission ask to the user and answers the CLI, unless the
// CLI withdrew the ask meanwhile (control_cancel_request).
func (s *session) ask(ctx context.Context, p *proc.Process, id string, req toolAsk) {
	info := tools.Describe(req.ToolName, req.Input, s.cwd)
	info.RawInput = req.Input
	a := s.asks.AskIn(ctx, req.child, id, info.Call(req.ToolUseID), permissionOptions(req.ToolName))
	if a.Withdrawn {
		return
	}
	resp, mode := decide(req, a)
	if a.Err == nil && a.Chosen() == "" {
		s.dismissed.Store(true)
	}
	s.respond(p, id, resp)
	if mode != "" {
		s.tasks.Go(func() { s.switchMode(mode) })
	}
}

// switchMode applies the mode picked when a plan was approved.
func (s *session) switchMode(mode string) {
	if err := s.SetConfig(s.life, agent.ConfigMode, mode); err != nil {
		s.log.Warn("switching mode after the plan", "mode", mode, "err", err)
		return
	}
	s.ev.Update(acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: acp.SessionModeId(mode)}})
	s.ev.ConfigChanged()
}

// Permission option ids.
const (
	optAllow  = "allow"
	optAlways = "always"
	optReject = "reject"
	optPlan   = "plan" // ExitPlanMode: keep planning
)

func permissionOptions(tool string) []acp.PermissionOption {
	if tool == "ExitPlanMode" {
		return []acp.PermissionOption{
			{OptionId: "acceptEdits", Name: "Yes, and auto-accept edits", Kind: acp.PermissionOptionKindAllowAlways},
			{OptionId: "default", Name: "Yes, and ask before edits", Kind: acp.PermissionOptionKindAllowOnce},
			{OptionId: optPlan, Name: "No, keep planning", Kind: acp.PermissionOptionKindRejectOnce},
		}
	}
	return []acp.PermissionOption{
		{OptionId: optAllow, Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionId: optAlways, Name: "Always allow", Kind: acp.PermissionOptionKindAllowAlways},
		{OptionId: optReject, Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
	}
}

// decide turns the user's answer into the CLI's, and the mode to switch
// to after an approved plan. Allow echoes the input: 2.1.197 rejects an
// allow without updatedInput.
func decide(req toolAsk, a agentkit.Answer) (map[string]any, string) {
	switch {
	case a.Err != nil:
		return deny("acpbridge could not ask the user: "+a.Err.Error(), false), ""
	case a.Chosen() == "":
		return deny("The user cancelled the turn.", true), ""
	}
	switch id := a.Chosen(); id {
	case optAllow:
		return allow(req.Input), ""
	case optAlways:
		a := allow(req.Input)
		if rules := sessionRules(req.Suggestions); len(rules) > 0 {
			a["updatedPermissions"] = rules
		}
		return a, ""
	case "acceptEdits", "default":
		return allow(req.Input), id
	case optPlan:
		return deny("The user wants to keep planning.", false), ""
	}
	return deny("The user rejected this tool call.", false), ""
}

func allow(input map[string]any) map[string]any {
	if input == nil {
		input = map[string]any{}
	}
	return map[string]any{"behavior": "allow", "updatedInput": input}
}

func deny(message string, interrupt bool) map[string]any {
	d := map[string]any{"behavior": "deny", "message": message}
	if interrupt {
		d["interrupt"] = true
	}
	return d
}

// sessionRules keeps the CLI's suggested allow rules, for this session
// only: "always allow" in the editor should not edit the user's settings.
func sessionRules(suggestions []map[string]any) []map[string]any {
	var rules []map[string]any
	for _, sug := range suggestions {
		if sug["type"] == "addRules" && sug["behavior"] == "allow" {
			r := map[string]any{}
			for k, v := range sug {
				r[k] = v
			}
			r["destination"] = "session"
			rules = append(rules, r)
		}
	}
	return rules
}

func (s *session) respond(p *proc.Process, id string, resp map[string]any) {
	s.reply(p, map[string]any{"subtype": "success", "request_id": id, "response": resp})
}

func (s *session) respondError(p *proc.Process, id, msg string) {
	s.reply(p, map[string]any{"subtype": "error", "request_id": id, "error": msg})
}

func (s *session) reply(p *proc.Process, r map[string]any) {
	if err := s.write(p, map[string]any{"type": "control_response", "response": r}); err != nil {
		s.log.Warn("answering claude", "err", err)
	}
}
