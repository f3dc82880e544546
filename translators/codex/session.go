package codex

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
	"github.com/creachadair/jrpc2"
)

// startTimeout bounds the server's answer to initialize (150–550 ms seen),
// and a thread's start.
const startTimeout = 60 * time.Second

// session is one Codex thread.
type session struct {
	b   *Backend
	ev  agent.Events
	cwd string
	// dirs are the session's writable roots beside cwd.
	dirs []string
	// prompt is the client's system prompt: developer instructions
	// (append) or base instructions (override); nil for none.
	prompt *agent.SystemPrompt
	mcp    []acp.McpServer
	log    *slog.Logger
	// recorded is the bridge's transcript of the session, told to a new
	// thread that stands in for a fork codex could not make.
	recorded func() []acp.SessionUpdate

	life context.Context // ends at Close
	end  context.CancelFunc
	// tasks are the session's goroutines (connecting, listing commands);
	// Close waits for them.
	tasks agentkit.Tasks

	out *agentkit.Updates // serialises the translator and the updates it makes
	tr  *Translator

	at *agentkit.Attachment[*server] // the server the thread is loaded on

	cfg   *agentkit.Settings
	turns *agentkit.Turns[*TurnEnd]
	asks  *agentkit.Asks // approvals by item id
	// offered are the models the session's options were made of: the
	// server's, or those kept on disk until connect checks them.
	offered []modelDoc

	will agentkit.TurnWill // a shared app-server's keeper interrupts the running turn if the bridge dies

	mu      sync.Mutex        // protects the fields below
	picked  map[string]string // values the user chose (recorded, or sent with a turn): a resume sends the model again
	thread  string
	forkOf  string          // until the thread is forked: the thread it copies
	carry   bool            // the fork became a new thread: the next turn tells it the conversation
	files   attachments     // the prompts' embedded binary files
	turnID  string          // the running turn's, once turn/start answered
	turnErr string          // the last error notification's message in the running turn
	retries int             // the running turn's model-request retries so far
	history json.RawMessage // thread/resume's turns, for History
	// prompted: a turn was sent since history was read, which it lacks.
	prompted bool
	running  turnProcs // what ran under the server when the turn began
	spawned  []string  // the threads of the agents the thread spawned (child sessions)
}

// turnProcs is the server a turn runs on and the processes under it when
// the turn began: a process started later, in the session's directory, is
// one of the turn's commands.
type turnProcs struct {
	srv    *server
	before map[int]bool
}

func newSession(ctx context.Context, b *Backend, docs []modelDoc, opts agent.OpenOptions, ev agent.Events) *session {
	s := &session{b: b, ev: ev, cwd: opts.Cwd, dirs: opts.Directories, prompt: opts.SystemPrompt, mcp: opts.MCPServers, log: b.Log(), tr: NewTranslator(opts.Cwd),
		recorded: opts.History, thread: opts.NativeID, picked: maps.Clone(opts.Config)}
	if opts.NativeID == "" {
		s.forkOf = opts.ForkOf
	}
	// The first attach resumes the recorded thread, if any; a later one,
	// after the server died, always resumes.
	s.at = agentkit.NewAttachment(func(ctx context.Context) (*server, error) { return s.attach(ctx, s.NativeID() != "") })
	s.life, s.end = context.WithCancel(ctx)
	s.turns, s.asks, s.out = agentkit.NewTurns[*TurnEnd](s.life), agentkit.NewAsks(ev), agentkit.NewUpdates(ev)
	s.cfg = agentkit.NewSettings(modeOption(modeConfig))
	s.offered = docs
	if len(docs) > 0 {
		model, effort := modelOptions(docs, "")
		s.cfg.Put(model)
		s.cfg.Put(effort)
	}
	s.cfg.Put(collaborationOption(""))
	s.cfg.Restore(opts.Config)
	s.cfg.Put(modeOption(s.cfg.Get(agent.ConfigMode)))
	return s
}

