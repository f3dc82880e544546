package acpagent

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Spec is a downstream agent: a command that speaks ACP on its stdio.
type Spec struct {
	Name    string // the --agent name: "acp", or the name in agents.json
	Title   string // shown in the agent option; Name if empty
	Command string
	Args    []string
	Env     map[string]string // added to the bridge's environment
	Logger  *slog.Logger
}

// StartTimeout bounds the downstream's start: its process, and its answer
// to initialize.
var StartTimeout = 60 * time.Second

// InfoWait is how long Info waits for a start under way, so that
// initialize can answer with the downstream's capabilities.
var InfoWait = 5 * time.Second

// maxEarly bounds the updates kept for a session the downstream talks
// about before it has answered session/new.
const maxEarly = 256

// Backend proxies sessions to one downstream agent process, which all its
// sessions share (ACP agents serve many sessions on one connection).
type Backend struct {
	spec Spec
	log  *slog.Logger

	shared   agentkit.Shared[*conn]
	sessions agentkit.Registry[*session] // by the downstream's session id
	children agentkit.Registry[*session] // a downstream child session's (a subagent's) parent, by the child's id

	mu      sync.Mutex
	caps    acp.ClientCapabilities                // what the editor offers, told the downstream
	init    *acp.InitializeResponse               // the last downstream's answer to initialize
	warming chan struct{}                         // closed when a warm start has ended
	early   map[acp.SessionId][]acp.SessionUpdate // updates for sessions not yet known
}

var (
	_ agent.Backend = (*Backend)(nil)
)

// New returns the backend of a downstream agent.
func New(spec Spec) *Backend {
	log := spec.Logger
	if log == nil {
		log = slog.Default()
	}
	b := &Backend{spec: spec, log: log.With("agent", spec.Name)}
	b.shared = agentkit.Shared[*conn]{Start: b.start, Gone: b.gone}
	return b
}

// Check reports whether the command can be found.
func (b *Backend) Check() error {
	if _, err := exec.LookPath(b.spec.Command); err != nil {
		return fmt.Errorf("%w: %s: %v", agent.ErrAgentUnavailable, b.spec.Name, err)
	}
	return nil
}

// Info: the downstream's prompt, MCP and session capabilities once it has
// answered initialize (a start under way, which SetClientCapabilities
// begins, is waited for up to InfoWait); until then text, images and
// embedded context, and the downstream refuses what it can't take itself.
func (b *Backend) Info() agent.Info {
	info := agent.Info{Name: b.spec.Name, Title: cmp.Or(b.spec.Title, b.spec.Name),
		Prompt: acp.PromptCapabilities{Image: true, EmbeddedContext: true},
		Caps:   agent.Caps{Check: b.Check, Warm: b.Warm, ClientCapabilities: b.SetClientCapabilities}}
	b.mu.Lock()
	warming := b.warming
	b.mu.Unlock()
	if warming != nil {
		select {
		case <-warming:
		case <-time.After(InfoWait):
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.init != nil {
		info.Prompt = b.init.AgentCapabilities.PromptCapabilities
		info.MCP = b.init.AgentCapabilities.McpCapabilities
		sc := b.init.AgentCapabilities.SessionCapabilities
		info.Caps.Directories = sc.AdditionalDirectories != nil
		if p := sc.SystemPrompt; p != nil {
			info.Caps.SystemPrompt = agent.PromptModes{Append: true, Override: p.Mode != nil && p.Mode.Override != nil}
		}
	}
	return info
}

// SetClientCapabilities is what the editor offers; the downstream is told
// it at its initialize, which starts now: the edge calls this before Info
// when it answers the editor's initialize, and Info waits for the
// downstream's answer, so that the bridge advertises what the downstream
// takes (its prompt and MCP capabilities, directories, system prompt) from
// the first initialize on. The downstream would be started right after
// that initialize anyway (Warm), and the editor's session/new waits for it.
func (b *Backend) SetClientCapabilities(caps acp.ClientCapabilities) {
	b.mu.Lock()
	b.caps = caps
	b.mu.Unlock()
	b.Warm("")
}

// Warm starts the downstream in the background.
func (b *Backend) Warm(string) {
	b.mu.Lock()
	if b.warming != nil {
		b.mu.Unlock()
		return
	}
	done := make(chan struct{})
	b.warming = done
	b.mu.Unlock()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), StartTimeout)
		defer cancel()
		if _, err := b.shared.Get(ctx); err != nil {
			b.log.Warn("starting the agent", "err", err)
		}
	}()
}

