package claude

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/proc"
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
	ev   bridge.Events
	log  *slog.Logger

	life context.Context // ends at Close; permission asks outside a turn use it
	end  context.CancelFunc

	trMu sync.Mutex  // serialises the translator and the updates it makes
	tr   *Translator // one per session, so tool ids and the task list survive restarts

	writeMu sync.Mutex // serialises writes to the process's stdin

	mu       sync.Mutex // protects the fields below
	p        *proc.Process
	ready    chan struct{} // closed once p has answered initialize, or failed to
	readyErr error
	nativeID string
	mode     string
	model    string
	models   []bridge.Model
	resolved map[string]string // model option → the model it runs, as initialize tells
	turn     *turn
	pending  map[string]chan reply         // host→CLI requests by request_id
	asks     map[string]context.CancelFunc // CLI→host permission asks by request_id
	nextID   int
	closed   bool
}

// turn is the prompt being answered.
type turn struct {
	ctx    context.Context
	result chan *Result // buffered; the read loop sends the turn's end
}

// reply is the CLI's answer to a control request.
type reply struct {
	body json.RawMessage
	err  error
}

func newSession(b *Backend, path, mcp string, opts bridge.OpenOptions, ev bridge.Events) *session {
	s := &session{b: b, path: path, mcp: mcp, cwd: opts.Cwd, ev: ev, log: b.log,
		tr: NewTranslator(opts.Cwd), nativeID: opts.NativeID, mode: or(opts.Mode, "default"), model: or(opts.Model, "default"),
		pending: map[string]chan reply{}, asks: map[string]context.CancelFunc{}}
	s.life, s.end = context.WithCancel(context.Background())
	return s
}

// warm starts the process without waiting for it.
func (s *session) warm() { s.start() }

// start returns the running process, starting one (resuming the native
// session if there is one) when there is none.
func (s *session) start() (*proc.Process, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.p != nil || s.closed {
		return s.p, s.ready
	}
	s.ready, s.readyErr = make(chan struct{}), nil
	p, err := proc.Start(proc.Spec{Path: s.path, Args: s.b.args(s.mode, s.model, s.nativeID, s.mcp), Dir: s.cwd, Env: s.b.env()})
	if err != nil {
		s.readyErr = fmt.Errorf("%w: %v", bridge.ErrAgentUnavailable, err)
		close(s.ready)
		return nil, s.ready
	}
	s.p = p
	s.log.Debug("claude started", "pid", p.Pid(), "resume", s.nativeID)
	go s.read(p)
	go s.initialize(p, s.ready)
	return p, s.ready
}

// errLost: Claude no longer has the conversation to resume.
var errLost = errors.New("claude has no conversation to resume")

// lostNotice tells the user why Claude forgot what came before.
const lostNotice = "*Claude Code no longer has this conversation (its session file is gone), " +
	"so it continues in a new Claude session without the earlier context.*\n\n"

// ensure waits until a process is running and initialized. If Claude lost
// the conversation, it starts a fresh one and says so.
func (s *session) ensure(ctx context.Context) (*proc.Process, error) {
	p, err := s.ready1(ctx)
	if errors.Is(err, errLost) {
		s.ev.Update(acp.UpdateAgentMessageText(lostNotice))
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
	body, err := s.request(ctx, p, map[string]any{"subtype": "initialize", "hooks": nil})
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
	}
	if len(init.Models) > 0 { // a restarted CLI tells them again
		s.models, s.resolved = nil, make(map[string]string)
	}
	for _, m := range init.Models {
		s.models = append(s.models, bridge.Model{ID: m.Value, Name: or(m.DisplayName, m.Value), Description: m.Description})
		s.resolved[m.Value] = m.ResolvedModel
	}
	s.mu.Unlock()
	close(ready)
	if err != nil {
		s.log.Warn("claude did not start", "err", err)
		go p.Stop() // the next prompt starts another
		return
	}
	s.commands(init.Commands)
	s.ev.ConfigChanged()
}

