package claude

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// startTimeout bounds the CLI's answer to the control initialize (it
// takes 0.5–0.9 s on a 2-core machine).
const startTimeout = 60 * time.Second

// session is one Claude conversation: at most one claude process at a
// time, restarted with --resume after it dies.
type session struct {
	b    *Backend
	path string
	mcp  string
	cwd  string
	dirs []string // --add-dir
	// prompt is the client's system prompt (--append-system-prompt or
	// --system-prompt), nil for none.
	prompt *agent.SystemPrompt
	ev     agent.Events
	log    *slog.Logger

	life context.Context // ends at Close
	end  context.CancelFunc
	// tasks are the session's goroutines (starting the CLI, initializing
	// it, answering its asks); Close waits for them.
	tasks agentkit.Tasks

	cfg   *agentkit.Settings
	turns *agentkit.Turns[*Result] // the read loop reports each turn's end
	asks  *agentkit.Asks           // can_use_tool asks by request_id
	// dismissed is set when the client answered an ask of the running turn
	// cancelled: the user wants the turn to end, which Claude reports as
	// an aborted turn, not a cancelled one.
	dismissed atomic.Bool

	out *agentkit.Updates // serialises the translator and the updates it makes
	tr  *Translator       // one per session, so tool ids and the task list survive restarts

	writeMu sync.Mutex // serialises writes to the process's stdin

	mu       sync.Mutex // protects the fields below
	p        *proc.Process
	reading  chan struct{} // closed when p's read loop has finished
	ready    chan struct{} // closed once p has answered initialize, or failed to
	readyErr error
	nativeID string
	forkOf   string                // until Claude names the forked session: the one it forks
	resolved map[string]string     // model option → the model it runs, as initialize tells
	pending  map[string]chan reply // host→CLI requests by request_id
	nextID   int
	closed   bool
}

// reply is the CLI's answer to a control request.
type reply struct {
	body json.RawMessage
	err  error
}

func newSession(ctx context.Context, b *Backend, path, mcp string, opts agent.OpenOptions, ev agent.Events) *session {
	s := &session{b: b, path: path, mcp: mcp, cwd: opts.Cwd, dirs: opts.Directories, prompt: opts.SystemPrompt, ev: ev, log: b.Log(),
		cfg:  newSettings(b),
		asks: agentkit.NewAsks(ev), out: agentkit.NewUpdates(ev), tr: NewTranslator(opts.Cwd), nativeID: opts.NativeID, forkOf: opts.ForkOf,
		resolved: map[string]string{}, pending: map[string]chan reply{}}
	s.life, s.end = context.WithCancel(ctx)
	s.turns = agentkit.NewTurns[*Result](s.life)
	s.cfg.Restore(opts.Config)
	if m := opts.Config[agent.ConfigModel]; m != "" {
		s.cfg.Adopt(agent.ConfigModel, m) // claude takes any model name
	}
	return s
}

// newSettings are a new session's options, with their defaults.
func newSettings(b *Backend) *agentkit.Settings {
	return agentkit.NewSettings(modeOption(b.bypass()), modelOption(b.knownModels()), effortOption())
}

// warm starts the process in the background: session/new does not wait
// for a spare to be taken (from a shared daemon still starting, say) or a
// process to be spawned; the first prompt waits for it in ensure.
func (s *session) warm() { s.tasks.Go(func() { s.start() }) }

// start returns the running process, starting one (resuming the native
// session if there is one) when there is none.
func (s *session) start() (*proc.Process, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil || s.closed {
		return s.p, s.ready
	}
	s.ready, s.readyErr = make(chan struct{}), nil
	l := s.b.newLaunch(s.cfg, s.nativeID, s.mcp)
	l.dirs, l.prompt = s.dirs, s.prompt
	if s.nativeID == "" && s.forkOf != "" {
		l.resume, l.fork = s.forkOf, true
	}
	spec := s.b.spec(s.path, s.cwd, l)
	var p *proc.Process
	var err error
	if l.resume == "" && l.mcp == "" { // a spare holds no conversation and no MCP servers
		p = s.b.takeSpare(s.life, spec)
	}
	if p == nil {
		p, err = proc.Start(spec)
	}
	if err != nil {
		s.readyErr = fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, err)
		close(s.ready)
		return nil, s.ready
	}
	s.p, s.reading = p, make(chan struct{})
	s.log.Debug("claude started", "pid", p.Pid(), "resume", s.nativeID)
	go s.read(p, s.reading)
	s.tasks.Go(func() { s.initialize(p, s.ready) })
	return p, s.ready
}

