package acpagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// How a session was opened on the downstream, for the _meta of the
// session/new, load and resume answers.
const (
	openedNew     = "new"     // a new downstream session
	openedLoaded  = "loaded"  // the downstream loaded it (its replay was not shown)
	openedResumed = "resumed" // the downstream resumed it
	openedFresh   = "fresh"   // it could not: a new one, told the conversation so far
)

// session is one bridge session on the downstream.
type session struct {
	b    *Backend
	life context.Context
	ev   agent.Events
	opts agent.OpenOptions
	att  *agentkit.Attachment[*conn]

	mu        sync.Mutex
	id        acp.SessionId // the downstream's
	options   []acp.SessionConfigOption
	modes     *acp.SessionModeState
	replaying bool     // the downstream is replaying a load: not shown
	subagents []string // the downstream's child sessions it announced (see Backend.children)
	carry     bool     // the next prompt starts with the conversation so far
	opened    string   // how, the last time
	why       string   // why the downstream could not restore it
}

var _ agent.Native = (*session)(nil)

// Open opens a session on the downstream, starting it if need be, and
// waits for the answer: it carries the session's options.
func (b *Backend) Open(ctx context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	s := &session{b: b, life: ctx, ev: ev, opts: opts, id: acp.SessionId(opts.NativeID)}
	s.att = agentkit.NewAttachment(s.attach)
	if err := s.att.Start(ctx, StartTimeout); err != nil {
		return nil, err
	}
	return s, nil
}

// attach opens the session on the running downstream (started if need
// be): the first time, and again after the downstream died.
func (s *session) attach(ctx context.Context) (*conn, error) {
	c, err := s.b.shared.Get(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	id := s.id
	s.mu.Unlock()
	if id == "" {
		return c, s.create(ctx, c, openedNew)
	}
	return c, s.restore(ctx, c, id)
}

// create makes a new downstream session.
func (s *session) create(ctx context.Context, c *conn, how string) error {
	r, err := c.cs.NewSession(ctx, acp.NewSessionRequest{Cwd: s.opts.Cwd, AdditionalDirectories: s.opts.Directories,
		McpServers: mcp(s.opts.MCPServers), SystemPrompt: systemPrompt(s.opts.SystemPrompt)})
	if err != nil {
		return agentError("session/new", err)
	}
	s.mu.Lock()
	s.id, s.options, s.modes, s.opened = r.SessionId, r.ConfigOptions, r.Modes, how
	s.carry = how == openedFresh
	s.mu.Unlock()
	s.b.sessions.Add(string(r.SessionId), s)
	for _, u := range s.b.takeEarly(r.SessionId) {
		s.update(u)
	}
	return nil
}

// restore reopens a downstream session: loaded (its replay hidden: the
// bridge replays its own transcript), else resumed, else a new one that
// is told the conversation with the next prompt.
func (s *session) restore(ctx context.Context, c *conn, id acp.SessionId) error {
	caps := c.init.AgentCapabilities
	var why string
	switch {
	case caps.LoadSession:
		s.setReplaying(id, true)
		r, err := c.cs.LoadSession(ctx, acp.LoadSessionRequest{SessionId: id, Cwd: s.opts.Cwd, AdditionalDirectories: s.opts.Directories,
			McpServers: mcp(s.opts.MCPServers), SystemPrompt: systemPrompt(s.opts.SystemPrompt)})
		s.setReplaying(id, false)
		if err == nil {
			s.restored(r.ConfigOptions, r.Modes, openedLoaded)
			return nil
		}
		why = "session/load failed: " + err.Error()
	case caps.SessionCapabilities.Resume != nil:
		s.b.sessions.Add(string(id), s)
		r, err := c.cs.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: id, Cwd: s.opts.Cwd, AdditionalDirectories: s.opts.Directories,
			McpServers: mcp(s.opts.MCPServers), SystemPrompt: systemPrompt(s.opts.SystemPrompt)})
		if err == nil {
			s.restored(r.ConfigOptions, r.Modes, openedResumed)
			return nil
		}
		why = "session/resume failed: " + err.Error()
	default:
		why = "the agent can neither load nor resume sessions"
	}
	s.b.sessions.Remove(string(id), s)
	s.b.log.Info("starting a new session, told the conversation so far", "session", id, "why", why)
	s.mu.Lock()
	s.why = why
	s.mu.Unlock()
	return s.create(ctx, c, openedFresh)
}