func (s *session) commands(cmds []struct{ Name, Description, ArgumentHint string }) {
	list := make([]acp.AvailableCommand, 0, len(cmds))
	for _, c := range cmds {
		ac := acp.AvailableCommand{Name: c.Name, Description: or(c.Description, "/"+c.Name)}
		if c.ArgumentHint != "" {
			ac.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: c.ArgumentHint}}
		}
		list = append(list, ac)
	}
	s.trMu.Lock()
	defer s.trMu.Unlock()
	for _, u := range s.tr.Commands(list) {
		s.ev.Update(u)
	}
}

// read is the process's read loop: control messages are handled here,
// everything else goes through the translator, in order.
func (s *session) read(p *proc.Process) {
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
		s.log.Warn("claude printed a line that is not JSON; skipping it", "line", truncate(line, 200))
		return
	}
	switch env.Type {
	case "control_response":
		s.resolve(env.Response)
	case "control_request":
		s.control(p, env.RequestID, env.Request)
	case "control_cancel_request":
		s.withdraw(env.RequestID)
	default:
		s.translate(line)
	}
}

func (s *session) translate(line []byte) {
	s.trMu.Lock()
	defer s.trMu.Unlock()
	out, err := s.tr.Translate(line)
	if err != nil {
		s.log.Warn("skipping a claude message", "err", err)
		return
	}
	if out.Skipped != "" {
		s.log.Debug("skipping an unknown claude message", "type", out.Skipped)
	}
	for _, u := range out.Updates {
		s.ev.Update(u)
	}
	if out.SessionID != "" {
		s.mu.Lock()
		s.nativeID = out.SessionID
		s.mu.Unlock()
	}
	if out.Mode != "" {
		s.modeReported(out.Mode)
	}
	if out.Model != "" {
		s.modelReported(out.Model)
	}
	if out.Result != nil {
		s.endTurn(out.Result)
	}
}

// modelReported follows the model Claude says it runs (system/init) when
// it is not the one picked: one set in Claude's own settings, say. The
// option that runs it becomes current, or the model itself if none does.
func (s *session) modelReported(model string) {
	s.mu.Lock()
	if s.model == model || s.resolved[s.model] == model {
		s.mu.Unlock()
		return
	}
	id := model
	if i := slices.IndexFunc(s.models, func(m bridge.Model) bool { return s.resolved[m.ID] == model }); i >= 0 {
		id = s.models[i].ID
	} else if len(s.models) > 0 {
		s.models = append(s.models, bridge.Model{ID: model, Name: model})
	}
	s.model = id
	s.mu.Unlock()
	s.log.Debug("claude runs another model than the one picked", "model", model, "option", id)
	s.ev.ConfigChanged()
}

// modeReported follows a mode change Claude made itself (ExitPlanMode).
func (s *session) modeReported(mode string) {
	s.mu.Lock()
	changed := s.mode != mode
	s.mode = mode
	s.mu.Unlock()
	if changed {
		s.ev.Update(acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: acp.SessionModeId(mode)}})
		s.ev.ConfigChanged()
	}
}

func (s *session) endTurn(r *Result) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return // the end of a turn nobody waits for any more
	}
	select {
	case t.result <- r:
	default:
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
	pending, asks := s.pending, s.asks
	s.pending, s.asks = map[string]chan reply{}, map[string]context.CancelFunc{}
	closed := s.closed
	s.mu.Unlock()
	for _, ch := range pending {
		ch <- reply{err: err}
	}
	for _, cancel := range asks {
		cancel()
	}
	if !closed {
		s.log.Warn("claude exited", "err", err)
	}
	s.endTurn(&Result{Err: fmt.Sprintf("%v (the next prompt restarts it)", err), Exited: true})
}