// errLost: Claude no longer has the conversation to resume.
var errLost = errors.New("claude has no conversation to resume")

// errBypassRefused: the CLI refused to start able to bypass permissions;
// the next start is without.
var errBypassRefused = errors.New("claude refused --allow-dangerously-skip-permissions")

// lostNotice tells the user why Claude forgot what came before: a notice
// (a thought, to a client that takes none), not history.
var lostNotice = agentkit.Notice(acp.NoticeSeverityWarning, "Claude Code no longer has this conversation",
	"its session file is gone, so it continues in a new Claude session without the earlier context")

// ensure waits until a process is running and initialized. If Claude lost
// the conversation, it starts a fresh one and says so.
func (s *session) ensure(ctx context.Context) (*proc.Process, error) {
	p, err := s.ready1(ctx)
	if errors.Is(err, errBypassRefused) {
		s.dropBypass()
		p, err = s.ready1(ctx)
	}
	if errors.Is(err, errLost) {
		s.ev.Update(lostNotice)
		p, err = s.ready1(ctx)
	}
	return p, err
}

func (s *session) ready1(ctx context.Context) (*proc.Process, error) {
	p, ready := s.start()
	select {
	case <-ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readyErr != nil {
		return nil, s.readyErr
	}
	if s.closed {
		return nil, errors.New("the session is closed")
	}
	return p, nil
}

// initialize sends the control initialize and takes the models and slash
// commands from its answer.
func (s *session) initialize(p *proc.Process, ready chan struct{}) {
	ctx, cancel := context.WithTimeout(s.life, startTimeout)
	defer cancel()
	// forwardSubagentText: a subagent's text and thinking come too, for its
	// child session.
	body, err := s.request(ctx, p, map[string]any{"subtype": "initialize", "hooks": nil, "forwardSubagentText": true})
	var init struct {
		Commands []struct{ Name, Description, ArgumentHint string }                `json:"commands"`
		Models   []struct{ Value, DisplayName, Description, ResolvedModel string } `json:"models"`
	}
	if err == nil {
		err = json.Unmarshal(body, &init)
	}
	s.mu.Lock()
	lost := false
	if err != nil {
		s.readyErr = fmt.Errorf("claude did not start: %w", err)
		if s.p == p {
			s.p = nil // the next ensure starts another
		}
		if lost = s.nativeID != "" && strings.Contains(p.Stderr(), "No conversation found"); lost {
			s.nativeID, s.readyErr = "", errLost
		}
		if strings.Contains(p.Stderr(), bypassRefusal) {
			s.b.refuseBypass()
			s.readyErr = errBypassRefused
		}
	}
	var models []agent.ConfigValue
	if len(init.Models) > 0 { // a restarted CLI tells them again
		s.resolved = make(map[string]string)
	}
	for _, m := range init.Models {
		models = append(models, agent.ConfigValue{Value: m.Value, Name: cmp.Or(m.DisplayName, m.Value), Description: m.Description})
		s.resolved[m.Value] = m.ResolvedModel
	}
	s.mu.Unlock()
	if len(models) > 0 { // before ready: a turn's system/init may name one
		s.b.learnModels(models)
		current := s.cfg.Get(agent.ConfigModel)
		s.cfg.Put(modelOption(models))
		s.cfg.Adopt(agent.ConfigModel, current)
	}
	close(ready)
	if err != nil {
		s.log.Warn("claude did not start", "err", err)
		p.Stop() // the next prompt starts another (this runs as one of the session's tasks)
		return
	}
	s.commands(init.Commands)
	if len(models) > 0 {
		s.ev.ConfigChanged()
	}
}

func (s *session) commands(cmds []struct{ Name, Description, ArgumentHint string }) {
	list := make([]acp.AvailableCommand, 0, len(cmds))
	for _, c := range cmds {
		ac := acp.AvailableCommand{Name: c.Name, Description: cmp.Or(c.Description, "/"+c.Name)}
		if c.ArgumentHint != "" {
			ac.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: c.ArgumentHint}}
		}
		list = append(list, ac)
	}
	s.out.Lock()
	defer s.out.Unlock()
	s.out.Send(s.tr.Commands(list))
}

