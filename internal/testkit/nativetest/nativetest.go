// Package nativetest helps test a backend's sessions through the bridge's
// Backend and Native interfaces, against a fake agent CLI that is the test
// binary itself, re-executed: a recording agent.Events, the prompt
// helpers, the fake's installation (Fake) and the set-up that keeps its
// own data races seen; and the checks every agent's sessions must pass,
// with the suite of a backend on one shared server (RunServerSuite), run
// per agent.
package nativetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/coder/acp-go-sdk"
)

// WaitGuard bounds every wait; it is only there so that a broken test
// fails instead of hanging.
const WaitGuard = 2 * time.Minute

// TestBinary is this test binary, which plays the agent's CLI.
func TestBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return exe
}

// RaceEnv is the GORACE setting for a fake CLI whose files live in dir:
// under -race a process sleeps a second before it exits by default, and
// the fake's own races must not go unseen, so they are written to dir and
// reported as test failures once the test (and its backends) are done.
func RaceEnv(t *testing.T, dir, what string) string {
	t.Cleanup(func() {
		reports, _ := filepath.Glob(filepath.Join(dir, "race.*"))
		for _, r := range reports {
			b, _ := os.ReadFile(r)
			t.Errorf("%s raced:\n%s", what, b)
		}
	})
	return "GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0 log_path="+filepath.Join(dir, "race"))
}

// Poll waits until ok, checking every few milliseconds.
func Poll(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitGuard)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// OpenSession opens a session (in a fresh directory unless opts says);
// the test closes it.
func OpenSession(t *testing.T, b agent.Backend, opts agent.OpenOptions, ev agent.Events) agent.Native {
	t.Helper()
	if opts.Cwd == "" {
		opts.Cwd = t.TempDir()
	}
	s, err := b.Open(context.Background(), opts, ev)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TextTurn is a turn of one text block.
func TextTurn(text string, cfg map[string]string) agent.Turn {
	return agent.Turn{Prompt: []acp.ContentBlock{acp.TextBlock(text)}, Config: cfg}
}

// RunPrompt runs one turn, within WaitGuard.
func RunPrompt(t *testing.T, s agent.Native, text string, cfg map[string]string) (agent.TurnResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), WaitGuard)
	defer cancel()
	res, err := s.Prompt(ctx, TextTurn(text, cfg))
	if ctx.Err() != nil {
		t.Fatalf("prompt %q did not end", text)
	}
	return res, err
}

// MustPrompt runs a turn that must end normally.
func MustPrompt(t *testing.T, s agent.Native, text string, cfg map[string]string) agent.TurnResult {
	t.Helper()
	res, err := RunPrompt(t, s, text, cfg)
	if err != nil || res.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt %q: %+v, %v", text, res, err)
	}
	return res
}

// Ask is one permission ask a Recorder got.
type Ask struct {
	Call    acp.ToolCallUpdate
	Options []string
	After   int // how many updates (since the last Take) came before it
}

// Recorder is a agent.Events that records what a session reports, and
// answers permission asks with its choice: an option id, "" to cancel the
// ask, or "wait" to wait for the turn to be cancelled. Answer, if set
// before the session opens, answers instead.
type Recorder struct {
	choice string
	Answer func(ctx context.Context, call acp.ToolCallUpdate, options []acp.PermissionOption) (acp.RequestPermissionOutcome, error)

	mu      sync.Mutex
	updates []acp.SessionUpdate
	raws    []json.RawMessage
	asks    []Ask
	changed int
	poke    chan struct{}
}

// NewRecorder returns a Recorder answering asks with choice.
func NewRecorder(choice string) *Recorder {
	return &Recorder{choice: choice, poke: make(chan struct{}, 1)}
}

func (e *Recorder) signal() {
	select {
	case e.poke <- struct{}{}:
	default:
	}
}

// Update records an update.
func (e *Recorder) Update(u acp.SessionUpdate) {
	e.mu.Lock()
	e.updates = append(e.updates, u)
	e.mu.Unlock()
	e.signal()
}