func (s *session) setReplaying(id acp.SessionId, on bool) {
	s.mu.Lock()
	s.replaying = on
	s.mu.Unlock()
	if on {
		s.b.sessions.Add(string(id), s)
	}
}

func (s *session) restored(options []acp.SessionConfigOption, modes *acp.SessionModeState, how string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if options != nil {
		s.options = options
	}
	if modes != nil {
		s.modes = modes
	}
	s.opened = how
}

// mcp is never nil: the SDK refuses a null mcpServers.
func mcp(servers []acp.McpServer) []acp.McpServer {
	if servers == nil {
		return []acp.McpServer{}
	}
	return servers
}

// Caps: the session's Meta says how it was opened on the downstream, and
// whether its conversation reaches the agent; the editor's extension
// methods about it go to the downstream. The bridge's transcript is its
// history.
func (s *session) Caps() agent.SessionCaps {
	return agent.SessionCaps{Meta: s.meta(), Extension: s.extension, CancelChild: s.cancelChild}
}

// extension passes an extension method the editor sent about the session
// to the downstream, naming the downstream's session: a request as a
// request, a notification as a notification.
func (s *session) extension(ctx context.Context, method string, params json.RawMessage, notify bool) (json.RawMessage, error) {
	c, err := s.att.Server(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	id := s.id
	s.mu.Unlock()
	var obj map[string]json.RawMessage
	if json.Unmarshal(params, &obj) == nil && obj != nil {
		obj["sessionId"], _ = json.Marshal(id)
		params, _ = json.Marshal(obj)
	}
	if notify {
		return nil, c.cs.NotifyExtension(ctx, method, params)
	}
	return c.cs.CallExtension(ctx, method, params)
}

func (s *session) meta() map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]any{"opened": s.opened}
	if s.opened == openedFresh {
		m["restored"] = false
		m["why"] = s.why
		m["note"] = "the agent starts a new session; acpbridge replays its transcript to you and gives the agent the conversation so far with the next prompt"
	}
	return map[string]any{"acpbridge": m}
}

func (s *session) NativeID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return string(s.id)
}

// updateRaw shows an update of a kind the SDK does not know, as it came,
// unless the downstream is replaying a load.
func (s *session) updateRaw(u json.RawMessage) {
	s.mu.Lock()
	hidden := s.replaying
	s.mu.Unlock()
	if !hidden {
		s.ev.UpdateRaw(u)
	}
}

// update shows one of the downstream's updates, unless it is replaying a
// load; option changes update the session's options instead.
func (s *session) update(u acp.SessionUpdate) {
	s.mu.Lock()
	if s.replaying {
		s.mu.Unlock()
		return
	}
	if su := u.SubagentUpdate; su != nil && !slices.Contains(s.subagents, string(su.SessionId)) {
		s.subagents = append(s.subagents, string(su.SessionId)) // its traffic is routed here from now on
		s.b.children.Add(string(su.SessionId), s)
	}
	changed := true
	switch {
	case u.ConfigOptionUpdate != nil:
		s.options = u.ConfigOptionUpdate.ConfigOptions
	case u.CurrentModeUpdate != nil && s.modes != nil:
		s.modes.CurrentModeId = u.CurrentModeUpdate.CurrentModeId
	default:
		changed = false
	}
	s.mu.Unlock()
	if changed {
		s.ev.ConfigChanged()
		return
	}
	s.ev.Update(u)
}

// childUpdate shows an update of the downstream's child session id (a
// subagent) as the child's, unless the downstream is replaying a load.
func (s *session) childUpdate(id string, u acp.SessionUpdate) {
	s.mu.Lock()
	hidden := s.replaying
	s.mu.Unlock()
	if !hidden {
		s.ev.Child(id).Update(u)
	}
}

// cancelChild cancels the work of the downstream's child session id, as
// the editor asked of the child.
func (s *session) cancelChild(ctx context.Context, id string) error {
	c, ok := s.att.Current()
	if !ok {
		return nil // no downstream, no subagent at work
	}
	if err := c.cs.Cancel(ctx, acp.CancelNotification{SessionId: acp.SessionId(id)}); err != nil {
		return fmt.Errorf("cancelling subagent %s: %w", id, err)
	}
	return nil
}

