// Package mock is acpbridge's built-in agent: deterministic, offline, and
// driven by words in the prompt, so that anyone can see every kind of ACP
// update (and test their own ACP client) without an agent CLI or API key.
//
// Words (case-insensitive, anywhere in the prompt's text):
//
//	think   a thought before the answer
//	read    a read tool call that completes
//	edit    an edit tool call with a diff; in mode "default" it asks
//	        permission: allow → completed, reject → failed
//	plan    a three-step plan that is worked through
//	slow    stream the answer slowly (about 2s; handy for cancel)
//	fail    end the turn with an error
//	demo    think, read, edit and plan together
//
// The answer always echoes the prompt. The mock never touches the disk:
// its read and edit are make-believe.
package mock

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/coder/acp-go-sdk"
)

// Backend is the mock agent.
type Backend struct{}

var _ bridge.Backend = (*Backend)(nil)

// New returns the mock backend.
func New() *Backend { return &Backend{} }

// Info describes the mock: it takes every kind of prompt content and its
// resume, like Claude's, replays nothing.
func (*Backend) Info() bridge.Info {
	return bridge.Info{
		Name:   "mock",
		Title:  "Mock agent (offline)",
		Prompt: acp.PromptCapabilities{Image: true, Audio: true, EmbeddedContext: true},
		MCP:    acp.McpCapabilities{Http: true, Sse: true},
	}
}

// Open starts a mock session, or "resumes" one by keeping its id.
func (*Backend) Open(_ context.Context, opts bridge.OpenOptions, ev bridge.Events) (bridge.Native, error) {
	s := &session{ev: ev, cwd: opts.Cwd, id: opts.NativeID, mode: "default", model: models[0].ID}
	if s.id == "" {
		s.id = fmt.Sprintf("mock-%d", time.Now().UnixNano())
	}
	if opts.Mode != "" {
		s.mode = opts.Mode
	}
	if opts.Model != "" {
		s.model = opts.Model
	}
	return s, nil
}

// Close does nothing: the mock shares nothing between sessions.
func (*Backend) Close() error { return nil }

var (
	modes = []acp.SessionMode{
		{Id: "default", Name: "Default", Description: ptr("Ask before every edit")},
		{Id: "acceptEdits", Name: "Accept edits", Description: ptr("Edit without asking")},
	}
	models = []bridge.Model{
		{ID: "mock-small", Name: "Mock Small", Description: "Streams in words"},
		{ID: "mock-large", Name: "Mock Large", Description: "Streams in words, and says so"},
	}
)

func ptr(s string) *string { return &s }

// session is one mock conversation.
type session struct {
	ev  bridge.Events
	cwd string
	id  string

	mu          sync.Mutex // protects the fields below
	mode, model string
	alwaysAllow bool // the user chose "always allow" for edits
	calls       int  // tool calls made, for their ids
}

func (s *session) NativeID() string { return s.id }

func (s *session) Modes() bridge.ModeState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bridge.ModeState{Current: s.mode, Available: modes}
}

func (s *session) Models() bridge.ModelState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bridge.ModelState{Current: s.model, Available: models}
}

func (s *session) SetMode(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = id
	return nil
}

func (s *session) SetModel(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.model = id
	return nil
}

func (s *session) Close() error { return nil }

func (s *session) nextCallID() acp.ToolCallId {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return acp.ToolCallId(fmt.Sprintf("mock_call_%d", s.calls))
}

// Prompt plays the turn the prompt's words ask for.
func (s *session) Prompt(ctx context.Context, prompt []acp.ContentBlock) (bridge.TurnResult, error) {
	t := &turn{s: s, ctx: ctx, words: wordsOf(prompt)}
	if t.has("slow") {
		t.delay = 50 * time.Millisecond
	}
	err := t.play(prompt)
	if ctx.Err() != nil || errors.Is(err, errAskCancelled) {
		return bridge.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
	if err != nil {
		return bridge.TurnResult{}, err
	}
	s.ev.Update(acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{Used: t.tokens, Size: 200000}})
	return bridge.TurnResult{StopReason: acp.StopReasonEndTurn, Usage: &acp.Usage{
		InputTokens: t.tokens, OutputTokens: t.tokens, TotalTokens: 2 * t.tokens}}, nil
}

func wordsOf(prompt []acp.ContentBlock) map[string]bool {
	words := make(map[string]bool)
	for _, b := range prompt {
		if b.Text == nil {
			continue
		}
		for _, w := range strings.FieldsFunc(strings.ToLower(b.Text.Text), notLetter) {
			words[w] = true
		}
	}
	return words
}

func notLetter(r rune) bool { return !(r >= 'a' && r <= 'z') }