// Prompt runs one turn: the prompt goes in as a user message and the turn
// ends with Claude's result. A cancelled ctx interrupts the turn.
func (s *session) Prompt(ctx context.Context, prompt []acp.ContentBlock) (bridge.TurnResult, error) {
	msg, err := toClaude(prompt)
	if err != nil {
		return bridge.TurnResult{}, err
	}
	p, err := s.ensure(ctx)
	if ctx.Err() != nil {
		return bridge.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
	if err != nil {
		return bridge.TurnResult{}, err
	}
	t := &turn{ctx: ctx, result: make(chan *Result, 1)}
	s.setTurn(t)
	defer s.setTurn(nil)
	if err := s.write(p, msg); err != nil {
		return bridge.TurnResult{}, fmt.Errorf("sending the prompt to claude: %w", err)
	}
	r := s.wait(ctx, p, t)
	return s.outcome(ctx, r)
}

func (s *session) setTurn(t *turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turn = t
}

// wait waits for the turn's result; on cancel it interrupts Claude, which
// then ends the turn (or the bridge gives up on it and closes the session).
func (s *session) wait(ctx context.Context, p *proc.Process, t *turn) *Result {
	select {
	case r := <-t.result:
		return r
	case <-ctx.Done():
	}
	ictx, cancel := context.WithTimeout(s.life, 5*time.Second)
	defer cancel()
	if _, err := s.request(ictx, p, map[string]any{"subtype": "interrupt"}); err != nil {
		s.log.Warn("interrupting claude", "err", err)
	}
	return <-t.result
}

// outcome turns Claude's result into the turn's.
func (s *session) outcome(ctx context.Context, r *Result) (bridge.TurnResult, error) {
	if r.Window > 0 {
		s.ev.Update(acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{Used: r.Context, Size: r.Window,
			Cost: &acp.Cost{Amount: r.CostUSD, Currency: "USD"}}})
	}
	switch {
	case ctx.Err() != nil:
		return bridge.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	case r.AuthRequired:
		return bridge.TurnResult{}, fmt.Errorf("%w: %s — log in by running `claude` and /login, or set ANTHROPIC_API_KEY", bridge.ErrAuthRequired, r.Err)
	case r.Err != "":
		return bridge.TurnResult{}, errors.New(r.Err)
	}
	return bridge.TurnResult{StopReason: r.StopReason, Usage: r.Usage}, nil
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

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nativeID
}

// Close stops the process (stdin EOF, then signals) and withdraws asks.
func (s *session) Close() error {
	s.mu.Lock()
	s.closed = true
	p := s.p
	s.mu.Unlock()
	s.end()
	if p != nil {
		p.Stop()
	}
	return nil
}

var modes = []acp.SessionMode{
	{Id: "default", Name: "Default", Description: ptr("Ask before edits and commands")},
	{Id: "acceptEdits", Name: "Accept edits", Description: ptr("Edit files without asking")},
	{Id: "plan", Name: "Plan", Description: ptr("Plan, without editing or running anything")},
	{Id: "bypassPermissions", Name: "Bypass permissions", Description: ptr("Do anything without asking")},
}

// Modes lists Claude's permission modes; bypassPermissions is left out
// where the CLI refuses it (running as root outside a sandbox).
func (s *session) Modes() bridge.ModeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	avail := modes
	if os.Geteuid() == 0 && os.Getenv("IS_SANDBOX") == "" {
		avail = modes[:3]
	}
	return bridge.ModeState{Current: s.mode, Available: avail}
}

// aliases are offered until the CLI has told its models.
var aliases = []bridge.Model{
	{ID: "default", Name: "Default", Description: "Claude Code's default model"},
	{ID: "sonnet", Name: "Sonnet"}, {ID: "opus", Name: "Opus"}, {ID: "haiku", Name: "Haiku"},
}

func (s *session) Models() bridge.ModelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	avail := s.models
	if len(avail) == 0 {
		avail = aliases
	}
	return bridge.ModelState{Current: s.model, Available: avail}
}

// SetMode switches the permission mode through the control protocol.
func (s *session) SetMode(ctx context.Context, id string) error {
	if err := s.configure(ctx, map[string]any{"subtype": "set_permission_mode", "mode": id}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = id
	return nil
}

// SetModel switches the model through the control protocol.
func (s *session) SetModel(ctx context.Context, id string) error {
	var model any = id
	if id == "default" {
		model = nil
	}
	if err := s.configure(ctx, map[string]any{"subtype": "set_model", "model": model}); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.model = id
	return nil
}

func (s *session) configure(ctx context.Context, req map[string]any) error {
	p, err := s.ensure(ctx)
	if err != nil {
		return err
	}
	_, err = s.request(ctx, p, req)
	return err
}

func ptr(s string) *string { return &s }

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
