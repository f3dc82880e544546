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
//	demo    think, read, edit and plan together (not delegate)
//	setup   say where it works (cwd, additional directories) and the
//	        system prompt it was given, with its mode
//	notice  a warning notice (a retried model request)
//	compact a context compaction with its summary
//	delegate  a subagent (a child session) reads, edits (asking as
//	        "edit" does, as the subagent's) and answers; the session's
//	        "delegate" tool call ends with its answer. With "slow" too, a
//	        cancel of the subagent alone (SessionCaps.CancelChild) stops
//	        it and the turn goes on. With "background" too, the subagent
//	        works in the background: the tool call and the turn end at
//	        once, and the subagent reads, says it watches, and goes on
//	        until it is cancelled alone or the session closes
//
// The answer always echoes the prompt. The mock never touches the disk:
// its read and edit are make-believe.
package mock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
)

// Backend is the mock agent.
type Backend struct{}

var _ agent.Backend = (*Backend)(nil)

// New returns the mock backend.
func New() *Backend { return &Backend{} }

// Info describes the mock: it takes every kind of prompt content,
// additional directories and a system prompt in both modes (which it only
// tells back: see "setup"), and its resume, like Claude's, replays
// nothing.
func (*Backend) Info() agent.Info {
	return agent.Info{
		Name:   "mock",
		Title:  "Mock agent (offline)",
		Prompt: acp.PromptCapabilities{Image: true, Audio: true, EmbeddedContext: true},
		MCP:    acp.McpCapabilities{Http: true, Sse: true},
		Caps:   agent.Caps{Directories: true, SystemPrompt: agent.PromptModes{Append: true, Override: true}},
	}
}

// Open starts a mock session, or "resumes" one by keeping its id.
func (*Backend) Open(_ context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	s := &session{ev: ev, cwd: opts.Cwd, dirs: opts.Directories, prompt: opts.SystemPrompt, id: opts.NativeID,
		cfg: agentkit.NewSettings(modeOption(), modelOption()), nonce: nonce(), subagents: map[string]context.CancelFunc{}}
	s.closed, s.close = context.WithCancel(context.Background())
	if s.id == "" {
		s.id = fmt.Sprintf("mock-%d", time.Now().UnixNano())
	}
	s.cfg.Restore(opts.Config)
	return s, nil
}

// Close does nothing: the mock shares nothing between sessions.
func (*Backend) Close() error { return nil }

// The mock's mode applies at once; its model, like Codex's, with the next
// turn.
func modeOption() agent.ConfigOption {
	return agent.ConfigOption{ID: agent.ConfigMode, Name: "Mode", Category: acp.SessionConfigOptionCategoryMode, Current: "default",
		Choices: []agent.ConfigValue{
			{Value: "default", Name: "Default", Description: "Ask before every edit"},
			{Value: "acceptEdits", Name: "Accept edits", Description: "Edit without asking"},
		}}
}

func modelOption() agent.ConfigOption {
	return agent.ConfigOption{ID: agent.ConfigModel, Name: "Model", Category: acp.SessionConfigOptionCategoryModel, Current: "mock-small",
		NextTurn: true, Choices: []agent.ConfigValue{
			{Value: "mock-small", Name: "Mock Small", Description: "Streams in words"},
			{Value: "mock-large", Name: "Mock Large", Description: "Streams in words, and says so"},
		}}
}

// session is one mock conversation.
type session struct {
	ev     agent.Events
	cwd    string
	dirs   []string            // additional directories
	prompt *agent.SystemPrompt // nil: none
	id     string
	cfg    *agentkit.Settings

	// bg is the subagents working in the background, which Close stops
	// and waits for; closed ends them.
	bg     sync.WaitGroup
	closed context.Context
	close  context.CancelFunc

	mu          sync.Mutex                    // protects the fields below
	alwaysAllow bool                          // the user chose "always allow" for edits
	subagents   map[string]context.CancelFunc // the subagents at work, by id
	calls       int                           // tool calls and compactions made, for their ids
	nonce       string                        // makes this native session's tool call ids its own
}

// Caps: a subagent can be stopped alone; the bridge's transcript is its
// history.
func (s *session) Caps() agent.SessionCaps { return agent.SessionCaps{CancelChild: s.cancelSubagent} }

// cancelSubagent stops subagent id's work; one not at work is left alone.
func (s *session) cancelSubagent(_ context.Context, id string) error {
	s.mu.Lock()
	stop := s.subagents[id]
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
	return nil
}

func (s *session) NativeID() string { return s.id }

func (s *session) Config() []agent.ConfigOption { return s.cfg.Options() }

func (s *session) SetConfig(_ context.Context, id, value string) error {
	s.cfg.Set(id, value)
	return nil
}

// Close stops the subagents at work in the background, and waits for
// them.
func (s *session) Close() error {
	s.close()
	s.bg.Wait()
	return nil
}

func (s *session) nextCallID() acp.ToolCallId {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return acp.ToolCallId(fmt.Sprintf("mock_%s_%d", s.nonce, s.calls))
}

// nextCompactionID names a compaction as nextCallID a tool call.
func (s *session) nextCompactionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return fmt.Sprintf("compaction_%s_%d", s.nonce, s.calls)
}

// nonce is a short random word: a reopened mock session numbers its tool
// calls afresh, and its ids must not repeat the earlier ones.
func nonce() string {
	b := make([]byte, 4)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Prompt plays the turn the prompt's words ask for.
func (s *session) Prompt(ctx context.Context, in agent.Turn) (agent.TurnResult, error) {
	s.cfg.Restore(in.Config)
	prompt := in.Prompt
	t := &turn{s: s, ev: s.ev, ctx: ctx, words: wordsOf(prompt)}
	if t.has("slow") {
		t.delay = 50 * time.Millisecond
	}
	err := t.play(prompt)
	if ctx.Err() != nil || errors.Is(err, errAskCancelled) {
		return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
	}
	if err != nil {
		return agent.TurnResult{}, err
	}
	s.ev.Update(acp.SessionUpdate{UsageUpdate: &acp.SessionUsageUpdate{Used: t.tokens, Size: 200000}})
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn, Usage: &acp.Usage{
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
