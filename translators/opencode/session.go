package opencode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// rules are the permission rules of every session the bridge creates:
// OpenCode allows everything unless told to ask, and the editor should be
// asked before a command runs, a file is edited or a page is fetched.
var rules = []map[string]string{
	{"permission": "bash", "pattern": "*", "action": "ask"},
	{"permission": "edit", "pattern": "*", "action": "ask"},
	{"permission": "webfetch", "pattern": "*", "action": "ask"},
}

// askConfig is what the server is started with in its inline config
// (OPENCODE_CONFIG_CONTENT, merged with the user's): the permissions of
// rules, asked of every agent. A subagent's child session does not
// inherit its parent's rules (OpenCode gives it only its own, task
// denied): without this it would run commands and edit files unasked.
func askConfig(content string) (string, error) {
	cfg := map[string]any{}
	if strings.TrimSpace(content) != "" {
		if err := json.Unmarshal(stripJSONC([]byte(content)), &cfg); err != nil {
			return "", fmt.Errorf("reading OPENCODE_CONFIG_CONTENT: %w", err)
		}
	}
	perm, _ := cfg["permission"].(map[string]any)
	if perm == nil { // none, or one action for every permission, which the rules then refine
		perm = map[string]any{}
		if all, ok := cfg["permission"].(string); ok {
			perm["*"] = all
		}
	}
	for _, r := range rules {
		perm[r["permission"]] = r["action"]
	}
	cfg["permission"] = perm
	b, err := json.Marshal(cfg)
	return string(b), err
}

// serverEnv is env with askConfig in OPENCODE_CONFIG_CONTENT; env as it
// is if the user's inline config can't be read (said in the log).
func serverEnv(env []string, log *slog.Logger) []string {
	const name = "OPENCODE_CONFIG_CONTENT"
	content, err := askConfig(agentkit.EnvValue(env, name))
	if err != nil {
		log.Warn("opencode's subagents will not be asked before they run commands or edit files", "err", err)
		return env
	}
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, name+"=") })
	return append(out, name+"="+content)
}

// rules are the permission rules of a session with additional
// directories dirs: the bridge's, and OpenCode's external_directory
// permission allowed in each of dirs (OpenCode has no other notion of
// more workspace roots; edits and commands there are still asked).
func sessionRules(dirs []string) []map[string]string {
	rs := slices.Clone(rules)
	for _, d := range dirs {
		rs = append(rs, map[string]string{"permission": "external_directory", "pattern": d, "action": "allow"},
			map[string]string{"permission": "external_directory", "pattern": filepath.Join(d, "*"), "action": "allow"})
	}
	return rs
}

// systemText is p's text, which OpenCode can only append.
func systemText(p *agent.SystemPrompt) string {
	if p == nil {
		return ""
	}
	return p.Text
}

// session is one OpenCode session.
type session struct {
	b   *Backend
	ev  agent.Events
	dir string
	// dirs are the session's additional directories, which its
	// permission rules let OpenCode reach.
	dirs []string
	// system is the client's system prompt, sent with each prompt
	// (appended to the agent's); "" for none.
	system string
	mcp    map[string]any
	log    *slog.Logger
	// recorded is the bridge's transcript of the session, told to a new
	// session that stands in for a fork OpenCode could not make.
	recorded func() []acp.SessionUpdate

	life context.Context // ends at Close
	end  context.CancelFunc
	will agentkit.TurnWill // a shared server's keeper aborts the running turn if the bridge dies
	// tasks are the session's goroutines (connecting, a command's call,
	// answering the server's asks, resyncing); Close waits for them.
	tasks agentkit.Tasks

	cfg   *agentkit.Settings
	turns *agentkit.Turns[*turnEnd]
	asks  *agentkit.Asks    // permission and question asks by request id
	out   *agentkit.Updates // serialises the translator and the updates it makes
	tr    *Translator

	at *agentkit.Attachment[*server] // the server the session is on
	// entered is the server whose instance of dir the session uses
	// (server.enter), which Close leaves; set only by attach.
	entered *server

	mu     sync.Mutex // protects the fields below
	cat    *catalog   // what the options were made of: the server's, or the one kept on disk until connect checks it
	id     string
	forkOf string        // until the session is forked: the one it copies
	carry  bool          // the fork became a new session: the next prompt tells it the conversation
	armed  bool          // the running turn has started on the server: its idle ends it
	err    *SessionError // the running turn's error, if any
	usage  acp.Usage     // the running turn's, summed over its steps
	used   int           // the context the last step used
	// answered is set when the running turn's prompt got an answer (an
	// assistant message).
	answered bool
	// dismissed is set when the client answered an ask of the running turn
	// cancelled: the turn ends cancelled, however OpenCode ends it.
	dismissed atomic.Bool
	// commands are the names of OpenCode's commands, which a prompt
	// "/name arguments" runs (listCommands).
	commands map[string]bool
	// kids are the session's child sessions (subagents), which the
	// backend routes to it; nil once it closed.
	kids []string
}