func (s *session) Config() []agent.ConfigOption { return s.cfg.Options() }

// SetConfig is never called: every codex option is NextTurn.
func (s *session) SetConfig(_ context.Context, id, value string) error {
	return fmt.Errorf("%w: codex takes %s with the next turn", agent.ErrInvalidParams, id)
}

// connect starts the server if needed, then starts, forks or resumes the
// thread; a session opened on models that are not the server's
// (provisional: kept on disk, or from the config) then checks them
// against the server's. If the thread can't be started, the first prompt
// tries again and fails with the reason.
func (s *session) connect(provisional bool) {
	if err := s.at.Start(s.life, startTimeout); err != nil {
		if s.life.Err() == nil {
			s.log.Warn("codex thread did not start; its first prompt tries again", "err", err)
		}
		return
	}
	if provisional {
		s.checkModels()
	}
}

// checkModels offers the models the server lists instead of those the
// session offered, telling the client, if they differ. The current model
// stays (offered if the server does not list it), and so does the effort
// if the models still offer it.
func (s *session) checkModels() {
	if err := s.b.catalog(s.life); err != nil {
		return
	}
	docs := s.b.modelDocs()
	if len(docs) == 0 || sameModels(docs, s.offered) {
		return
	}
	effort := s.cfg.Get(agent.ConfigEffort)
	model, efforts := modelOptions(docs, s.cfg.Get(agent.ConfigModel))
	s.cfg.Put(model)
	s.cfg.Put(efforts)
	s.cfg.Restore(map[string]string{agent.ConfigEffort: effort})
	s.offered = docs
	s.log.Debug("codex lists other models than those the session offered; the session offers the server's")
	s.ev.ConfigChanged()
}

// sameModels reports whether two model lists say the same.
func sameModels(a, b []modelDoc) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// threadResult is what thread/start, thread/fork and thread/resume answer.
type threadResult struct {
	Thread struct {
		ID    string          `json:"id"`
		Turns json.RawMessage `json:"turns"`
	} `json:"thread"`
	Model           string `json:"model"`
	ReasoningEffort string `json:"reasoningEffort"`
}

// attach starts, forks or resumes the session's thread on the running
// server.
func (s *session) attach(ctx context.Context, resume bool) (*server, error) {
	srv, err := s.b.shared.Get(ctx)
	if err != nil {
		return nil, err
	}
	res, err := s.openThread(ctx, srv, resume)
	if err != nil {
		return nil, err
	}
	if s.life.Err() != nil {
		return nil, fmt.Errorf("the session was closed while codex started its thread")
	}
	s.mu.Lock()
	s.thread, s.history, s.forkOf = res.Thread.ID, res.Thread.Turns, ""
	s.mu.Unlock()
	s.follow(res.Model, res.ReasoningEffort)
	s.b.sessions.Add(res.Thread.ID, s)
	s.tasks.Go(func() { s.listCommands(s.life, srv) }) // not on the first turn's way: skills/list scans the directory
	return srv, nil
}

// openThread resumes the session's thread, forks the one it is to copy,
// or starts a new one.
func (s *session) openThread(ctx context.Context, srv *server, resume bool) (threadResult, error) {
	params := s.threadParams()
	s.mu.Lock()
	thread, forkOf := s.thread, s.forkOf
	s.mu.Unlock()
	var res threadResult
	switch {
	case resume:
		params["threadId"] = thread
		return res, srv.call(ctx, "thread/resume", params, &res)
	case forkOf != "":
		return s.fork(ctx, srv, forkOf, params)
	case len(params) == 1: // only the directory: the spare thread will do
		if sp, ok := s.b.spare.Take(ctx, s.cwd); ok && sp.srv == srv {
			s.log.Debug("codex: the session takes the spare thread", "thread", sp.res.Thread.ID)
			return sp.res, nil
		}
	}
	return res, srv.call(ctx, "thread/start", params, &res)
}

