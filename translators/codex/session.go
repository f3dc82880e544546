package codex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// session is one Codex thread.
type session struct {
	b   *Backend
	ev  bridge.Events
	cwd string
	mcp []acp.McpServer
	log *slog.Logger

	life context.Context // ends at Close
	end  context.CancelFunc

	trMu sync.Mutex // serialises the translator and the updates it makes
	tr   *Translator

	ready    chan struct{} // closed once the thread is started or resumed
	readyErr error         // set before ready closes

	cfg      *agentkit.Settings
	restored map[string]string // the values recorded for a resumed thread, sent with thread/resume

	mu      sync.Mutex // protects the fields below
	srv     *server    // the server the thread is loaded in
	thread  string
	turn    *turnState
	history json.RawMessage // thread/resume's turns, for History
}

// turnState is the running turn.
type turnState struct {
	ctx context.Context
	id  string
	end chan *TurnEnd // buffered; the turn's end
	err string        // the last error notification's message
}

func newSession(ctx context.Context, b *Backend, opts bridge.OpenOptions, ev bridge.Events) *session {
	s := &session{b: b, ev: ev, cwd: opts.Cwd, mcp: opts.MCPServers, log: b.log, tr: NewTranslator(opts.Cwd),
		ready: make(chan struct{}), thread: opts.NativeID, restored: opts.Config}
	s.life, s.end = context.WithCancel(ctx)
	s.cfg = agentkit.NewSettings(modeOption(modeConfig))
	if docs := b.modelDocs(); len(docs) > 0 {
		model, effort := modelOptions(docs, "")
		s.cfg.Put(model)
		s.cfg.Put(effort)
	}
	s.cfg.Restore(opts.Config)
	s.cfg.Put(modeOption(s.cfg.Get(optMode)))
	return s
}

func (s *session) Config() []bridge.ConfigOption { return s.cfg.Options() }

// SetConfig is never called: every codex option is NextTurn.
func (s *session) SetConfig(_ context.Context, id, value string) error {
	return fmt.Errorf("%w: codex takes %s with the next turn", bridge.ErrInvalidParams, id)
}

// connect starts the server if needed, then starts or resumes the thread.
func (s *session) connect(opts bridge.OpenOptions) {
	ctx, cancel := context.WithTimeout(s.life, startTimeout)
	defer cancel()
	err := s.attach(ctx, opts.NativeID != "")
	s.readyErr = err
	close(s.ready)
	if err != nil {
		s.log.Warn("codex thread did not start", "err", err)
	}
}

// threadResult is what thread/start and thread/resume answer.
type threadResult struct {
	Thread struct {
		ID    string          `json:"id"`
		Turns json.RawMessage `json:"turns"`
	} `json:"thread"`
	Model           string `json:"model"`
	ReasoningEffort string `json:"reasoningEffort"`
}

// attach starts a thread, or resumes the session's, on the running server.
// The mode and model go along only if the user picked them: otherwise
// codex's config.toml applies.
func (s *session) attach(ctx context.Context, resume bool) error {
	srv, err := s.b.server(ctx)
	if err != nil {
		return err
	}
	params := map[string]any{"cwd": s.cwd}
	if p, ok := presets[s.cfg.Get(optMode)]; ok {
		params["approvalPolicy"], params["sandbox"] = p.approval, p.sandbox
	}
	if m := s.restored[optModel]; m != "" {
		params["model"] = m
	}
	if cfg := mcpConfig(s.mcp); cfg != nil {
		params["config"] = cfg
	}
	method := "thread/start"
	s.mu.Lock()
	if resume {
		method, params["threadId"] = "thread/resume", s.thread
	}
	s.mu.Unlock()
	var res threadResult
	if err := srv.call(ctx, method, params, &res); err != nil {
		return err
	}
	s.mu.Lock()
	s.srv, s.thread, s.history = srv, res.Thread.ID, res.Thread.Turns
	s.mu.Unlock()
	s.follow(res.Model, res.ReasoningEffort)
	s.b.register(res.Thread.ID, s)
	return nil
}

