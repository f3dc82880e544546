package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	sdk "github.com/coder/acp-go-sdk"
)

// AGUIPattern is the route an AGUIHandler serves (a net/http pattern).
const AGUIPattern = "POST /ag-ui"

// AGUIHandler serves AG-UI 1.0 (@ag-ui/client's HttpAgent) on the
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
// The map from thread ids to sessions is kept in WebOptions.StateDir
// (agui-threads/, a file per thread); a thread whose id is a session id
// is that session. Thread and run ids are at most 1,024 bytes.
type AGUIHandler struct {
	chats *chats
}

// NewAGUIHandler returns an AGUIHandler whose in-process ACP connections
// connect makes (through o.Registry's Conns if set). Mount it at
// AGUIPattern, and Close it at shutdown to end them.
func NewAGUIHandler(connect core.Connector, o WebOptions) *AGUIHandler {
	return &AGUIHandler{chats: newChats(connect, o, "agui-threads")}
}

// Close cancels the running turns, ends the in-process connections and
// waits for them.
func (h *AGUIHandler) Close() { h.chats.Close() }

// runInput is AG-UI's RunAgentInput, the fields the bridge reads.
type runInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	State          any             `json:"state"`
	Messages       []aguiMessageIn `json:"messages"`
	ForwardedProps struct {
		Agent string `json:"agent"`
		Model string `json:"model"`
		Mode  string `json:"mode"`
		Cwd   string `json:"cwd"`
	} `json:"forwardedProps"`
	Resume []resumeEntry `json:"resume"`
}

// aguiMessageIn is an AG-UI message as a client sends it.
type aguiMessageIn struct {
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []aguiToolCall  `json:"toolCalls"`
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

func (h *AGUIHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var in runInput
	if err := decodeBody(w, r, &in); err != nil {
		webError(w, http.StatusBadRequest, err.Error())
		return
	}
	if in.ThreadID == "" || in.RunID == "" || in.Messages == nil {
		webError(w, http.StatusBadRequest, "not an AG-UI RunAgentInput: threadId, runId and messages are required")
		return
	}
	if n := max(len(in.ThreadID), len(in.RunID)); n > maxChatID {
		webError(w, http.StatusBadRequest, fmt.Sprintf("the threadId or runId is %d bytes; at most %d", n, maxChatID))
		return
	}
	c := h.chats.get(in.ThreadID)
	c.op.Lock()
	seg, sess, err := h.begin(r.Context(), c, &in)
	h.chats.forget(c)
	c.op.Unlock()
	if err != nil {
		webError(w, statusOf(err), fmt.Sprintf("thread %s: %v", in.ThreadID, err))
		return
	}
	sseHeaders(w)
	if !streamSegment(r.Context(), w, seg) && !seg.done() && sess != nil {
		h.chats.abandon(c, sess) // the client went away: the turn is cancelled, and recorded so
	}
}

// begin sets up a run: answering interrupts, or a new turn, or (nothing
// new to send) a run that only says what the thread is. The caller holds
// c.op.
func (h *AGUIHandler) begin(ctx context.Context, c *chat, in *runInput) (*segment, *psession, error) {
	info := aguiSegment{threadID: in.ThreadID, runID: in.RunID, state: in.State}
	if len(in.Resume) > 0 {
		seg, err := h.chats.resume(c, info, func(s *psession) error { return answerInterrupts(s, in.Resume) })
		return seg, c.sess, err
	}
	var last *aguiMessageIn
	if n := len(in.Messages); n > 0 {
		last = &in.Messages[n-1]
	}
	history, reopened, err := h.chats.open(ctx, c, true)
	prompting := last != nil && last.Role == "user" && last.ID != c.rec.LastUser
	created := false
	switch {
	case errors.Is(err, errUnknownChat) && prompting:
		fp := in.ForwardedProps
		err = h.chats.create(ctx, c, newChat{agent: fp.Agent, cwd: fp.Cwd, mode: fp.Mode, model: fp.Model})
		created = true
	case errors.Is(err, errUnknownChat):
		return nil, nil, fmt.Errorf("%w: no session has this thread id, and the run has no user message to start one with", errUnknownChat)
	}
	if err != nil {
		return nil, nil, err
	}
	if reopened {
		info.preface = []any{messagesSnapshot(history, last, prompting)}
	}
	if !prompting {
		return idleRun(c, info, c.sess.id)
	}
	prompt, err := aguiPrompt(*last)
	if err != nil {
		return nil, nil, err
	}
	if created {
		prompt = aguiToldHistory(in.Messages[:len(in.Messages)-1], prompt)
	}
	if err := h.chats.settle(ctx, c); err != nil {
		return nil, nil, err
	}
	seg, err := h.chats.start(c, prompt, newAGUIRun(c.sess.id), info)
	if err == nil {
		c.rec.LastUser = last.ID
		h.chats.keep(c.id, &c.rec)
	}
	return seg, c.sess, err
}

// idleRun is a run with nothing to prompt: started and finished, with the
// thread's messages if it was reopened. A thread that waits on interrupts
// must be resumed instead.
func idleRun(c *chat, info aguiSegment, sessionID string) (*segment, *psession, error) {
	if r := c.current(); r != nil {
		return nil, nil, fmt.Errorf("%w: a turn of this thread is running or waits on an interrupt; resume it", errTurnRunning)
	}
	seg := newSegment(info)
	seg.add(aguiEvent{Type: "RUN_STARTED", ThreadID: info.threadID, RunID: info.runID})
	seg.add(info.preface...)
	seg.add(aguiEvent{Type: "RUN_FINISHED", ThreadID: info.threadID, RunID: info.runID, Outcome: succeeded(),
		Result: map[string]any{"sessionId": sessionID}})
	seg.close()
	return seg, nil, nil
}

// answerInterrupts answers the session's open asks that entries resume
// (see psession.answerAsks).
func answerInterrupts(s *psession, entries []resumeEntry) error {
	answers := make([]askAnswer, len(entries))
	for i, e := range entries {
		answers[i] = askAnswer{id: e.InterruptID, outcome: func(a *ask) (sdk.RequestPermissionOutcome, error) { return resumeOutcome(a, e) }}
	}
	return s.answerAsks("interrupts", answers)
}

// resumeOutcome is the permission outcome a resume entry gives.
func resumeOutcome(a *ask, e resumeEntry) (sdk.RequestPermissionOutcome, error) {
	switch {
	case e.Status == "cancelled":
		return sdk.NewRequestPermissionOutcomeCancelled(), nil
	case e.Status != "resolved":
		return sdk.RequestPermissionOutcome{}, fmt.Errorf("%w: resume status %q is neither resolved nor cancelled", errBadRequest, e.Status)
	case e.Payload.OptionID == "" && e.Payload.Approved == nil:
		return sdk.RequestPermissionOutcome{}, fmt.Errorf("%w: interrupt %s: the payload names no optionId", errBadRequest, a.id)
	}
	return outcomeOf(a, e.Payload.Approved != nil && *e.Payload.Approved, e.Payload.OptionID)
}
