package benchkit

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/coder/acp-go-sdk"
)

// ACPSession is a Session over ACP, with acp-go-sdk's
// ClientSideConnection and a Client.
type ACPSession struct {
	conn   *acp.ClientSideConnection
	client *Client
	name   string
	check  func(prompt, text string) error
	id     acp.SessionId
}

// NewACPSession talks ACP, as the client name, to an agent on its stdin
// and stdout. check says whether text, all the agent's message text of
// the turn of prompt, is the fake model's answer. With verbose, the
// connection's warnings go to stderr.
func NewACPSession(stdin io.Writer, stdout io.Reader, name string, verbose bool, check func(prompt, text string) error) *ACPSession {
	s := &ACPSession{client: &Client{}, name: name, check: check}
	s.conn = acp.NewClientSideConnection(s.client, stdin, stdout)
	if verbose {
		s.conn.SetLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	} else {
		s.conn.SetLogger(slog.New(slog.DiscardHandler))
	}
	return s
}

// Initialize sends initialize and returns the agent's agentInfo, "name
// version".
func (s *ACPSession) Initialize(ctx context.Context) (string, error) {
	r, err := s.conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
		ClientInfo: &acp.Implementation{Name: s.name, Version: "0"}})
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	if r.AgentInfo == nil {
		return "", nil
	}
	return r.AgentInfo.Name + " " + r.AgentInfo.Version, nil
}

// NewSession sends session/new, with no MCP servers.
func (s *ACPSession) NewSession(ctx context.Context, cwd string) error {
	r, err := s.conn.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		return fmt.Errorf("session/new: %w", err)
	}
	s.id = r.SessionId
	return nil
}

// Turn sends session/prompt and checks that the turn ended with end_turn
// and that the agent's text passes check.
func (s *ACPSession) Turn(ctx context.Context, prompt string) error {
	s.client.Text.Reset()
	r, err := s.conn.Prompt(ctx, acp.PromptRequest{SessionId: s.id, Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}})
	if err != nil {
		return fmt.Errorf("session/prompt %q: %w", prompt, err)
	}
	if r.StopReason != acp.StopReasonEndTurn {
		return fmt.Errorf("session/prompt %q: stopReason %q, want end_turn", prompt, r.StopReason)
	}
	// The notifications before the response are delivered before it.
	if err := s.check(prompt, s.client.Text.String()); err != nil {
		return fmt.Errorf("session/prompt %q: %w", prompt, err)
	}
	return nil
}

// Done is closed once the connection has stopped reading the agent's
// stdout.
func (s *ACPSession) Done() <-chan struct{} { return s.conn.Done() }

// Client is the ACP client side: it keeps the agent's message text and
// allows every permission request; it has no file system or terminals.
type Client struct {
	// Text is the agent's message text.
	Text TextBuffer
}

var _ acp.Client = (*Client)(nil)

// TextBuffer is a strings.Builder that is safe for concurrent use, and
// can be reset.
type TextBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

// WriteString appends s.
func (t *TextBuffer) WriteString(s string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.WriteString(s)
}

// Reset forgets the text so far.
func (t *TextBuffer) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Reset()
}

// String is the text written since the last Reset.
func (t *TextBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// SessionUpdate keeps the text of agent message chunks.
func (c *Client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if u := n.Update.AgentMessageChunk; u != nil && u.Content.Text != nil {
		c.Text.WriteString(u.Content.Text.Text)
	}
	return nil
}

// RequestPermission selects the first allow-once option, else the first
// allow-always one, else cancels.
func (c *Client) RequestPermission(_ context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	for _, kind := range []acp.PermissionOptionKind{acp.PermissionOptionKindAllowOnce, acp.PermissionOptionKindAllowAlways} {
		for _, opt := range r.Options {
			if opt.Kind == kind {
				return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(opt.OptionId)}, nil
			}
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

// ReadTextFile is not offered (method not found).
func (c *Client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

// WriteTextFile is not offered (method not found).
func (c *Client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

// CreateTerminal is not offered (method not found).
func (c *Client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

// KillTerminal is not offered (method not found).
func (c *Client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

// TerminalOutput is not offered (method not found).
func (c *Client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

// ReleaseTerminal is not offered (method not found).
func (c *Client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

// WaitForTerminalExit is not offered (method not found).
func (c *Client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

func (c *Client) CreateElicitation(context.Context, acp.CreateElicitationRequest) (acp.CreateElicitationResponse, error) {
	return acp.CreateElicitationResponse{}, acp.NewMethodNotFound(acp.ClientMethodElicitationCreate)
}

func (c *Client) CompleteElicitation(context.Context, acp.CompleteElicitationNotification) error {
	return nil
}
