package amp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// EnvVar overrides where the amp executable is.
const EnvVar = "ACPBRIDGE_AMP"

// CLIOptions are the options every CLI backend takes.
type CLIOptions = agentkit.Options

// Options configures the backend.
type Options struct {
	CLIOptions
	// Delegate is the command line of acpbridge's permission delegate
	// (acpbridge amp-delegate); nil means this executable's.
	Delegate []string
	// FirstOutputLimit is how long a turn's amp may print nothing before
	// the turn is given up; zero means a minute.
	FirstOutputLimit time.Duration
}

// Backend runs Amp sessions, one amp process per turn.
type Backend struct {
	agentkit.CLI
	delegate    []string
	firstOutput time.Duration // Options.FirstOutputLimit, or its default

	builtin agentkit.Lazy[[]rule] // Amp's built-in permission rules
	hooks   agentkit.Lazy[*hooks] // the delegates' way back to the bridge

	mu     sync.Mutex
	closed bool
}

var _ agent.Backend = (*Backend)(nil)

// New returns the Amp backend.
func New(opts Options) *Backend {
	first := opts.FirstOutputLimit
	if first == 0 {
		first = firstOutputLimit
	}
	return &Backend{CLI: agentkit.NewCLI("amp", EnvVar, opts.CLIOptions), delegate: opts.Delegate, firstOutput: first}
}

// Info: Amp takes images (checked: at most four, of the type they claim)
// and embedded context, and MCP servers of every transport.
func (b *Backend) Info() agent.Info {
	return b.Describe("Amp", acp.McpCapabilities{Http: true, Sse: true}, b)
}

// Open makes a session. It starts nothing: amp runs once per turn, and the
// thread is made by the first turn. It fails at once, without starting
// amp, when amp is missing or has no credentials: amp would start an
// interactive login and wait for a code on its terminal for five minutes.
func (b *Backend) Open(ctx context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	path, err := b.Find()
	if err != nil {
		return nil, err
	}
	if err := b.credentials(); err != nil {
		return nil, err
	}
	mcp, err := mcpConfig(opts.MCPServers)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("%w: the amp backend is closed", agent.ErrAgentUnavailable)
	}
	return newSession(ctx, b, path, mcp, opts, ev), nil
}

// Close stops the permission hooks' listener and removes its files.
// Sessions are closed first, and own their processes.
func (b *Backend) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	if h, ok := b.hooks.Peek(); ok {
		return h.close()
	}
	return nil
}

// errNoCredentials says how to give amp a key.
var errNoCredentials = fmt.Errorf("%w: Amp has no API key: set AMP_API_KEY to an access token from "+
	"https://ampcode.com/settings, or run `amp login` in a terminal, then try again", agent.ErrAuthRequired)

// credentials checks that amp has a key: AMP_API_KEY in its environment,
// or one that `amp login` stored in Amp's secrets file
// ($XDG_DATA_HOME/amp/secrets.json, "apiKey@<server URL>": key).
func (b *Backend) credentials() error {
	env := b.Env()
	if agentkit.EnvValue(env, "AMP_API_KEY") != "" {
		return nil
	}
	data, err := os.ReadFile(secretsFile(env))
	if err != nil {
		return errNoCredentials
	}
	var secrets map[string]any
	if json.Unmarshal(data, &secrets) != nil {
		return errNoCredentials
	}
	for k, v := range secrets {
		if s, _ := v.(string); strings.HasPrefix(k, "apiKey@") && s != "" {
			return nil
		}
	}
	return errNoCredentials
}

// secretsFile is where `amp login` keeps the key.
func secretsFile(env []string) string {
	data := agentkit.EnvValue(env, "XDG_DATA_HOME")
	if data == "" || !filepath.IsAbs(data) {
		data = filepath.Join(agentkit.HomeOf(env), ".local", "share")
	}
	return filepath.Join(data, "amp", "secrets.json")
}

// env is what every amp process runs with: no self-update.
func (b *Backend) env(extra ...string) []string {
	return append(b.Env(), append([]string{"AMP_SKIP_UPDATE_CHECK=1"}, extra...)...)
}

// delegateCommand is the command line a permission hook runs.
func (b *Backend) delegateCommand() ([]string, error) {
	if b.delegate != nil {
		return b.delegate, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding acpbridge's own executable for Amp's permission hook: %w", err)
	}
	return []string{self, DelegateCommand}, nil
}

// mcpConfig turns ACP's MCP servers into --mcp-config JSON, in Amp's
// settings shape (amp.mcpServers: name → command/args/env or url/headers).
func mcpConfig(servers []acp.McpServer) (string, error) {
	ms, err := agentkit.MCPServers("amp", servers, agentkit.MCPStdio, agentkit.MCPHTTP, agentkit.MCPSSE)
	if err != nil || len(ms) == 0 {
		return "", err
	}
	cfg := map[string]any{}
	for _, m := range ms {
		cfg[m.Name] = m.Fields("headers")
	}
	data, err := json.Marshal(cfg)
	return string(data), err
}

// errClosed is a session's turn after the session closed.
var errClosed = errors.New("the session is closed")

// LoginCmd is Amp's own login, `amp login`.
func (b *Backend) LoginCmd() (*exec.Cmd, error) { return b.Command(b.env(), "login") }

// LogoutCmd is amp's own logout, which needs no terminal.
func (b *Backend) LogoutCmd() (*exec.Cmd, error) { return b.Command(b.env(), "logout") }

// Login tells whether amp has a key (see credentials).
func (b *Backend) Login() agent.Login {
	if err := b.credentials(); err != nil {
		return agent.Login{Required: true, Detail: err.Error()}
	}
	return agent.Login{OK: true, Detail: "AMP_API_KEY is set, or amp login stored a key"}
}
