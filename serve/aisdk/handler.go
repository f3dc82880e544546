package aisdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// Patterns are the routes a Handler serves (net/http patterns);
// mount it at each.
var Patterns = []string{
	"POST /api/chat",
	"GET /api/chat/{id}/stream",
	"GET /v1/sessions",
	"GET /v1/sessions/{id}/messages",
}

// Handler serves the AI SDK's chat protocol (package ai 5.x to 7.x,
// what useChat's DefaultChatTransport speaks) on the bridge's sessions:
//
//   - POST /api/chat: a chat's next turn as a UI message stream. The chat
//     id is the client's; the first POST of an id the bridge doesn't know
//     starts a session (the body's agent, model, mode and cwd choose it), told
//     the messages before the last if there are any; later POSTs prompt it
//     with the last user message. A permission ask ends the response with a
//     tool approval request; the POST that carries the answer (the tool part
//     approval-responded) answers it and streams the rest of the turn. A
//     client that goes away mid-stream cancels the turn.
//   - GET /api/chat/{id}/stream: the running turn's current response from
//     its start, then as it goes on; 204 when no turn runs.
//   - GET /v1/sessions: the bridge's sessions, every agent's (session/list;
//     cursor and cwd as query parameters).
//   - GET /v1/sessions/{id}/messages: a session's conversation as
//     UIMessages, from its session/load replay.
//
// The map from chat ids to sessions is kept in web.Options.StateDir
// (webchats/, a file per chat), and a chat whose id is a session id (one
// reopened from GET /v1/sessions) is that session. A chat id is at most
// 1,024 bytes.
type Handler struct {
	chats *web.Chats
	mux   *http.ServeMux
}

// NewHandler returns a Handler whose in-process ACP connections
// connect makes (through o.Registry's Conns if set). Mount it at each of
// Patterns, and Close it at shutdown to end them.
func NewHandler(connect core.Connector, o web.Options) *Handler {
	h := &Handler{chats: web.NewChats(connect, o, "webchats"), mux: http.NewServeMux()}
	h.mux.HandleFunc("POST /api/chat", h.post)
	h.mux.HandleFunc("GET /api/chat/{id}/stream", h.resumeStream)
	h.mux.HandleFunc("GET /v1/sessions", h.sessions)
	h.mux.HandleFunc("GET /v1/sessions/{id}/messages", h.messages)
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

// Close cancels the running turns, ends the in-process connections and
// waits for them; requests after it answer 503.
func (h *Handler) Close() { h.chats.Close() }

// post serves POST /api/chat.
func (h *Handler) post(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if err := web.DecodeBody(w, r, &req); err != nil {
		web.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.ID == "" {
		web.WriteError(w, http.StatusBadRequest, "not a chat request: it has no chat id")
		return
	}
	if len(req.ID) > web.MaxChatID {
		web.WriteError(w, http.StatusBadRequest, fmt.Sprintf("the chat id is %d bytes; at most %d", len(req.ID), web.MaxChatID))
		return
	}
	h.chats.Serve(w, r, "chat", req.ID, func(ctx context.Context, c *web.Chat) (*web.Segment, *web.Session, error) {
		return h.begin(ctx, c, &req)
	}, streamHeaders...)
}

// streamHeaders mark a UI message stream.
var streamHeaders = []string{"X-Vercel-Ai-Ui-Message-Stream", "v1"}

// begin sets up what a POST asks: answering asks, or a new turn. The
// caller holds c.op.
func (h *Handler) begin(ctx context.Context, c *web.Chat, req *chatRequest) (*web.Segment, *web.Session, error) {
	var last *uiMessageIn
	if n := len(req.Messages); n > 0 {
		last = &req.Messages[n-1]
	}
	if last != nil && last.Role == "assistant" && hasApprovalAnswer(*last) {
		seg, err := h.chats.Resume(c, nil, func(s *web.Session) error { return answerApprovals(s, *last, req.OptionIDs) })
		return seg, c.Session(), err
	}
	if req.Trigger != "" && req.Trigger != "submit-message" {
		return nil, nil, fmt.Errorf("%w: trigger %q: an ACP session can't take back a turn; send a new message instead", web.ErrBadRequest, req.Trigger)
	}
	_, _, err := h.chats.Open(ctx, c, false)
	known := err == nil
	if err != nil && !errors.Is(err, web.ErrUnknownChat) {
		return nil, nil, err
	}
	if last == nil || last.Role != "user" {
		if !known {
			return nil, nil, fmt.Errorf("%w: no session has this chat id, and the request has no user message to start one with", web.ErrUnknownChat)
		}
		return nil, nil, fmt.Errorf("%w: the last message is not a user message: nothing to send", web.ErrBadRequest)
	}
	prompt, err := promptOf(*last)
	if err != nil {
		return nil, nil, err
	}
	if !known {
		n := web.NewChat{Agent: req.Agent, Cwd: req.Cwd, Mode: req.Mode, Model: req.Model}
		if err := h.chats.Create(ctx, c, n); err != nil {
			return nil, nil, err
		}
		prompt = toldHistory(req.Messages[:len(req.Messages)-1], prompt)
	}
	if err := h.chats.Settle(ctx, c); err != nil {
		return nil, nil, err
	}
	seg, err := h.chats.Start(c, prompt, newUIStream(c.Session().ID, "msg_"+web.RandomID()), nil)
	return seg, c.Session(), err
}

// hasApprovalAnswer tells an assistant message with a tool part in state
// approval-responded: a POST that answers asks.
func hasApprovalAnswer(m uiMessageIn) bool {
	for _, p := range m.Parts {
		if p.isTool() && p.State == "approval-responded" && p.Approval != nil {
			return true
		}
	}
	return false
}

// answerApprovals answers the session's open asks that m's tool parts
// answer: approved with the option optionIDs names for it, else the first
// that allows; denied with the first that rejects (see
// web.Session.AnswerAsks).
func answerApprovals(s *web.Session, m uiMessageIn, optionIDs map[string]string) error {
	var answers []web.AskAnswer
	for _, p := range m.Parts {
		if !p.isTool() || p.State != "approval-responded" || p.Approval == nil {
			continue
		}
		approved := p.Approval.Approved != nil && *p.Approval.Approved
		answers = append(answers, web.AskAnswer{ID: p.Approval.ID, Outcome: func(a *web.Ask) (acp.RequestPermissionOutcome, error) {
			return web.OutcomeOf(a, approved, optionIDs[a.ID])
		}})
	}
	return s.AnswerAsks("approval answers", answers)
}

// resumeStream serves GET /api/chat/{id}/stream.
func (h *Handler) resumeStream(w http.ResponseWriter, r *http.Request) {
	h.chats.ServeStream(w, r, r.PathValue("id"), streamHeaders...)
}

// sessions serves GET /v1/sessions.
func (h *Handler) sessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	page, err := h.chats.List(r.Context(), q.Get("cwd"), q.Get("cursor"))
	if err != nil {
		web.WriteError(w, web.StatusOf(err), err.Error())
		return
	}
	if page.Sessions == nil {
		page.Sessions = []acp.SessionInfo{}
	}
	web.WriteJSON(w, page)
}

// messages serves GET /v1/sessions/{id}/messages.
func (h *Handler) messages(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	history, err := h.chats.Replay(r.Context(), id, r.URL.Query().Get("cwd"))
	if err != nil {
		web.WriteError(w, web.StatusOf(err), fmt.Sprintf("session %s: %v", id, err))
		return
	}
	web.WriteJSON(w, replayMessages(id, history))
}
