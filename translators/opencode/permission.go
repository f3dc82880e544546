package opencode

import (
	"cmp"
	"context"
	"net/http"
	"strings"

	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Permission option ids are OpenCode's replies.
var permissionOptions = []acp.PermissionOption{
	{OptionId: "once", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
	{OptionId: "always", Name: "Always allow", Kind: acp.PermissionOptionKindAllowAlways},
	{OptionId: "reject", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
}

// permission asks the client about a permission.asked of the session's,
// or of its child session child (a subagent), and replies to OpenCode,
// unless it was answered elsewhere meanwhile. An ask the client answers
// cancelled is a reject, and ends the turn, or the child's work: the user
// dismissed it (a session/cancel withdraws it and aborts the turn
// itself).
func (s *session) permission(child string, a *PermissionAsk) {
	ctx := s.turns.Context()
	info := s.askInfo(a)
	id := s.announce(child, a.ID, a.Tool, info)
	ans := s.asks.AskIn(ctx, child, a.ID, info.Call(id), permissionOptions)
	if ans.Withdrawn {
		return
	}
	reply := "reject"
	if c := ans.Chosen(); c == "once" || c == "always" {
		reply = c
	}
	dismissed := ans.Err == nil && ans.Chosen() == "" && ctx.Err() == nil
	if dismissed && child == "" {
		s.dismissed.Store(true) // before the reply: the turn may end right after it
	}
	s.reply("/permission/"+a.ID+"/reply", map[string]any{"reply": reply})
	if dismissed {
		s.reply("/session/"+cmp.Or(child, s.NativeID())+"/abort", nil)
	}
}

// announce makes sure the client was shown the tool call an ask of the
// session's or of its child session child is about, and returns its id:
// the tool call's, or the ask's for an ask about none.
func (s *session) announce(child, askID string, tool *toolRef, info agentkit.ToolInfo) string {
	id := askID
	if tool != nil && tool.CallID != "" {
		id = tool.CallID
	}
	s.out.Lock()
	defer s.out.Unlock()
	s.out.SendIn(child, s.tr.AnnounceIn(child, id, info))
	return id
}

// askInfo shows what a permission is for: the command, or the edit with
// its diff.
func (s *session) askInfo(a *PermissionAsk) agentkit.ToolInfo {
	md := a.Metadata
	var info agentkit.ToolInfo
	switch a.Permission {
	case "bash":
		info = agentkit.ToolInfo{Kind: acp.ToolKindExecute, Title: cmp.Or(md.Str("command"), strings.Join(a.Patterns, " "))}
	case "edit":
		path := agentkit.AbsPath(md.Str("filepath", "filePath"), s.dir)
		info = agentkit.FileEdit("Edit ", path, s.dir, agentkit.UnifiedEdit(md.Str("diff")))
	case "webfetch":
		info = agentkit.ToolInfo{Kind: acp.ToolKindFetch, Title: "Fetch " + cmp.Or(md.Str("url"), strings.Join(a.Patterns, " "))}
	case "read":
		info = agentkit.FileRead(agentkit.AbsPath(md.Str("filepath", "filePath"), s.dir), s.dir, 0, 0)
	default:
		info = agentkit.ToolInfo{Kind: acp.ToolKindOther, Title: a.Permission + agentkit.Prefixed(" ", strings.Join(a.Patterns, " "))}
	}
	if a.Permission != "" && (info.Kind != acp.ToolKindOther) {
		info.Name = a.Permission // the four above are named as their tools are
	}
	info.RawInput = map[string]any{"permission": a.Permission, "patterns": a.Patterns, "metadata": md, "always": a.Always}
	return info
}

// question puts OpenCode's questions (of the session's, or of its child
// session child) to the client one by one, as
// permission asks whose options are the answers, and replies with the
// answers, or rejects the question if the client would not answer.
func (s *session) question(child string, q *QuestionAsk) {
	id := q.ID
	call := s.announce(child, id, q.Tool, agentkit.ToolInfo{Name: "question", Kind: acp.ToolKindOther, Title: "Ask the user"})
	var answers [][]string
	for _, qu := range q.Questions {
		c := s.asks.ChooseIn(s.turns.Context(), child, id, call, qu.question())
		if c.Withdrawn {
			return
		}
		if !c.Answered {
			s.reply("/question/"+id+"/reject", nil)
			return
		}
		answers = append(answers, []string{c.Label})
	}
	s.reply("/question/"+id+"/reply", map[string]any{"answers": answers})
}

// reply answers an ask on the session's server.
func (s *session) reply(path string, body any) {
	srv, ok := s.at.Current()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.life, callTimeout)
	defer cancel()
	if body == nil {
		body = map[string]any{}
	}
	if err := srv.call(ctx, http.MethodPost, path, s.dir, body, nil); err != nil {
		s.log.Warn("answering opencode", "path", path, "err", err)
	}
}