// follow takes the model and effort the thread runs with, as codex
// reports them, into the options.
func (s *session) follow(model, effort string) {
	changed := false
	if model != "" && s.cfg.Offers(optModel, model) {
		changed = s.cfg.Set(optModel, model)
	}
	if effort != "" && s.cfg.Offers(optEffort, effort) && s.restored[optEffort] == "" {
		changed = s.cfg.Set(optEffort, effort) || changed
	}
	if changed {
		s.ev.ConfigChanged()
	}
}

// wait waits for the thread, and re-attaches it if the server it was on
// has died.
func (s *session) wait(ctx context.Context) (*server, error) {
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.readyErr != nil {
		return nil, s.readyErr
	}
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	select {
	case <-srv.p.Done():
	default:
		return srv, nil
	}
	if err := s.attach(ctx, true); err != nil {
		return nil, fmt.Errorf("restarting codex: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.srv, nil
}

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thread
}

// Prompt runs a turn: turn/start, then the notifications until
// turn/completed. A cancelled ctx interrupts the turn.
func (s *session) Prompt(ctx context.Context, turn bridge.Turn) (bridge.TurnResult, error) {
	input, err := toCodex(turn.Prompt)
	if err != nil {
		return bridge.TurnResult{}, err
	}
	srv, err := s.wait(ctx)
	if ctx.Err() != nil {
		return bridge.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
	if err != nil {
		return bridge.TurnResult{}, err
	}
	t := &turnState{ctx: ctx, end: make(chan *TurnEnd, 1)}
	s.setTurn(t)
	defer s.setTurn(nil)
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := srv.call(s.life, "turn/start", s.turnParams(input, turn.Config), &res); err != nil {
		return bridge.TurnResult{}, err
	}
	s.mu.Lock()
	t.id = res.Turn.ID
	s.mu.Unlock()
	return s.finish(ctx, srv, t, s.waitEnd(ctx, srv, t))
}

// turnParams are turn/start's: the input, and the options changed since
// the last turn (codex keeps them for the later turns).
func (s *session) turnParams(input []map[string]any, changed map[string]string) map[string]any {
	s.mu.Lock()
	params := map[string]any{"threadId": s.thread, "input": input}
	s.mu.Unlock()
	for id, v := range changed {
		switch id {
		case optMode:
			if p, ok := presets[v]; ok {
				params["approvalPolicy"], params["sandboxPolicy"] = p.approval, map[string]any{"type": p.policy}
				s.cfg.Put(modeOption(v))
			}
		case optModel:
			params["model"] = v
			s.cfg.Set(id, v)
		case optEffort:
			if v != effortDefault {
				params["effort"] = v
			}
			s.cfg.Set(id, v)
		}
	}
	return params
}

func (s *session) setTurn(t *turnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn = t
}

// waitEnd waits for turn/completed; on cancel it interrupts the turn,
// which codex then completes as interrupted.
func (s *session) waitEnd(ctx context.Context, srv *server, t *turnState) *TurnEnd {
	select {
	case end := <-t.end:
		return end
	case <-ctx.Done():
	}
	ictx, cancel := context.WithTimeout(s.life, 5*time.Second)
	defer cancel()
	s.mu.Lock()
	params := map[string]any{"threadId": s.thread, "turnId": t.id}
	s.mu.Unlock()
	if err := srv.call(ictx, "turn/interrupt", params, nil); err != nil {
		s.log.Warn("interrupting codex", "err", err)
	}
	select {
	case end := <-t.end:
		return end
	case <-s.life.Done(): // closed: the bridge gave up on the turn
		return &TurnEnd{Status: "interrupted"}
	}
}

func (s *session) finish(ctx context.Context, srv *server, t *turnState, end *TurnEnd) (bridge.TurnResult, error) {
	switch {
	case ctx.Err() != nil || end.Status == "interrupted":
		return bridge.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	case end.Status == "failed":
		msg := agentkit.Or(end.Err, t.err)
		if strings.Contains(msg, "(unauthorized)") {
			return bridge.TurnResult{}, fmt.Errorf("%w: %s — log in with `codex login`, or set your provider's API key", bridge.ErrAuthRequired, msg)
		}
		return bridge.TurnResult{}, errors.New(agentkit.Or(msg, "the turn failed"))
	}
	return bridge.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}

// notify translates a notification about this thread, in order.
func (s *session) notify(method string, raw json.RawMessage) {
	s.trMu.Lock()
	defer s.trMu.Unlock()
	out, err := s.tr.Translate(method, raw)
	if err != nil {
		s.log.Warn("skipping a codex notification", "method", method, "err", err)
		return
	}
	for _, u := range out.Updates {
		s.ev.Update(u)
	}
	s.mu.Lock()
	t := s.turn
	if t != nil && out.Err != "" {
		t.err = out.Err
	}
	s.mu.Unlock()
	if t != nil && out.End != nil {
		select {
		case t.end <- out.End:
		default:
		}
	}
}

// serverGone ends a running turn when the server dies; the next prompt
// restarts the server and resumes the thread.
func (s *session) serverGone(srv *server, err error) {
	s.mu.Lock()
	t := s.turn
	mine := s.srv == srv
	s.mu.Unlock()
	if t != nil && mine {
		select {
		case t.end <- &TurnEnd{Status: "failed", Err: fmt.Sprintf("%v (the next prompt restarts it)", err)}:
		default:
		}
	}
}

// request answers an approval request from the server.
func (s *session) request(ctx context.Context, method string, raw json.RawMessage) (any, error) {
	switch method {
	case "item/commandExecution/requestApproval", "item/fileChange/requestApproval":
		return s.approve(ctx, method, raw)
	}
	return nil, fmt.Errorf("acpbridge does not handle %s", method)
}

// approvalParams is what both approval requests carry.
type approvalParams struct {
	ItemID         string          `json:"itemId"`
	Command        string          `json:"command"`
	Cwd            string          `json:"cwd"`
	CommandActions []commandAction `json:"commandActions"`
}

// approve asks the user about a command or a file change. The tool call is
// announced first (from item/started, or here if that has not been seen).
func (s *session) approve(ctx context.Context, method string, raw json.RawMessage) (any, error) {
	var p approvalParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return map[string]any{"decision": "decline"}, nil
	}
	info := agentkit.ToolInfo{Kind: acp.ToolKindEdit, Title: "Edit files"}
	if method == "item/commandExecution/requestApproval" {
		info = command(p.Command, p.Cwd, p.CommandActions, s.cwd)
	}
	s.trMu.Lock()
	for _, u := range s.tr.Announce(p.ItemID, info) {
		s.ev.Update(u)
	}
	s.trMu.Unlock()
	askCtx := s.life
	s.mu.Lock()
	if s.turn != nil {
		askCtx = s.turn.ctx
	}
	s.mu.Unlock()
	askCtx, cancel := context.WithCancel(askCtx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel) // the server withdrew the request
	defer stop()
	title := info.Title
	out, err := s.ev.RequestPermission(askCtx, acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(p.ItemID), Title: &title}, options)
	return map[string]any{"decision": decision(out, err)}, nil
}

var options = []acp.PermissionOption{
	{OptionId: "accept", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
	{OptionId: "acceptForSession", Name: "Allow for this session", Kind: acp.PermissionOptionKindAllowAlways},
	{OptionId: "decline", Name: "Decline", Kind: acp.PermissionOptionKindRejectOnce},
}

// decision maps the user's answer; a cancelled ask cancels codex's turn.
func decision(out acp.RequestPermissionOutcome, err error) string {
	if err != nil || out.Selected == nil {
		return "cancel"
	}
	switch id := string(out.Selected.OptionId); id {
	case "accept", "acceptForSession":
		return id
	}
	return "decline"
}

// Close forgets the thread (codex keeps it on disk for resume).
func (s *session) Close() error {
	s.end()
	s.mu.Lock()
	thread := s.thread
	s.mu.Unlock()
	if thread != "" {
		s.b.unregister(thread)
	}
	return nil
}
