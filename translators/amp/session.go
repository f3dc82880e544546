package amp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Config option values.
const (
	modeDefault = "default" // Amp's rules; where they ask, the editor is asked
	modeBypass  = "bypass"  // --dangerously-allow-all
	ampModeAuto = "default" // no --mode: Amp's own default
)

// firstOutputLimit is how long amp may print nothing after it starts
// before the turn is given up (Options.FirstOutputLimit says otherwise): a
// healthy amp prints its init line within a few seconds.
const firstOutputLimit = 60 * time.Second

// session is one Amp thread behind one bridge session: each turn is an
// amp process (`amp threads continue T-… -x --stream-json
// --stream-json-input`) that takes the prompt on stdin, which is then
// closed, so the process prints its result and exits when the turn ends.
type session struct {
	b    *Backend
	life context.Context
	path string
	cwd  string
	mcp  string
	ev   agent.Events

	updates  *agentkit.Updates
	asks     *agentkit.Asks
	turns    *agentkit.Turns[end]
	settings *agentkit.Settings
	token    token

	mu     sync.Mutex
	thread string        // T-…, "" until the first turn made it
	tr     *Translator   // the running turn's
	p      *proc.Process // the running turn's
	// dismissed is set when the client answered an ask of the running turn
	// cancelled: the turn is interrupted and ends cancelled.
	dismissed bool
	always    map[string]bool
	hooked    string // the session's hook directory, once made
	closed    bool
}

// end is how a turn ended: amp's result, or its exit without one.
type end struct {
	result *Result
	exit   error // amp exited without a result
	auth   bool  // amp started its interactive login
	gone   bool  // the session closed
}

func newSession(life context.Context, b *Backend, path, mcp string, opts agent.OpenOptions, ev agent.Events) *session {
	s := &session{b: b, life: life, path: path, cwd: opts.Cwd, mcp: mcp, ev: ev, thread: opts.NativeID,
		updates: agentkit.NewUpdates(ev), asks: agentkit.NewAsks(ev), turns: agentkit.NewTurns[end](life),
		token: newToken(), always: map[string]bool{}}
	s.settings = agentkit.NewSettings(modeOption(), ampModeOption())
	s.settings.Restore(opts.Config)
	return s
}

func modeOption() agent.ConfigOption {
	return agent.ConfigOption{ID: agent.ConfigMode, Name: "Permissions", Category: acp.SessionConfigOptionCategoryMode, Current: modeDefault,
		Choices: []agent.ConfigValue{
			{Value: modeDefault, Name: "Ask", Description: "Amp's permission rules decide; where they ask, the editor is asked (answer within 8 s: Amp waits 10 s)"},
			{Value: modeBypass, Name: "Bypass", Description: "Every tool runs without asking (--dangerously-allow-all)"},
		}}
}

func ampModeOption() agent.ConfigOption {
	return agent.ConfigOption{ID: agent.ConfigModel, Name: "Amp mode", Category: acp.SessionConfigOptionCategoryModel, Current: ampModeAuto,
		Description: "Amp's agent mode (--mode): it picks the model, the system prompt and the tools",
		Choices: []agent.ConfigValue{{Value: ampModeAuto, Name: "Default", Description: "Amp's default mode"},
			{Value: "low", Name: "Low"}, {Value: "medium", Name: "Medium"}, {Value: "high", Name: "High"}, {Value: "ultra", Name: "Ultra"}}}
}

// Caps: none beyond Native; the bridge's transcript is its history (amp's threads are not read back).
func (s *session) Caps() agent.SessionCaps { return agent.SessionCaps{} }

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.thread
}

func (s *session) Config() []agent.ConfigOption { return s.settings.Options() }

// SetConfig takes effect with the next turn's process.
func (s *session) SetConfig(ctx context.Context, id, value string) error {
	if !s.settings.Set(id, value) {
		return fmt.Errorf("%w: amp has no %s %q", agent.ErrInvalidParams, id, value)
	}
	return nil
}

// Prompt runs one turn in a new amp process.
func (s *session) Prompt(ctx context.Context, turn agent.Turn) (agent.TurnResult, error) {
	msg, err := userLine(turn.Prompt)
	if err != nil {
		return agent.TurnResult{}, err
	}
	return agentkit.Run(ctx, s.turns, s.b.Log(), agentkit.TurnSpec[end, *proc.Process]{
		Ready:     s.start,
		Send:      func(_ context.Context, p *proc.Process) error { return send(p, msg) },
		Interrupt: func(_ context.Context, p *proc.Process) error { return interrupt(p) },
		Gone:      end{gone: true},
		Outcome:   s.outcome,
	})
}

// start starts the turn's amp process and its reader.
func (s *session) start(ctx context.Context) (*proc.Process, error) {
	args, err := s.args(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	p, err := proc.Start(proc.Spec{Path: s.path, Args: args, Dir: s.cwd, Env: s.b.env()})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, err)
	}
	s.p, s.tr = p, NewTranslator(s.cwd)
	go s.read(p, s.tr)
	return p, nil
}