// turnEnd is how a turn ended: normally, with the session's error, or
// because the server died.
type turnEnd struct {
	err     *SessionError
	gone    error
	refused error // OpenCode would not run the command asked for
}

func newSession(ctx context.Context, b *Backend, cat *catalog, opts agent.OpenOptions, mcp map[string]any, ev agent.Events) *session {
	s := &session{b: b, cat: cat, ev: ev, dir: opts.Cwd, dirs: opts.Directories, system: systemText(opts.SystemPrompt), mcp: mcp, log: b.Log(), recorded: opts.History, id: opts.NativeID,
		cfg: agentkit.NewSettings(cat.options()...), asks: agentkit.NewAsks(ev), out: agentkit.NewUpdates(ev),
		tr: NewTranslator(opts.Cwd)}
	if opts.NativeID == "" {
		s.forkOf = opts.ForkOf
	}
	s.at = agentkit.NewAttachment(s.attach)
	s.life, s.end = context.WithCancel(ctx)
	s.turns = agentkit.NewTurns[*turnEnd](s.life)
	s.cfg.Restore(opts.Config)
	return s
}

func (s *session) Config() []agent.ConfigOption { return s.cfg.Options() }

// SetConfig is never called: every OpenCode option is NextTurn.
func (s *session) SetConfig(_ context.Context, id, _ string) error {
	return fmt.Errorf("%w: opencode takes %s with the next prompt", agent.ErrInvalidParams, id)
}

// Caps: a child session (a subagent) is stopped alone by aborting it;
// the bridge's transcript is the history.
func (s *session) Caps() agent.SessionCaps { return agent.SessionCaps{CancelChild: s.cancelChild} }

// cancelChild aborts the work of the child session id, one of the
// session's subagents; the task that runs it then fails, and the
// session's turn goes on.
func (s *session) cancelChild(ctx context.Context, id string) error {
	srv, ok := s.at.Current()
	s.out.Lock()
	running := s.tr.StopKid(id)
	s.out.Unlock()
	if !ok || !running {
		return fmt.Errorf("%w: no subagent %s is running", agent.ErrInvalidParams, id)
	}
	return srv.call(ctx, http.MethodPost, "/session/"+id+"/abort", s.dir, nil, nil)
}

// stoppingKids says the child sessions working are being stopped, with
// the turn (Translator.StopKid), and returns them.
func (s *session) stoppingKids() []string {
	s.out.Lock()
	defer s.out.Unlock()
	ids := s.tr.RunningKids()
	for _, id := range ids {
		s.tr.StopKid(id)
	}
	return ids
}

// abortKids aborts the child sessions ids, with the turn: OpenCode aborts
// those it started with their parent, but not one it is about to start
// (StopKid has that one aborted once it starts).
func (s *session) abortKids(ctx context.Context, srv *server, ids []string) {
	for _, id := range ids {
		if err := srv.call(ctx, http.MethodPost, "/session/"+id+"/abort", s.dir, nil, nil); err != nil {
			s.log.Warn("aborting a subagent with its turn", "session", id, "err", err)
		}
	}
}

// adopt takes note of a child session of the session's, whose events the
// backend routes to it from now on; false once the session closed.
func (s *session) adopt(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.life.Err() != nil {
		return false
	}
	s.kids = append(s.kids, id)
	return true
}

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.id
}

// connect makes the session ready on the server: its directory's event
// stream connected, the session created, forked (or found again), the
// client's MCP servers added. A session opened on a catalog that is not
// the server's (provisional: kept on disk, or from the config files) then
// checks it against the server's. If the session can't be made ready,
// its first prompt tries again and fails with the reason.
func (s *session) connect(provisional bool) {
	if err := s.at.Start(s.life, startTimeout); err != nil {
		if s.life.Err() == nil {
			s.log.Warn("opencode session did not start; its first prompt tries again", "err", err)
		}
		return
	}
	if provisional {
		s.checkCatalog()
	}
}

