// Package claude drives the Claude Code CLI: one long-lived `claude`
// process per session in stream-json mode, both ways, with the stdio
// control protocol for permissions, interrupts, modes and models
// (../shared/docs/claude.md). Translator turns its output into ACP
// updates; the session owns the process and the control protocol.
package claude

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/proc"
	"github.com/coder/acp-go-sdk"
)

// EnvVar overrides where the claude executable is.
const EnvVar = "ACPBRIDGE_CLAUDE"

// Options configures the backend. The zero value finds `claude` on PATH.
type Options struct {
	Path      string   // the executable; "" means $ACPBRIDGE_CLAUDE, else claude on PATH
	Env       []string // added to the bridge's environment for the CLI
	ExtraArgs []string // added to the CLI's arguments
	Logger    *slog.Logger
}

// Backend runs Claude Code sessions.
type Backend struct {
	opts Options
	log  *slog.Logger
}

var _ bridge.Backend = (*Backend)(nil)

// New returns the Claude backend.
func New(opts Options) *Backend {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Backend{opts: opts, log: opts.Logger.With("agent", "claude")}
}

// Info: Claude takes images and embedded context; its resume replays
// nothing, so the bridge keeps the transcript.
func (b *Backend) Info() bridge.Info {
	return bridge.Info{
		Name:   "claude",
		Title:  "Claude Code",
		Prompt: acp.PromptCapabilities{Image: true, EmbeddedContext: true},
		MCP:    acp.McpCapabilities{Http: true, Sse: true},
	}
}

// Open starts (or resumes) a session and warms its process up in the
// background, so that the first prompt doesn't pay the whole cold start.
func (b *Backend) Open(_ context.Context, opts bridge.OpenOptions, ev bridge.Events) (bridge.Native, error) {
	path, err := b.path()
	if err != nil {
		return nil, fmt.Errorf("%w: %v", bridge.ErrAgentUnavailable, err)
	}
	mcp, err := mcpConfig(opts.MCPServers)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", bridge.ErrInvalidParams, err)
	}
	s := newSession(b, path, mcp, opts, ev)
	s.warm()
	return s, nil
}

func (b *Backend) path() (string, error) {
	if b.opts.Path != "" {
		return exec.LookPath(b.opts.Path)
	}
	return proc.LookPath("claude", EnvVar)
}

// Check reports whether the claude executable can be found.
func (b *Backend) Check() error {
	_, err := b.path()
	return err
}

// Close does nothing: sessions own their processes.
func (b *Backend) Close() error { return nil }

// args is the CLI's command line: what the official SDKs pass.
func (b *Backend) args(mode, model, resume, mcp string) []string {
	args := []string{"--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--include-partial-messages", "--permission-prompt-tool", "stdio"}
	if mode != "" {
		args = append(args, "--permission-mode", mode)
	}
	if model != "" && model != "default" {
		args = append(args, "--model", model)
	}
	if resume != "" {
		args = append(args, "--resume", resume)
	}
	if mcp != "" {
		args = append(args, "--mcp-config", mcp)
	}
	return append(args, b.opts.ExtraArgs...)
}

// env is the bridge's environment without CLAUDECODE (set inside Claude
// Code itself, it would make the CLI think it is nested), plus Options.Env.
func (b *Backend) env() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CLAUDECODE=") {
			env = append(env, kv)
		}
	}
	return append(env, b.opts.Env...)
}

// mcpConfig turns ACP's MCP servers into --mcp-config JSON.
func mcpConfig(servers []acp.McpServer) (string, error) {
	if len(servers) == 0 {
		return "", nil
	}
	cfg := map[string]any{}
	for _, s := range servers {
		switch {
		case s.Stdio != nil:
			env := map[string]string{}
			for _, e := range s.Stdio.Env {
				env[e.Name] = e.Value
			}
			cfg[s.Stdio.Name] = map[string]any{"type": "stdio", "command": s.Stdio.Command, "args": s.Stdio.Args, "env": env}
		case s.Http != nil:
			cfg[s.Http.Name] = map[string]any{"type": "http", "url": s.Http.Url, "headers": headers(s.Http.Headers)}
		case s.Sse != nil:
			cfg[s.Sse.Name] = map[string]any{"type": "sse", "url": s.Sse.Url, "headers": headers(s.Sse.Headers)}
		default:
			return "", fmt.Errorf("claude takes stdio, http and sse MCP servers only")
		}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": cfg})
	return string(b), err
}

func headers(hs []acp.HttpHeader) map[string]string {
	m := map[string]string{}
	for _, h := range hs {
		m[h.Name] = h.Value
	}
	return m
}