// args is the turn's command line.
func (s *session) args(ctx context.Context) ([]string, error) {
	var args []string
	if t := s.NativeID(); t != "" {
		args = append(args, "threads", "continue", t)
	}
	args = append(args, "--execute", "--stream-json", "--stream-json-input", "--stream-json-thinking", "--no-archive-after-execute")
	if m := s.settings.Get(agent.ConfigModel); m != "" && m != ampModeAuto {
		args = append(args, "--mode", m)
	}
	if s.settings.Get(agent.ConfigMode) == modeBypass {
		args = append(args, "--dangerously-allow-all")
	} else {
		file, err := s.settingsFile(ctx)
		if err != nil {
			return nil, err
		}
		args = append(args, "--settings-file", file)
	}
	if s.mcp != "" {
		args = append(args, "--mcp-config", s.mcp)
	}
	return s.b.Args(args...), nil
}

// settingsFile writes the turn's settings: the user's, with every ask
// delegated to the editor.
func (s *session) settingsFile(ctx context.Context) (string, error) {
	h, err := s.b.hooksUp()
	if err != nil {
		return "", err
	}
	dir, err := s.hookDir(h)
	if err != nil {
		return "", err
	}
	command, err := s.b.delegateCommand()
	if err != nil {
		return "", err
	}
	script, err := writeScript(dir, h.ln.Addr().String(), s.token, command)
	if err != nil {
		return "", err
	}
	builtin, err := s.b.builtinRules(ctx, s.path)
	if err != nil {
		s.b.Log().Warn("asking about every command instead", "err", err)
		builtin = fallbackRules
	}
	user, err := userSettings(s.b.Env())
	if err != nil {
		return "", err
	}
	data, err := settingsFor(user, builtin, script)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "settings.json")
	if err := os.WriteFile(file, data, 0o600); err != nil {
		return "", fmt.Errorf("writing amp's settings: %w", err)
	}
	return file, nil
}

func (s *session) hookDir(h *hooks) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hooked != "" {
		return s.hooked, nil
	}
	dir, err := h.add(s, s.token)
	if err == nil {
		s.hooked = dir
	}
	return dir, err
}

// send writes the prompt and closes stdin: amp prints its result once
// its input has ended and the turn is done.
func send(p *proc.Process, msg []byte) error {
	_, err := p.Stdin.Write(append(msg, '\n'))
	p.Stdin.Close()
	if err != nil {
		return fmt.Errorf("sending the prompt to amp: %w", err)
	}
	return nil
}

// interrupt signals amp as Ctrl-C would (it then prints a result saying
// the user cancelled) and, if it has not exited a few seconds later,
// stops it.
func interrupt(p *proc.Process) error {
	if err := p.Signal(syscall.SIGINT); err != nil {
		return fmt.Errorf("interrupting amp: %w", err)
	}
	go func() {
		select {
		case <-p.Done():
		case <-time.After(agentkit.InterruptTimeout):
			p.Terminate()
		}
	}()
	return nil
}

// loginPrompt is how amp starts its interactive login, on stdout.
var loginPrompt = []byte("No API key found")

// read feeds the turn's output to its translator and reports its end.
func (s *session) read(p *proc.Process, tr *Translator) {
	first := time.AfterFunc(s.b.firstOutput, func() { p.Terminate() })
	defer first.Stop()
	br := bufio.NewReaderSize(p.Stdout, 1<<20)
	var noise []string
	for {
		line, err := br.ReadBytes('\n')
		first.Stop()
		if line = bytes.TrimSpace(line); len(line) > 0 {
			if line[0] != '{' {
				if bytes.HasPrefix(line, loginPrompt) {
					p.Kill()
					s.turns.End(end{auth: true})
					return
				}
				noise = append(noise, string(agentkit.Truncate(line, 200)))
			} else if s.handle(tr, line) {
				return
			}
		}
		if err != nil {
			break
		}
	}
	<-p.Done()
	exit := p.Exited()
	if len(noise) > 0 {
		exit = fmt.Errorf("%w; stdout: %s", exit, strings.Join(noise, " / "))
	}
	s.turns.End(end{exit: exit})
}

// handle translates one line; it reports whether the turn ended.
func (s *session) handle(tr *Translator, line []byte) bool {
	s.updates.Lock()
	out, err := tr.Translate(line)
	if err == nil {
		s.updates.Send(out.Updates)
		for _, p := range out.Children {
			s.updates.SendIn(p.Child, p.Updates)
		}
	}
	s.updates.Unlock()
	if err != nil {
		s.b.Log().Warn("amp printed a line the bridge can't read", "err", err, "line", agentkit.Truncate(line, 200))
		return false
	}
	if out.Skipped != "" {
		s.b.Log().Debug("amp line not translated", "type", out.Skipped)
	}
	if out.Thread != "" {
		s.mu.Lock()
		if s.thread == "" {
			s.thread = out.Thread
		}
		s.mu.Unlock()
	}
	if out.Result != nil {
		s.turns.End(end{result: out.Result})
		return true
	}
	return false
}