// checkCatalog offers the server's catalog instead of the one the session
// offered, telling the client, if they differ; the options keep their
// values where the server's catalog offers them.
func (s *session) checkCatalog() {
	cat, err := s.b.catalog(s.life, s.dir)
	if err != nil || cat.same(s.catalog()) {
		return
	}
	picked := map[string]string{}
	for _, o := range s.cfg.Options() {
		picked[o.ID] = o.Current
	}
	for _, o := range cat.options() {
		s.cfg.Put(o)
	}
	s.cfg.Restore(picked)
	s.mu.Lock()
	s.cat = cat
	s.mu.Unlock()
	s.log.Debug("opencode's catalog differs from the one the session offered; the session offers the server's")
	s.ev.ConfigChanged()
}

// catalog is the catalog the session offers.
func (s *session) catalog() *catalog {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cat
}

// attach gets the session onto the running server, starting one if
// needed.
func (s *session) attach(ctx context.Context) (*server, error) {
	srv, err := s.b.shared.Get(ctx)
	if err != nil {
		return nil, err
	}
	if err := s.enter(ctx, srv); err != nil {
		return nil, err
	}
	if err := srv.events(ctx, s.dir); err != nil {
		return nil, err
	}
	if err := srv.prepare(ctx, s.dir); err != nil {
		return nil, err
	}
	for name, cfg := range s.mcp {
		body := map[string]any{"name": name, "config": cfg}
		if err := srv.call(ctx, http.MethodPost, "/mcp", s.dir, body, nil); err != nil {
			return nil, fmt.Errorf("adding MCP server %s: %w", name, err)
		}
	}
	id := s.NativeID()
	if id != "" {
		if err := srv.call(ctx, http.MethodGet, "/session/"+id, s.dir, nil, nil); err != nil {
			return nil, fmt.Errorf("opencode has no session %s to resume: %w", id, err)
		}
		if err := s.setRules(ctx, srv, id); err != nil {
			return nil, err
		}
	} else if id, err = s.create(ctx, srv); err != nil {
		return nil, err
	}
	if s.life.Err() != nil {
		return nil, errors.New("the session was closed while opencode started it")
	}
	s.listCommands(ctx, srv) // a local call; it only logs a failure
	s.mu.Lock()
	s.id, s.forkOf = id, ""
	s.mu.Unlock()
	s.out.Lock()
	s.tr.Own(id)
	s.out.Unlock()
	s.b.sessions.Add(id, s)
	return srv, nil
}

// create makes the session's OpenCode session: a fork of the one it is to
// copy, or a new one.
func (s *session) create(ctx context.Context, srv *server) (string, error) {
	s.mu.Lock()
	forkOf := s.forkOf
	s.mu.Unlock()
	if forkOf != "" {
		return s.fork(ctx, srv, forkOf)
	}
	return s.newSession(ctx, srv)
}

// newSession creates a session with the bridge's permission rules.
func (s *session) newSession(ctx context.Context, srv *server) (string, error) {
	var created struct {
		ID string `json:"id"`
	}
	err := srv.call(ctx, http.MethodPost, "/session", s.dir, map[string]any{"permission": sessionRules(s.dirs)}, &created)
	return created.ID, err
}

// fork makes the session a copy of session forkOf (POST
// /session/{id}/fork, which copies its messages and leaves it as it was)
// and gives it the bridge's permission rules, which a fork does not
// inherit. OpenCode keeps a fork in its parent's directory: when that is
// not the session's, or OpenCode no longer has forkOf, the session is a
// new one instead, whose first prompt tells it the conversation so far
// from the bridge's transcript.
func (s *session) fork(ctx context.Context, srv *server, forkOf string) (string, error) {
	var parent struct {
		Directory string `json:"directory"`
	}
	err := srv.call(ctx, http.MethodGet, "/session/"+forkOf, s.dir, nil, &parent)
	switch {
	case notFound(err):
		return s.standIn(ctx, srv, forkOf, "opencode no longer has it")
	case err != nil:
		return "", err
	case filepath.Clean(parent.Directory) != filepath.Clean(s.dir):
		return s.standIn(ctx, srv, forkOf, "it works in "+parent.Directory+", where opencode would keep the fork")
	}
	var forked struct {
		ID string `json:"id"`
	}
	if err := srv.call(ctx, http.MethodPost, "/session/"+forkOf+"/fork", s.dir, map[string]any{}, &forked); err != nil {
		return "", err
	}
	if err := s.setRules(ctx, srv, forked.ID); err != nil {
		// A fork that would run commands unasked must not be used.
		if derr := srv.call(ctx, http.MethodDelete, "/session/"+forked.ID, s.dir, nil, nil); derr != nil {
			s.log.Warn("deleting the fork without permission rules", "session", forked.ID, "err", derr)
		}
		return "", fmt.Errorf("giving the fork of %s the bridge's permission rules: %w", forkOf, err)
	}
	return forked.ID, nil
}