// RequestPermission records the ask and answers it.
func (e *Recorder) RequestPermission(ctx context.Context, call acp.ToolCallUpdate, options []acp.PermissionOption) (acp.RequestPermissionOutcome, error) {
	var ids []string
	for _, o := range options {
		ids = append(ids, string(o.OptionId))
	}
	e.mu.Lock()
	e.asks = append(e.asks, Ask{call, ids, len(e.updates)})
	e.mu.Unlock()
	e.signal()
	if e.Answer != nil {
		return e.Answer(ctx, call, options)
	}
	switch e.choice {
	case "":
		return acp.NewRequestPermissionOutcomeCancelled(), nil
	case "wait":
		<-ctx.Done()
		return acp.RequestPermissionOutcome{}, ctx.Err()
	}
	if !slices.Contains(ids, e.choice) {
		return acp.RequestPermissionOutcome{}, errors.New("no option " + e.choice)
	}
	return acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(e.choice)), nil
}

// AskQuestion asks as a permission ask, as the bridge does a client that
// takes no forms: Answer or the choice answer it.
func (e *Recorder) AskQuestion(ctx context.Context, call acp.ToolCallUpdate, q agent.Question) (agent.QuestionAnswer, error) {
	return agent.AskAsPermission(ctx, e.RequestPermission, call, q)
}

// UpdateRaw keeps an update of a kind ACP's types here don't know.
func (e *Recorder) UpdateRaw(u json.RawMessage) {
	e.mu.Lock()
	e.raws = append(e.raws, u)
	e.mu.Unlock()
	e.signal()
}

// Raws returns the updates UpdateRaw kept.
func (e *Recorder) Raws() []json.RawMessage {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.raws)
}

// ConfigChanged counts the call.
func (e *Recorder) ConfigChanged() {
	e.mu.Lock()
	e.changed++
	e.mu.Unlock()
}

// Child records a child session's traffic with the session's own.
func (e *Recorder) Child(string) agent.Events { return e }

// Take returns the updates so far and forgets them.
func (e *Recorder) Take() []acp.SessionUpdate {
	e.mu.Lock()
	defer e.mu.Unlock()
	us := e.updates
	e.updates = nil
	return us
}

// Snapshot returns what was recorded so far.
func (e *Recorder) Snapshot() (updates []acp.SessionUpdate, asks []Ask, changed int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.updates), slices.Clone(e.asks), e.changed
}

// Conversation renders the updates so far.
func (e *Recorder) Conversation() string {
	us, _, _ := e.Snapshot()
	return acptest.Conversation(us)
}

// JSON is the updates so far, one JSON object a line.
func (e *Recorder) JSON() string {
	us, _, _ := e.Snapshot()
	var b strings.Builder
	for _, u := range us {
		j, _ := json.Marshal(u)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

// WaitFor waits for an update (or ask) that makes ok true.
func (e *Recorder) WaitFor(t *testing.T, what string, ok func(us []acp.SessionUpdate, asks []Ask) bool) {
	t.Helper()
	timeout := time.After(WaitGuard)
	for {
		us, asks, _ := e.Snapshot()
		if ok(us, asks) {
			return
		}
		select {
		case <-e.poke:
		case <-timeout:
			t.Fatalf("waited in vain for %s", what)
		}
	}
}

// HasAgentText reports an agent message among the updates.
func HasAgentText(us []acp.SessionUpdate, _ []Ask) bool {
	return slices.ContainsFunc(us, func(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil })
}

// FindOption returns the option with id.
func FindOption(opts []agent.ConfigOption, id string) (agent.ConfigOption, bool) {
	i := slices.IndexFunc(opts, func(o agent.ConfigOption) bool { return o.ID == id })
	if i < 0 {
		return agent.ConfigOption{}, false
	}
	return opts[i], true
}

// ChoiceValues lists an option's values.
func ChoiceValues(o agent.ConfigOption) []string {
	var out []string
	for _, c := range o.Choices {
		out = append(out, c.Value)
	}
	return out
}

// ReadLog reads a fake's JSON-lines log so far: its complete lines (the
// fake may be writing one), decoded, and each line as it is.
func ReadLog[T any](t *testing.T, path string) (recs []T, lines []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	b = b[:bytes.LastIndexByte(b, '\n')+1]
	for _, l := range strings.Split(string(b), "\n") {
		if l == "" {
			continue
		}
		var rec T
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		recs, lines = append(recs, rec), append(lines, l)
	}
	return recs, lines
}