// threadParams are what thread/start, thread/fork and thread/resume take
// alike: the directory, the MCP servers, the writable roots, the system
// prompt, and a preset mode and a model only if the session has them
// (picked by the user, or recorded for it): otherwise codex's config.toml
// applies.
func (s *session) threadParams() map[string]any {
	params := map[string]any{"cwd": s.cwd}
	if p, ok := presets[s.cfg.Get(agent.ConfigMode)]; ok {
		params["approvalPolicy"], params["sandbox"] = p.approval, p.sandbox
	}
	if m := s.pickedValue(agent.ConfigModel); m != "" {
		params["model"] = m
	}
	cfg, _ := mcpConfig(s.mcp) // checked by Open
	if len(s.dirs) > 0 {
		if cfg == nil {
			cfg = map[string]any{}
		}
		cfg["sandbox_workspace_write.writable_roots"] = s.dirs
	}
	if cfg != nil {
		params["config"] = cfg
	}
	switch p := s.prompt; {
	case p == nil:
	case p.Override:
		params["baseInstructions"] = p.Text
	default:
		params["developerInstructions"] = p.Text
	}
	return params
}

// sandboxPolicy is turn/start's sandboxPolicy for a preset's policy
// type, with the session's writable roots where it writes.
func (s *session) sandboxPolicy(policy string) map[string]any {
	sp := map[string]any{"type": policy}
	if policy == "workspaceWrite" && len(s.dirs) > 0 {
		sp["writableRoots"] = s.dirs
	}
	return sp
}

// fork makes the session's thread a copy of thread forkOf with
// thread/fork, which reads forkOf's rollout from disk (loaded or not) and
// leaves forkOf as it was. Codex answers an error when it has no rollout
// for forkOf: a thread never prompted has none yet, and a CODEX_HOME
// wiped since lost it. The session then starts a new thread, and its
// first turn tells it the conversation so far from the bridge's
// transcript.
func (s *session) fork(ctx context.Context, srv *server, forkOf string, params map[string]any) (threadResult, error) {
	var res threadResult
	err := srv.call(ctx, "thread/fork", withThread(params, forkOf), &res)
	var rpcErr *jrpc2.Error
	if !errors.As(err, &rpcErr) {
		return res, err
	}
	s.log.Warn("codex can't fork the thread; starting a new one, told the conversation so far", "thread", forkOf, "err", err)
	s.mu.Lock()
	s.carry = true
	s.mu.Unlock()
	return res, srv.call(ctx, "thread/start", params, &res)
}

// withThread is params with threadId added.
func withThread(params map[string]any, thread string) map[string]any {
	p := maps.Clone(params)
	p["threadId"] = thread
	return p
}

func (s *session) pickedValue(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.picked[id]
}

// follow takes the model and effort the thread runs with, as codex
// reports them, into the options.
func (s *session) follow(model, effort string) {
	changed := false
	if model != "" && s.cfg.Offers(agent.ConfigModel, model) {
		changed = s.cfg.Set(agent.ConfigModel, model)
	}
	if effort != "" && s.cfg.Offers(agent.ConfigEffort, effort) && s.pickedValue(agent.ConfigEffort) == "" {
		changed = s.cfg.Set(agent.ConfigEffort, effort) || changed
	}
	if changed {
		s.ev.ConfigChanged()
	}
}

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thread
}