// setRules gives OpenCode's session id the session's permission rules: a
// fork does not inherit them, and a resumed session's directories may
// not be those it had.
func (s *session) setRules(ctx context.Context, srv *server, id string) error {
	return srv.call(ctx, http.MethodPatch, "/session/"+id, s.dir, map[string]any{"permission": sessionRules(s.dirs)}, nil)
}

// standIn creates a new session in place of a fork of forkOf that can't
// be made (why), to be told the conversation with its first prompt.
func (s *session) standIn(ctx context.Context, srv *server, forkOf, why string) (string, error) {
	s.log.Warn("opencode can't fork the session; starting a new one, told the conversation so far", "session", forkOf, "why", why)
	s.mu.Lock()
	s.carry = true
	s.mu.Unlock()
	return s.newSession(ctx, srv)
}

// Prompt runs a turn: prompt_async, then the session's events until it
// is idle again. A cancelled ctx aborts the turn.
func (s *session) Prompt(ctx context.Context, turn agent.Turn) (agent.TurnResult, error) {
	parts, err := toOpenCode(turn.Prompt)
	if err != nil {
		return agent.TurnResult{}, err
	}
	defer s.will.Done()
	return agentkit.Run(ctx, s.turns, s.log, agentkit.TurnSpec[*turnEnd, *server]{
		Ready: s.at.Server,
		// The prompt goes out even if the turn is cancelled meanwhile: the
		// cancel then aborts it on the server.
		Send: func(_ context.Context, srv *server) error {
			// Left before the prompt goes: a bridge killed in between
			// leaves no turn running. An abort needs only the session.
			s.leaveAbort(srv)
			if name, args, ok := s.asCommand(turn.Prompt); ok {
				s.sendCommand(srv, name, args, turn.Config)
				return nil
			}
			in, told := s.told(parts)
			err := s.send(s.life, srv, in, turn.Config)
			if err != nil && told {
				s.mu.Lock()
				s.carry = true // the next prompt tells it again
				s.mu.Unlock()
			}
			return err
		},
		Interrupt: func(ctx context.Context, srv *server) error {
			kids := s.stoppingKids() // before the abort: it may end them at once
			err := srv.call(ctx, http.MethodPost, "/session/"+s.NativeID()+"/abort", s.dir, nil, nil)
			s.abortKids(ctx, srv, kids)
			return err
		},
		Gone:    &turnEnd{},
		Outcome: s.outcome,
	})
}

// leaveAbort has a shared server's keeper abort the session's turn should
// the bridge die before it ends (agentkit.TurnWill), a prompt's or a
// command's; Prompt leaves it before the turn is sent, and takes it back
// once the turn is over.
func (s *session) leaveAbort(srv *server) {
	req, err := srv.request(context.Background(), http.MethodPost, "/session/"+s.NativeID()+"/abort", s.dir, nil)
	if err != nil {
		return
	}
	s.will.Leave(s.log, srv.l, s.NativeID(), daemon.Deed{Method: req.Method, URL: req.URL.String(),
		Header: map[string]string{"Authorization": req.Header.Get("Authorization")}})
}

// told is the prompt's parts, preceded, on the first prompt of a fork
// OpenCode could not make, by the conversation so far from the bridge's
// transcript (without this prompt, which the bridge has recorded
// already), and whether it was. The client is told so in a thought.
func (s *session) told(parts []map[string]any) ([]map[string]any, bool) {
	s.mu.Lock()
	carry := s.carry
	s.carry = false
	s.mu.Unlock()
	if !carry {
		return parts, false
	}
	said, thought, ok := agentkit.Retell(s.recorded, "OpenCode could not fork the parent's session", "in a new session")
	if !ok {
		return parts, false
	}
	s.out.Lock()
	s.out.Send([]acp.SessionUpdate{thought})
	s.out.Unlock()
	return append([]map[string]any{text(said)}, parts...), true
}

