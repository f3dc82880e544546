package agui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/web"
	"github.com/coder/acp-go-sdk"
)

// Pattern is the route a Handler serves (a net/http pattern).
const Pattern = "POST /ag-ui"

// Handler serves AG-UI 1.0 (@ag-ui/client's HttpAgent) on the
// bridge's sessions: POST /ag-ui takes a RunAgentInput and streams the
// run's events (SSE). The thread is a bridge session: a thread id the
// bridge doesn't know starts one (forwardedProps' agent, model, mode and
// cwd choose it), told the messages before the last if there are any; a
// thread it knows but had not open here is loaded, and the run begins
// with a MESSAGES_SNAPSHOT of its conversation. A run whose last message
// is a user message the thread has not been prompted with prompts it. A
// permission ask ends the run with an interrupt (one per ask: its id, the
// tool call, and a responseSchema for {"optionId": …} listing the ask's
// options); the next run's resume entry answers it (resolved with the
// payload {"optionId": …}, or {"approved": true|false} for the first
// option that allows or rejects; or cancelled), and that run streams the
// rest of the turn. A client that goes away mid-run cancels the turn.
//
// The map from thread ids to sessions is kept in web.Options.StateDir
// (agui-threads/, a file per thread); a thread whose id is a session id
// is that session. Thread and run ids are at most 1,024 bytes.
type Handler struct {
	chats *web.Chats
}

// NewHandler returns a Handler whose in-process ACP connections
// connect makes (through o.Registry's Conns if set). Mount it at
// Pattern, and Close it at shutdown to end them.
func NewHandler(connect core.Connector, o web.Options) *Handler {
	return &Handler{chats: web.NewChats(connect, o, "agui-threads")}
}

// Close cancels the running turns, ends the in-process connections and
// waits for them.
func (h *Handler) Close() { h.chats.Close() }

// runInput is AG-UI's RunAgentInput, the fields the bridge reads.
type runInput struct {
	ThreadID       string      `json:"threadId"`
	RunID          string      `json:"runId"`
	State          any         `json:"state"`
	Messages       []messageIn `json:"messages"`
	ForwardedProps struct {
		Agent string `json:"agent"`
		Model string `json:"model"`
		Mode  string `json:"mode"`
		Cwd   string `json:"cwd"`
	} `json:"forwardedProps"`
	Resume []resumeEntry `json:"resume"`
}

// messageIn is an AG-UI message as a client sends it.
type messageIn struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []toolCall      `json:"toolCalls"`
	ToolCallID string          `json:"toolCallId"`
}