// Prompt runs a turn: turn/start, then the notifications until
// turn/completed. A cancelled ctx interrupts the turn, and codex completes
// it as interrupted; a session closed meanwhile was given up on.
func (s *session) Prompt(ctx context.Context, turn agent.Turn) (agent.TurnResult, error) {
	command, args, isCommand := slashCommand(turn.Prompt)
	if isCommand && (command == "status" || command == "rename") {
		return s.localCommand(ctx, command, args)
	}
	input, err := toCodex(skillMention(turn.Prompt), &s.files)
	if err != nil {
		return agent.TurnResult{}, err
	}
	s.mu.Lock()
	s.prompted = true
	s.mu.Unlock()
	defer s.will.Done()
	return agentkit.Run(ctx, s.turns, s.log, agentkit.TurnSpec[*TurnEnd, *server]{
		Ready: s.at.Server,
		Send: func(_ context.Context, srv *server) error {
			before := map[int]bool{}
			for _, pid := range proc.Descendants(srv.l.Pid()) {
				before[pid] = true
			}
			s.mu.Lock()
			s.running, s.retries = turnProcs{srv: srv, before: before}, 0
			s.mu.Unlock()
			if isCommand {
				return s.startCommand(srv, command, args)
			}
			in, told := s.told(input)
			err := s.startTurn(srv, s.turnParams(in, turn.Config))
			if err != nil && told {
				s.mu.Lock()
				s.carry = true // the next turn tells it again
				s.mu.Unlock()
			}
			return err
		},
		Interrupt: func(ctx context.Context, srv *server) error {
			s.mu.Lock()
			params := map[string]any{"threadId": s.thread, "turnId": s.turnID}
			s.mu.Unlock()
			s.interruptChildren(ctx, srv)
			return srv.call(ctx, "turn/interrupt", params, nil)
		},
		Gone:    &TurnEnd{Status: "interrupted"},
		Outcome: s.finish,
	})
}

// told is the turn's input, preceded, on the first turn of a fork codex
// could not make, by the conversation so far from the bridge's transcript
// (without this turn's prompt, which the bridge has recorded already),
// and whether it was. The client is told so in a thought.
func (s *session) told(input []map[string]any) ([]map[string]any, bool) {
	s.mu.Lock()
	carry := s.carry
	s.carry = false
	s.mu.Unlock()
	if !carry {
		return input, false
	}
	said, thought, ok := agentkit.Retell(s.recorded, "Codex could not fork the parent's thread", "on a new thread")
	if !ok {
		return input, false
	}
	s.out.Lock()
	s.out.Send([]acp.SessionUpdate{thought})
	s.out.Unlock()
	return append([]map[string]any{text(said)}, input...), true
}

// startTurn sends turn/start and keeps the turn's id for an interrupt.
func (s *session) startTurn(srv *server, params map[string]any) error {
	s.mu.Lock()
	s.turnID, s.turnErr = "", ""
	s.mu.Unlock()
	var res struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	if err := srv.call(s.life, "turn/start", params, &res); err != nil {
		return err
	}
	s.mu.Lock()
	s.turnID = res.Turn.ID
	thread := s.thread
	s.mu.Unlock()
	s.leaveInterrupt(srv, thread, res.Turn.ID)
	return nil
}