// send posts the prompt with the mode, model and effort it runs with.
func (s *session) send(ctx context.Context, srv *server, parts []map[string]any, changed map[string]string) error {
	id, body := s.turnBody(changed)
	body["parts"] = parts
	return srv.call(ctx, http.MethodPost, "/session/"+id+"/prompt_async", s.dir, body, nil)
}

// turnBody starts a turn: it takes the options changed for it, clears the
// last turn's state, and returns the session's id and what a prompt or a
// command is sent with: the mode (OpenCode's agent), model and effort.
func (s *session) turnBody(changed map[string]string) (string, map[string]any) {
	s.cfg.Restore(changed)
	s.mu.Lock()
	s.armed, s.err, s.usage, s.used, s.answered = false, nil, acp.Usage{}, 0, false
	id := s.id
	s.mu.Unlock()
	s.dismissed.Store(false)
	body := map[string]any{"agent": s.cfg.Get(agent.ConfigMode)}
	if s.system != "" {
		body["system"] = s.system
	}
	if provider, model, ok := strings.Cut(s.cfg.Get(agent.ConfigModel), "/"); ok {
		body["model"] = map[string]any{"providerID": provider, "modelID": model}
	}
	if v := s.cfg.Get(agent.ConfigEffort); v != "" && v != agentkit.EffortDefault {
		body["variant"] = v
	}
	return id, body
}

// outcome turns how the turn ended into its result, with its usage.
func (s *session) outcome(ctx context.Context, end *turnEnd) (agent.TurnResult, error) {
	s.mu.Lock()
	usage, used := s.usage, s.used
	s.mu.Unlock()
	res := agent.TurnResult{StopReason: acp.StopReasonEndTurn}
	if usage.TotalTokens > 0 {
		res.Usage = &usage
		if size := s.catalog().contextOf(s.cfg.Get(agent.ConfigModel)); size > 0 {
			s.ev.Update(acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{Used: used, Size: size}})
		}
	}
	switch {
	case ctx.Err() != nil || (end.err != nil && end.err.Aborted()) || s.dismissed.Load():
		res.StopReason = acp.StopReasonCancelled
		return res, nil
	case end.gone != nil:
		return agent.TurnResult{}, fmt.Errorf("%v (the next prompt restarts it)", end.gone)
	case end.refused != nil:
		return agent.TurnResult{}, end.refused
	case end.err == nil:
		return res, nil
	case end.err.Name == "ProviderAuthError":
		return agent.TurnResult{}, fmt.Errorf("%w: %s — log in with `opencode auth login`, or set your provider's API key", agent.ErrAuthRequired, end.err.Message())
	}
	return agent.TurnResult{}, fmt.Errorf("%s: %s", end.err.Name, end.err.Message())
}

// notify translates an event of this session, or of a child session of
// it, in order.
func (s *session) notify(ev Decoded) {
	s.out.Lock()
	out, err := s.tr.TranslateDecoded(ev)
	if err != nil {
		s.out.Unlock()
		s.log.Warn("skipping an opencode event", "type", ev.Type, "err", err)
		return
	}
	s.out.Send(out.Parent)
	s.out.SendIn(out.Child, out.Updates)
	s.out.Unlock()
	switch {
	case out.Child == "": // a child's work is not the turn's
		s.track(out)
	case out.Step != nil:
		s.countChildStep(*out.Step)
	}
	if out.Abort {
		s.tasks.Go(func() { s.reply("/session/"+out.Child+"/abort", nil) })
	}
	if out.Adopt != "" && s.adopt(out.Adopt) {
		s.b.children.Add(out.Adopt, s)
	}
	switch {
	case out.Ask != nil:
		s.tasks.Go(func() { s.permission(out.Child, out.Ask) })
	case out.Question != nil:
		s.tasks.Go(func() { s.question(out.Child, out.Question) })
	case out.Replied != "":
		s.asks.Withdraw(out.Replied)
	case out.Reconnected:
		s.tasks.Go(s.resync)
	}
}