// read is the process's read loop: control messages are handled here,
// everything else goes through the translator, in order.
func (s *session) read(p *proc.Process, done chan struct{}) {
	defer close(done)
	br := bufio.NewReaderSize(p.Stdout, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if line = bytes.TrimSpace(line); len(line) > 0 {
			s.handle(p, line)
		}
		if err != nil {
			break
		}
	}
	s.exited(p)
}

// envelope is enough of a line to route it.
type envelope struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response"`
}

func (s *session) handle(p *proc.Process, line []byte) {
	var env envelope
	if err := json.Unmarshal(line, &env); err != nil {
		s.log.Warn("claude printed a line that is not JSON; skipping it", "line", agentkit.Truncate(line, 200))
		return
	}
	switch env.Type {
	case "control_response":
		s.resolve(env.Response)
	case "control_request":
		s.control(p, env.RequestID, env.Request)
	case "control_cancel_request":
		s.asks.Withdraw(env.RequestID)
	default:
		s.translate(line)
	}
}

func (s *session) translate(line []byte) {
	s.out.Lock()
	defer s.out.Unlock()
	out, err := s.tr.Translate(line)
	if err != nil {
		s.log.Warn("skipping a claude message", "err", err)
		return
	}
	if out.Skipped != "" {
		s.log.Debug("skipping an unknown claude message", "type", out.Skipped)
	}
	s.out.SendIn(out.Child, out.Updates)
	if out.SessionID != "" {
		s.mu.Lock()
		s.nativeID, s.forkOf = out.SessionID, ""
		s.mu.Unlock()
	}
	if out.Mode != "" {
		s.modeReported(out.Mode)
	}
	if out.Model != "" {
		s.modelReported(out.Model)
	}
	if out.Result != nil {
		s.turns.End(out.Result)
	}
}

// modelReported follows the model Claude says it runs (system/init) when
// it is not the one picked: one set in Claude's own settings, say. The
// option that runs it becomes current, or the model itself if none does.
func (s *session) modelReported(model string) {
	current := s.cfg.Get(agent.ConfigModel)
	s.mu.Lock()
	if current == model || s.resolved[current] == model {
		s.mu.Unlock()
		return
	}
	id := model
	o, _ := s.cfg.Option(agent.ConfigModel)
	if i := slices.IndexFunc(o.Choices, func(c agent.ConfigValue) bool { return s.resolved[c.Value] == model }); i >= 0 {
		id = o.Choices[i].Value
	}
	s.mu.Unlock()
	s.cfg.Adopt(agent.ConfigModel, id)
	s.log.Debug("claude runs another model than the one picked", "model", model, "option", id)
	s.ev.ConfigChanged()
}

// modeReported follows a mode change Claude made itself (ExitPlanMode).
func (s *session) modeReported(mode string) {
	if s.cfg.Set(agent.ConfigMode, mode) {
		s.ev.Update(acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: acp.SessionModeId(mode)}})
		s.ev.ConfigChanged()
	}
}

// exited cleans up after the process: requests fail, asks are withdrawn,
// and a running turn ends with the process's exit status and stderr.
func (s *session) exited(p *proc.Process) {
	err := p.Exited()
	s.mu.Lock()
	if s.p == p {
		s.p = nil
	}
	pending := s.pending
	s.pending = map[string]chan reply{}
	closed := s.closed
	s.mu.Unlock()
	for _, ch := range pending {
		ch <- reply{err: err}
	}
	s.asks.WithdrawAll()
	if !closed {
		s.log.Warn("claude exited", "err", err)
	}
	s.turns.End(&Result{Err: fmt.Sprintf("%v (the next prompt restarts it)", err), Exited: true})
}