// Prompt sends the prompt to the downstream (reattaching the session if the
// downstream died since), preceded by the conversation so far if the
// downstream could not restore it. A cancelled turn is cancelled on the
// downstream with session/cancel, and its own answer awaited.
func (s *session) Prompt(ctx context.Context, turn agent.Turn) (agent.TurnResult, error) {
	c, err := s.att.Server(ctx)
	if err != nil {
		return agent.TurnResult{}, err
	}
	s.mu.Lock()
	id, carry := s.id, s.carry
	s.carry = false
	s.mu.Unlock()
	prompt := turn.Prompt
	if carry && s.opts.History != nil {
		if text := agent.HistoryText(s.opts.History(), agent.HistoryBudget,
			"This session started earlier; the agent can't restore it, so here is what was said (from acpbridge's transcript)."); text != "" {
			prompt = append([]acp.ContentBlock{acp.TextBlock(text)}, prompt...)
		}
	}
	done := make(chan answerOf, 1)
	go func() {
		// Not ctx: the SDK would abandon the request when it ends, and the
		// downstream's own "cancelled" answer is the turn's end.
		r, err := c.cs.Prompt(s.life, acp.PromptRequest{SessionId: id, Prompt: prompt})
		done <- answerOf{r, err}
	}()
	var a answerOf
	select {
	case a = <-done:
	case <-c.Done():
		return agent.TurnResult{}, fmt.Errorf("%s exited during the turn: %v", s.b.spec.Name, c.Exited())
	case <-ctx.Done():
		a = s.cancel(c, id, done)
	}
	if a.err != nil {
		if ctx.Err() != nil {
			return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
		}
		select { // the connection ends as the process exits: say how it did
		case <-c.Done():
			return agent.TurnResult{}, fmt.Errorf("%s exited during the turn: %v", s.b.spec.Name, c.Exited())
		case <-time.After(time.Second):
		}
		return agent.TurnResult{}, agentError("session/prompt", a.err)
	}
	return agent.TurnResult{StopReason: a.r.StopReason, Usage: a.r.Usage}, nil
}

// answerOf is the downstream's answer to a prompt.
type answerOf struct {
	r   acp.PromptResponse
	err error
}

// cancel tells the downstream and waits for its answer, or gives up.
func (s *session) cancel(c *conn, id acp.SessionId, done chan answerOf) answerOf {
	if err := c.cs.Cancel(context.WithoutCancel(s.life), acp.CancelNotification{SessionId: id}); err != nil {
		s.b.log.Warn("cancelling", "err", err)
	}
	select {
	case a := <-done:
		return a
	case <-c.Done():
	case <-s.life.Done():
	}
	return answerOf{r: acp.PromptResponse{StopReason: acp.StopReasonCancelled}}
}

// agentError is a downstream's error as the bridge reports it: an
// auth_required stays one.
func agentError(method string, err error) error {
	var re *acp.RequestError
	if errors.As(err, &re) && re.Code == -32000 {
		return fmt.Errorf("%w: %s", agent.ErrAuthRequired, re.Message)
	}
	return fmt.Errorf("the agent's %s: %w", method, err)
}

// Close closes the downstream session if the downstream can, and forgets
// it.
func (s *session) Close() error {
	s.mu.Lock()
	id := s.id
	s.mu.Unlock()
	if c, ok := s.att.Current(); ok && id != "" {
		if c.init.AgentCapabilities.SessionCapabilities.Close != nil {
			select {
			case <-c.Done():
			default:
				ctx, cancel := context.WithTimeout(context.WithoutCancel(s.life), agentkit.InterruptTimeout)
				c.cs.CloseSession(ctx, acp.CloseSessionRequest{SessionId: id})
				cancel()
			}
		}
	}
	s.b.sessions.Remove(string(id), s)
	s.mu.Lock()
	for _, c := range s.subagents {
		s.b.children.Remove(c, s)
	}
	s.mu.Unlock()
	return nil
}

// systemPrompt is the client's system prompt as the agent is sent it
// again (the bridge joined its text blocks), nil for none.
func systemPrompt(p *agent.SystemPrompt) *acp.SystemPrompt {
	if p == nil {
		return nil
	}
	mode := acp.SystemPromptModeAppend
	if p.Override {
		mode = acp.SystemPromptModeOverride
	}
	return &acp.SystemPrompt{Mode: mode, Content: []acp.ContentBlock{acp.TextBlock(p.Text)}}
}