// track keeps the running turn's state: started, failed, its usage, and
// its end, the first idle once it started.
func (s *session) track(out Output) {
	s.mu.Lock()
	switch {
	case out.Busy:
		s.armed = true
	case out.Answer:
		s.answered = true
	case out.Err != nil:
		s.err, s.armed = out.Err, true
	case out.Step != nil:
		s.usage.InputTokens += out.Step.Input
		s.usage.OutputTokens += out.Step.Output
		s.usage.TotalTokens += out.Step.Total
		s.used = out.Step.Input + out.Step.Cache.Read
	}
	ended := out.Idle && s.armed
	if ended {
		s.armed = false
	}
	end := &turnEnd{err: s.err}
	unanswered := ended && !s.answered && s.err == nil
	s.mu.Unlock()
	switch {
	case unanswered:
		s.tasks.Go(s.endUnanswered)
	case ended:
		s.turns.End(end)
	}
}

// countChildStep adds a child session's step to the running turn's
// usage: a subagent spends its tokens for the turn (its context is not
// the session's, so used stays the parent's).
func (s *session) countChildStep(tk Tokens) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.usage.InputTokens += tk.Input
	s.usage.OutputTokens += tk.Output
	s.usage.TotalTokens += tk.Total
}

// errWait is how long a turn that ended without an answer or an error
// waits for the error: OpenCode reports why it dropped a prompt after the
// idle that ends its turn.
const errWait = 300 * time.Millisecond

// endUnanswered ends a turn OpenCode ended without answering its prompt,
// with the error OpenCode reports just after, if it does.
func (s *session) endUnanswered() {
	select {
	case <-time.After(errWait):
	case <-s.life.Done():
	}
	s.mu.Lock()
	end := &turnEnd{err: s.err}
	s.mu.Unlock()
	s.turns.End(end)
}

// resync checks, after the event stream dropped and came back, whether
// the running turn ended while nobody listened: OpenCode no longer lists
// the session as busy. It ends the turn then (what it streamed in the gap
// is lost).
func (s *session) resync() {
	srv, ok := s.at.Current()
	s.mu.Lock()
	id, armed := s.id, s.armed
	s.mu.Unlock()
	if !ok || !armed || s.turns.Running() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(s.life, callTimeout)
	defer cancel()
	var status map[string]struct {
		Type string `json:"type"`
	}
	if err := srv.call(ctx, http.MethodGet, "/session/status", s.dir, nil, &status); err != nil {
		s.log.Warn("checking the session after the event stream dropped", "err", err)
		return
	}
	if st, busy := status[id]; !busy || st.Type == "idle" {
		s.log.Warn("the turn ended while the event stream was down; some of its updates are lost")
		s.track(Output{Idle: true})
	}
}

// serverGone ends a running turn when the server dies.
func (s *session) serverGone(srv *server, err error) {
	if s.at.On(srv) {
		s.asks.WithdrawAll()
		s.turns.End(&turnEnd{gone: err})
	}
}

// Close forgets the session (OpenCode keeps it for resume).
// closeWait bounds Close's wait for the asks being answered: they end with
// the session's context, so it is a guard, not a wait.
const closeWait = 5 * time.Second

func (s *session) Close() error {
	s.end()
	s.b.sessions.Remove(s.NativeID(), s)
	s.mu.Lock()
	kids := s.kids
	s.kids = nil
	s.mu.Unlock()
	for _, id := range kids {
		s.b.children.Remove(id, s)
	}
	if !s.tasks.Wait(closeWait) {
		s.log.Warn("an ask of opencode's was still being answered after the session closed")
	}
	s.mu.Lock()
	on := s.entered
	s.entered = nil
	s.mu.Unlock()
	if on != nil {
		on.leave(s.dir)
	}
	return nil
}

// enter has the session use srv's instance of its directory, once: an
// attach that failed after it, or comes again on the same server, uses
// the same; one on another server leaves the last's.
func (s *session) enter(ctx context.Context, srv *server) error {
	s.mu.Lock()
	last := s.entered
	s.mu.Unlock()
	if last == srv {
		return nil
	}
	if err := srv.enter(ctx, s.dir); err != nil {
		return err
	}
	s.mu.Lock()
	s.entered = srv
	s.mu.Unlock()
	if last != nil {
		last.leave(s.dir)
	}
	return nil
}