// leaveInterrupt has a shared app-server's keeper interrupt the turn just
// started should the bridge die before it ends (agentkit.TurnWill), on a
// connection of its own; Prompt takes it back once the turn is over.
func (s *session) leaveInterrupt(srv *server, thread, turn string) {
	leased, ok := srv.l.(*agentkit.Leased)
	if !ok {
		return
	}
	msgs := []map[string]any{
		{"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initParams()},
		{"jsonrpc": "2.0", "method": "initialized"},
		{"jsonrpc": "2.0", "id": 2, "method": "turn/interrupt", "params": map[string]any{"threadId": thread, "turnId": turn}},
	}
	d := daemon.Deed{Socket: filepath.Join(leased.Dir(), "sock")}
	for _, m := range msgs {
		b, _ := json.Marshal(m)
		d.Messages = append(d.Messages, b)
	}
	s.will.Leave(s.log, leased, thread, d)
}

// turnParams are turn/start's: the input, and the options changed since
// the last turn (codex keeps them for the later turns).
func (s *session) turnParams(input []map[string]any, changed map[string]string) map[string]any {
	s.mu.Lock()
	params := map[string]any{"threadId": s.thread, "input": input}
	if s.picked == nil {
		s.picked = map[string]string{}
	}
	maps.Copy(s.picked, changed)
	s.mu.Unlock()
	for id, v := range changed {
		switch id {
		case agent.ConfigMode:
			if p, ok := presets[v]; ok {
				params["approvalPolicy"], params["sandboxPolicy"] = p.approval, s.sandboxPolicy(p.policy)
				s.cfg.Put(modeOption(v))
			}
		case agent.ConfigModel:
			params["model"] = v
			s.cfg.Set(id, v)
		case agent.ConfigEffort:
			if v != agentkit.EffortDefault {
				params["effort"] = v
			}
			s.cfg.Set(id, v)
		case ConfigCollaboration:
			s.cfg.Set(id, v)
		}
	}
	if c, ok := changed[ConfigCollaboration]; ok {
		params["collaborationMode"] = s.collaboration(c)
	}
	return params
}

// collaboration is turn/start's collaborationMode: the mode, with the
// session's model (which it requires) and codex's own instructions for
// the mode.
func (s *session) collaboration(mode string) map[string]any {
	settings := map[string]any{"model": s.cfg.Get(agent.ConfigModel), "developer_instructions": nil}
	if e := s.cfg.Get(agent.ConfigEffort); e != "" && e != agentkit.EffortDefault {
		settings["reasoning_effort"] = e
	}
	return map[string]any{"mode": mode, "settings": settings}
}

// finish makes the turn's result of how it ended.
func (s *session) finish(ctx context.Context, end *TurnEnd) (agent.TurnResult, error) {
	s.mu.Lock()
	lastErr := s.turnErr
	s.mu.Unlock()
	if ctx.Err() != nil {
		s.stopCommands()
		s.out.Lock()
		s.tr.ChildrenStopped() // the bridge says they are idle, cancelled
		s.out.Unlock()
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
	return end.result(lastErr)
}

// stopCommands kills what a cancelled turn's commands left running: codex
// interrupts the turn but lets a running command go on (in a session of
// its own, under the app-server). Those are the processes that appeared
// under the server since the turn began, working in the session's
// directory (another session's commands work in theirs).
func (s *session) stopCommands() {
	s.mu.Lock()
	t := s.running
	s.mu.Unlock()
	if t.srv == nil {
		return
	}
	for _, pid := range proc.Descendants(t.srv.l.Pid()) {
		if dir := proc.Cwd(pid); !t.before[pid] && dir != "" && within(dir, s.cwd) {
			s.log.Info("stopping a command of the cancelled turn", "pid", pid, "dir", dir)
			proc.KillTree(pid)
		}
	}
}

// within reports whether dir is root or under it.
func within(dir, root string) bool {
	rel, err := filepath.Rel(root, dir)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// say sends the client u, between or within the session's turns.
func (s *session) say(u acp.SessionUpdate) {
	s.out.Lock()
	defer s.out.Unlock()
	s.out.Send([]acp.SessionUpdate{u})
}

// notify translates a notification about this thread, in order.
func (s *session) notify(method string, raw json.RawMessage) {
	s.out.Lock()
	defer s.out.Unlock()
	out, err := s.tr.Translate(method, raw)
	if err != nil {
		s.log.Warn("skipping a codex notification", "method", method, "err", err)
		return
	}
	s.adopt(out.Spawned)
	s.interruptLater(out.Interrupt)
	s.out.Send(out.Updates)
	s.out.SendIn(out.Child, out.ChildUpdates)
	if out.Err != "" {
		s.mu.Lock()
		s.turnErr = out.Err
		s.mu.Unlock()
	}
	if out.Retry != "" {
		s.retried(out.Retry)
	}
	if out.End != nil {
		s.turns.End(out.End)
	}
}

// adopt has the backend route the notifications and approvals of the
// spawned agents' threads to this session.
func (s *session) adopt(threads []string) {
	if len(threads) == 0 {
		return
	}
	s.mu.Lock()
	s.spawned = append(s.spawned, threads...)
	s.mu.Unlock()
	for _, th := range threads {
		s.b.children.Add(th, s)
	}
}

// retried tells the client that codex retries the turn's model request,
// and gives up on the turn after the backend's retries (codex, with an
// unreachable provider, retries without end). s.out must be held.
func (s *session) retried(msg string) {
	s.mu.Lock()
	s.retries++
	n := s.retries
	s.mu.Unlock()
	limit := s.b.Retries()
	s.out.Send([]acp.SessionUpdate{retryNotice(n, limit, msg)})
	if n > limit {
		s.turns.Stop(fmt.Errorf("the model provider kept failing (%d retries): %s", limit, msg))
	}
}

// serverGone ends a running turn when the server dies; the next prompt
// restarts the server and resumes the thread.
func (s *session) serverGone(srv *server, err error) {
	if s.at.On(srv) {
		s.asks.WithdrawAll()
		s.turns.End(&TurnEnd{Status: "failed", Err: fmt.Sprintf("%v (the next prompt restarts it)", err)})
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
	ThreadID       string          `json:"threadId"`
	ItemID         string          `json:"itemId"`
	Command        string          `json:"command"`
	Cwd            string          `json:"cwd"`
	CommandActions []commandAction `json:"commandActions"`
}

// approve asks the user about a command or a file change: a spawned
// agent's is asked as its child session's. The tool call is announced
// first (from item/started, or here if that has not been seen).
func (s *session) approve(ctx context.Context, method string, raw json.RawMessage) (any, error) {
	var p approvalParams
	if err := json.Unmarshal(raw, &p); err != nil {
		return map[string]any{"decision": "decline"}, nil
	}
	info := agentkit.ToolInfo{Name: toolName("fileChange", ""), Kind: acp.ToolKindEdit, Title: "Edit files"}
	if method == "item/commandExecution/requestApproval" {
		info = command(p.Command, p.Cwd, p.CommandActions, s.cwd)
		info.Name, info.RawInput = toolName("commandExecution", ""), map[string]any{"command": p.Command, "cwd": p.Cwd}
	}
	s.out.Lock()
	tr, child := s.tr.For(p.ThreadID)
	s.out.SendIn(child, tr.Announce(p.ItemID, info))
	if shown, ok := tr.Shown(p.ItemID); ok && method == "item/fileChange/requestApproval" {
		info = shown // the item's changes, with their diffs
	}
	s.out.Unlock()
	stop := context.AfterFunc(ctx, func() { s.asks.Withdraw(p.ItemID) }) // the server took the request back
	defer stop()
	a := s.asks.AskIn(s.turns.Context(), child, p.ItemID, info.Call(p.ItemID), options)
	return map[string]any{"decision": decision(a)}, nil
}

var options = []acp.PermissionOption{
	{OptionId: "accept", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
	{OptionId: "acceptForSession", Name: "Allow for this session", Kind: acp.PermissionOptionKindAllowAlways},
	{OptionId: "decline", Name: "Decline", Kind: acp.PermissionOptionKindRejectOnce},
}

// decision maps the user's answer; a cancelled ask cancels codex's turn.
func decision(a agentkit.Answer) string {
	switch id := a.Chosen(); id {
	case "accept", "acceptForSession":
		return id
	case "":
		return "cancel"
	}
	return "decline"
}

// Close forgets the thread (codex keeps it on disk for resume).
func (s *session) Close() error {
	s.end()
	if !s.tasks.Wait(closeWait) {
		s.log.Warn("a goroutine of the session was still running after it closed")
	}
	s.files.remove()
	s.b.sessions.Remove(s.NativeID(), s)
	s.mu.Lock()
	spawned := s.spawned
	s.mu.Unlock()
	for _, th := range spawned {
		s.b.children.Remove(th, s)
	}
	if srv, ok := s.at.Current(); ok {
		s.b.release(srv, s.NativeID())
	}
	return nil
}