// resumeEntry answers an interrupt.
type resumeEntry struct {
	InterruptID string `json:"interruptId"`
	Status      string `json:"status"`
	Payload     struct {
		OptionID string `json:"optionId"`
		Approved *bool  `json:"approved"`
	} `json:"payload"`
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in runInput
	if err := web.DecodeBody(w, r, &in); err != nil {
		web.WriteError(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.ThreadID == "" || in.RunID == "" || in.Messages == nil {
		web.WriteError(w, http.StatusBadRequest, "not an AG-UI RunAgentInput: threadId, runId and messages are required")
		return
	}
	if n := max(len(in.ThreadID), len(in.RunID)); n > web.MaxChatID {
		web.WriteError(w, http.StatusBadRequest, fmt.Sprintf("the threadId or runId is %d bytes; at most %d", n, web.MaxChatID))
		return
	}
	h.chats.Serve(w, r, "thread", in.ThreadID, func(ctx context.Context, c *web.Chat) (*web.Segment, *web.Session, error) {
		return h.begin(ctx, c, &in)
	})
}

// begin sets up a run: answering interrupts, or a new turn, or (nothing
// new to send) a run that only says what the thread is. The caller holds
// c.op.
func (h *Handler) begin(ctx context.Context, c *web.Chat, in *runInput) (*web.Segment, *web.Session, error) {
	info := segment{threadID: in.ThreadID, runID: in.RunID, state: in.State}
	if len(in.Resume) > 0 {
		seg, err := h.chats.Resume(c, info, func(s *web.Session) error { return answerInterrupts(s, in.Resume) })
		return seg, c.Session(), err
	}
	var last *messageIn
	if n := len(in.Messages); n > 0 {
		last = &in.Messages[n-1]
	}
	history, reopened, err := h.chats.Open(ctx, c, true)
	prompting := last != nil && last.Role == "user" && last.ID != c.LastUser()
	created := false
	switch {
	case errors.Is(err, web.ErrUnknownChat) && prompting:
		fp := in.ForwardedProps
		err = h.chats.Create(ctx, c, web.NewChat{Agent: fp.Agent, Cwd: fp.Cwd, Mode: fp.Mode, Model: fp.Model})
		created = true
	case errors.Is(err, web.ErrUnknownChat):
		return nil, nil, fmt.Errorf("%w: no session has this thread id, and the run has no user message to start one with", web.ErrUnknownChat)
	}
	if err != nil {
		return nil, nil, err
	}
	if reopened {
		info.preface = []any{messagesSnapshot(history, last, prompting)}
	}
	if !prompting {
		return idleRun(c, info, c.Session().ID)
	}
	prompt, err := promptOf(*last)
	if err != nil {
		return nil, nil, err
	}
	if created {
		prompt = toldHistory(in.Messages[:len(in.Messages)-1], prompt)
	}
	if err := h.chats.Settle(ctx, c); err != nil {
		return nil, nil, err
	}
	seg, err := h.chats.Start(c, prompt, newRun(c.Session().ID), info)
	if err == nil {
		h.chats.Prompted(c, last.ID)
	}
	return seg, c.Session(), err
}

// idleRun is a run with nothing to prompt: started and finished, with the
// thread's messages if it was reopened. A thread that waits on interrupts
// must be resumed instead.
func idleRun(c *web.Chat, info segment, sessionID string) (*web.Segment, *web.Session, error) {
	if c.Running() {
		return nil, nil, fmt.Errorf("%w: a turn of this thread is running or waits on an interrupt; resume it", web.ErrTurnRunning)
	}
	seg := web.NewSegment(info)
	seg.Add(event{Type: "RUN_STARTED", ThreadID: info.threadID, RunID: info.runID})
	seg.Add(info.preface...)
	seg.Add(event{Type: "RUN_FINISHED", ThreadID: info.threadID, RunID: info.runID, Outcome: succeeded(),
		Result: map[string]any{"sessionId": sessionID}})
	seg.Close()
	return seg, nil, nil
}

// answerInterrupts answers the session's open asks that entries resume
// (see web.Session.AnswerAsks).
func answerInterrupts(s *web.Session, entries []resumeEntry) error {
	answers := make([]web.AskAnswer, len(entries))
	for i, e := range entries {
		answers[i] = web.AskAnswer{ID: e.InterruptID, Outcome: func(a *web.Ask) (acp.RequestPermissionOutcome, error) { return resumeOutcome(a, e) }}
	}
	return s.AnswerAsks("interrupts", answers)
}

// resumeOutcome is the permission outcome a resume entry gives.
func resumeOutcome(a *web.Ask, e resumeEntry) (acp.RequestPermissionOutcome, error) {
	switch {
	case e.Status == "cancelled":
		return acp.NewRequestPermissionOutcomeCancelled(), nil
	case e.Status != "resolved":
		return acp.RequestPermissionOutcome{}, fmt.Errorf("%w: resume status %q is neither resolved nor cancelled", web.ErrBadRequest, e.Status)
	case e.Payload.OptionID == "" && e.Payload.Approved == nil:
		return acp.RequestPermissionOutcome{}, fmt.Errorf("%w: interrupt %s: the payload names no optionId", web.ErrBadRequest, a.ID)
	}
	return web.OutcomeOf(a, e.Payload.Approved != nil && *e.Payload.Approved, e.Payload.OptionID)
}