// Close stops the downstream.
func (b *Backend) Close() error {
	b.shared.Close()
	return nil
}

// conn is a running downstream: its process (which Shared runs: Done,
// Exited, Stop) and the ACP connection to it.
type conn struct {
	*proc.Process
	cs      *acp.ClientSideConnection
	init    acp.InitializeResponse
	rawDone <-chan struct{} // the raw layer has handed on all of stdout
}

// Stop stops the downstream and what it started in its group (an
// adapter's agent, which ends on the group's SIGTERM and may write its
// session as it does), and waits, for a while, for the raw layer to hand
// on what the downstream printed.
func (c *conn) Stop() {
	c.Process.Stop()
	if !c.Process.WaitGroupGone(proc.Grace) {
		proc.SignalGroup(c.Pid(), syscall.SIGKILL)
	}
	select {
	case <-c.rawDone:
	case <-time.After(proc.Grace):
	}
}

// start starts the downstream and initializes it.
func (b *Backend) start(ctx context.Context) (*conn, error) {
	path, err := exec.LookPath(b.spec.Command)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", agent.ErrAgentUnavailable, b.spec.Name, err)
	}
	p, err := proc.Start(proc.Spec{Path: path, Args: b.spec.Args, Env: b.env()})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, err)
	}
	stdout, rawDone := rawLayer(p.Stdout)
	c := &conn{Process: p, cs: acp.NewClientSideConnection(&client{b: b}, p.Stdin, stdout), rawDone: rawDone}
	c.cs.SetLogger(b.log)
	b.mu.Lock()
	caps := b.caps
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	init, err := initialize(ctx, c, caps)
	if err != nil {
		p.Stop()
		return nil, err
	}
	c.init = init
	b.mu.Lock()
	b.init = &init
	b.mu.Unlock()
	return c, nil
}

// initialize runs ACP's initialize, or reports how the downstream died.
func initialize(ctx context.Context, c *conn, caps acp.ClientCapabilities) (acp.InitializeResponse, error) {
	type answer struct {
		r   acp.InitializeResponse
		err error
	}
	ch := make(chan answer, 1)
	go func() {
		r, err := c.cs.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber, ClientCapabilities: caps,
			ClientInfo: &acp.Implementation{Name: "acpbridge", Version: "proxy"}})
		ch <- answer{r, err}
	}()
	select {
	case a := <-ch:
		if a.err != nil {
			return a.r, fmt.Errorf("%w: initialize: %v", agent.ErrAgentUnavailable, a.err)
		}
		return a.r, nil
	case <-c.Done():
		return acp.InitializeResponse{}, fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, c.Exited())
	case <-ctx.Done():
		return acp.InitializeResponse{}, fmt.Errorf("%w: no answer to initialize within %v", agent.ErrAgentUnavailable, StartTimeout)
	}
}

// keepEarly keeps an update about a session the downstream has not yet
// answered session/new for (an agent may announce its commands first).
func (b *Backend) keepEarly(id acp.SessionId, u acp.SessionUpdate) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.early == nil {
		b.early = map[acp.SessionId][]acp.SessionUpdate{}
	}
	if len(b.early[id]) < maxEarly && len(b.early) < maxEarly {
		b.early[id] = append(b.early[id], u)
	}
}

// takeEarly returns and forgets what was kept for a session.
func (b *Backend) takeEarly(id acp.SessionId) []acp.SessionUpdate {
	b.mu.Lock()
	defer b.mu.Unlock()
	us := b.early[id]
	delete(b.early, id)
	return us
}

// gone logs a downstream's death: running turns end with it (each
// watches its downstream), and the next prompt of each session starts
// another and reopens the session there.
func (b *Backend) gone(_ *conn, err error) {
	b.log.Warn("the agent exited", "err", err)
}

func (b *Backend) env() []string {
	var extra []string
	keys := make([]string, 0, len(b.spec.Env))
	for k := range b.spec.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		extra = append(extra, k+"="+b.spec.Env[k])
	}
	return agentkit.NewCLI(b.spec.Name, "", agentkit.Options{Env: extra}).Env()
}