// Prompt runs one turn: the prompt goes in as a user message and the turn
// ends with Claude's result. A cancelled ctx interrupts the turn (Claude
// then ends it itself, or the bridge gives up on it and closes the
// session).
func (s *session) Prompt(ctx context.Context, turn agent.Turn) (agent.TurnResult, error) {
	msg, err := toClaude(turn.Prompt)
	if err != nil {
		return agent.TurnResult{}, err
	}
	s.dismissed.Store(false)
	return agentkit.Run(ctx, s.turns, s.log, agentkit.TurnSpec[*Result, *proc.Process]{
		Ready: s.ensure,
		Send: func(_ context.Context, p *proc.Process) error {
			if err := s.write(p, msg); err != nil {
				return fmt.Errorf("sending the prompt to claude: %w", err)
			}
			return nil
		},
		Interrupt: func(ctx context.Context, p *proc.Process) error {
			_, err := s.request(ctx, p, map[string]any{"subtype": "interrupt"})
			return err
		},
		Gone:    &Result{StopReason: acp.StopReasonCancelled},
		Outcome: s.outcome,
	})
}

// outcome turns Claude's result into the turn's.
func (s *session) outcome(ctx context.Context, r *Result) (agent.TurnResult, error) {
	if r.Window > 0 {
		s.ev.Update(acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{Used: r.Context, Size: r.Window,
			Cost: &acp.Cost{Amount: r.CostUSD, Currency: "USD"}}})
	}
	switch {
	case ctx.Err() != nil, s.dismissed.Load() && (r.Aborted || r.Err != ""):
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	case r.AuthRequired:
		return agent.TurnResult{}, fmt.Errorf("%w: %s — log in with `acpbridge --agent claude --login` (Claude's own `claude auth login`), or set ANTHROPIC_API_KEY", agent.ErrAuthRequired, r.Err)
	case r.Err != "":
		return agent.TurnResult{}, errors.New(r.Err)
	}
	return agent.TurnResult{StopReason: r.StopReason, Usage: r.Usage}, nil
}

// write sends one JSON line to the process.
func (s *session) write(p *proc.Process, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if _, err := p.Stdin.Write(append(b, '\n')); err != nil {
		select {
		case <-p.Done():
			return p.Exited()
		default:
			return err
		}
	}
	return nil
}

// Caps: none beyond Native; the bridge's transcript is its history (claude's --resume replays nothing).
func (s *session) Caps() agent.SessionCaps { return agent.SessionCaps{CancelChild: s.stopTask} }

// stopTask stops the subagent whose task id is id (control stop_task),
// leaving the turn running.
func (s *session) stopTask(ctx context.Context, id string) error {
	s.mu.Lock()
	p := s.p
	s.mu.Unlock()
	if p == nil {
		return nil // no process, no subagent at work
	}
	_, err := s.request(ctx, p, map[string]any{"subtype": "stop_task", "task_id": id})
	if err != nil {
		return fmt.Errorf("stopping subagent %s: %w", id, err)
	}
	return nil
}

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nativeID
}

// Close stops the process (stdin EOF, then signals), withdraws asks, and
// waits for the read loop, so that nothing reaches Events after it.
func (s *session) Close() error {
	s.mu.Lock()
	s.closed = true
	p, reading := s.p, s.reading
	s.mu.Unlock()
	s.end()
	if p != nil {
		p.Stop()
		select {
		case <-reading:
		case <-time.After(closeWait):
			s.log.Warn("claude's output did not end after it was stopped")
		}
	}
	if !s.tasks.Wait(closeWait) {
		s.log.Warn("an ask of claude's was still being answered after the session closed")
	}
	return nil
}

// closeWait bounds Close's wait for the read loop: stdout stays open after
// the CLI is killed only if something it started holds it.
const closeWait = 3 * proc.Grace