// outcome is the turn's result, once amp ended it.
func (s *session) outcome(ctx context.Context, e end) (agent.TurnResult, error) {
	s.asks.WithdrawAll()
	s.mu.Lock()
	dismissed := s.dismissed
	s.dismissed = false
	s.mu.Unlock()
	cancelled := agent.TurnResult{StopReason: acp.StopReasonCancelled}
	switch r := e.result; {
	case ctx.Err() != nil, r != nil && r.Cancelled, dismissed:
		return cancelled, nil
	case e.gone:
		return agent.TurnResult{}, errClosed
	case e.auth:
		return agent.TurnResult{}, errNoCredentials
	case e.exit != nil:
		return agent.TurnResult{}, exitError(e.exit)
	case r.AuthRequired:
		return agent.TurnResult{}, fmt.Errorf("%w: %s — set AMP_API_KEY, or run `amp login` in a terminal", agent.ErrAuthRequired, r.Err)
	case r.ApprovalRequired:
		return agent.TurnResult{}, fmt.Errorf("amp stopped: %s (in stream-json mode amp can't ask; the bridge asks the editor only where Amp's rules say ask)", r.Err)
	case r.Err != "":
		return agent.TurnResult{}, fmt.Errorf("amp: %s", r.Err)
	}
	return agent.TurnResult{StopReason: e.result.StopReason, Usage: e.result.Usage}, nil
}

// exitError says why amp exited without ending its turn.
func exitError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Couldn't connect") || strings.Contains(msg, "Cannot reach Amp servers"):
		return fmt.Errorf("amp can't reach Amp's servers (Amp runs its model there, so it needs the network): %v", err)
	case authError(strings.ToLower(msg)):
		return fmt.Errorf("%w: %v — set AMP_API_KEY, or run `amp login` in a terminal", agent.ErrAuthRequired, err)
	}
	return fmt.Errorf("amp ended the turn without a result: %w", err)
}

// decide answers a delegate: the editor's answer to the tool call it asks
// about, or a rejection if the editor doesn't answer in time.
func (s *session) decide(ctx context.Context, req hookRequest) hookAnswer {
	var input map[string]any
	json.Unmarshal(req.Input, &input)
	key := req.Tool
	if shellTool(req.Tool) {
		key += "\x00" + agentkit.Input(input).Str("cmd", "command")
	}
	s.mu.Lock()
	tr, always := s.tr, s.always[key]
	s.mu.Unlock()
	if always {
		return hookAnswer{Allow: true}
	}
	if tr == nil || s.turns.Running() == nil {
		return hookAnswer{Message: "acpbridge has no turn running for this permission ask"}
	}
	id := req.ToolUseID
	if id == "" {
		id = "amp-hook-" + newToken().id
	}
	s.updates.Lock()
	child := tr.ChildOf(id) // a subagent's tool call is asked about as its child session's
	s.updates.SendIn(child, tr.Announce(id, req.Tool, input))
	call, ok := tr.Call(id)
	s.updates.Unlock()
	if !ok {
		return hookAnswer{Message: "acpbridge can't show this tool call"}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(s.turns.Context(), cancel)
	defer stop()
	ans := s.asks.AskIn(ctx, child, id, call, permissionOptions(req.Tool))
	switch ans.Chosen() {
	case "allow_always":
		s.mu.Lock()
		s.always[key] = true
		s.mu.Unlock()
		return hookAnswer{Allow: true}
	case "allow_once":
		return hookAnswer{Allow: true}
	case "reject_once":
		return hookAnswer{Message: "The user rejected this tool call."}
	}
	if ans.Err == nil && ctx.Err() == nil { // the client answered cancelled: the user ends the turn
		s.dismiss()
		return hookAnswer{Message: "The user cancelled the turn."}
	}
	if ctx.Err() != nil && s.turns.Context().Err() == nil {
		return hookAnswer{Message: fmt.Sprintf("The editor did not answer within %v (Amp waits at most 10 s for a permission hook), so the tool call was not run.", AskLimit)}
	}
	return hookAnswer{Message: "The permission ask was cancelled."}
}

// dismiss ends the running turn as cancelled, the way a session/cancel
// does: amp is interrupted.
func (s *session) dismiss() {
	s.mu.Lock()
	s.dismissed = true
	p := s.p
	s.mu.Unlock()
	if p != nil {
		if err := interrupt(p); err != nil {
			s.b.Log().Debug("interrupting amp after a dismissed ask", "err", err)
		}
	}
}

func permissionOptions(tool string) []acp.PermissionOption {
	always := "Always allow " + tool
	if shellTool(tool) {
		always = "Always allow this command"
	}
	return []acp.PermissionOption{
		{OptionId: "allow_once", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
		{OptionId: "allow_always", Name: always, Kind: acp.PermissionOptionKindAllowAlways},
		{OptionId: "reject_once", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
	}
}

// Close stops a running turn's amp and removes the session's hook.
func (s *session) Close() error {
	s.mu.Lock()
	s.closed = true
	p, hooked := s.p, s.hooked != ""
	s.mu.Unlock()
	s.asks.WithdrawAll()
	if p != nil {
		p.Terminate()
	}
	if h, ok := s.b.hooks.Peek(); ok && hooked {
		h.remove(s.token)
	}
	return nil
}
