package nativetest

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/coder/acp-go-sdk"
)

// The checks in this file are what every agent's sessions must pass,
// written once and run by each agent's tests on its fake CLI.

// Checked is a backend as the checks take it: one that can say whether
// its agent runs here, warm up, and close.
type Checked interface {
	agent.Backend
	Check() error
	Warm(cwd string)
	Close() error
}

// Options is what a new session's options must be, for
// CheckOptionsAtOpen.
type Options struct {
	Agent  string // the backend's name
	IDs    string // the options' ids, in order, comma-separated
	Mode   string // the current values
	Model  string
	Effort string
	// The choices, comma-separated; "" is not checked.
	Modes, Models, Efforts string
	// Other is a model that SetConfig must refuse: every option is
	// NextTurn, taken with the next turn.
	Other string
}

// CheckOptionsAtOpen checks that s, just opened on b, has every option
// with its choices at once, all of them NextTurn.
func CheckOptionsAtOpen(t *testing.T, b Checked, s agent.Native, want Options) {
	t.Helper()
	if b.Info().Name != want.Agent || b.Check() != nil {
		t.Errorf("Info %+v, Check %v", b.Info(), b.Check())
	}
	cfg := s.Config()
	var ids []string
	for _, o := range cfg {
		ids = append(ids, o.ID)
		if !o.NextTurn {
			t.Errorf("option %s is not NextTurn", o.ID)
		}
	}
	if strings.Join(ids, ",") != want.IDs {
		t.Fatalf("options %v, want %s", ids, want.IDs)
	}
	mode, _ := FindOption(cfg, agent.ConfigMode)
	model, _ := FindOption(cfg, agent.ConfigModel)
	effort, _ := FindOption(cfg, agent.ConfigEffort)
	if mode.Current != want.Mode || model.Current != want.Model || effort.Current != want.Effort {
		t.Errorf("current mode %q model %q effort %q", mode.Current, model.Current, effort.Current)
	}
	for _, c := range []struct {
		what string
		o    agent.ConfigOption
		want string
	}{{"modes", mode, want.Modes}, {"models", model, want.Models}, {"efforts", effort, want.Efforts}} {
		if got := strings.Join(ChoiceValues(c.o), ","); c.want != "" && got != c.want {
			t.Errorf("%s %s, want %s", c.what, got, c.want)
		}
	}
	if err := s.SetConfig(context.Background(), agent.ConfigModel, want.Other); !errors.Is(err, agent.ErrInvalidParams) {
		t.Errorf("SetConfig: %v; every %s option is NextTurn", err, want.Agent)
	}
}

// CheckStreamedAnswer checks a text turn's updates us: the conversation
// they make, the message streamed in pieces, and a usage update with
// the context window's use and size.
func CheckStreamedAnswer(t *testing.T, us []acp.SessionUpdate, conversation string, used, size int) {
	t.Helper()
	if got := acptest.Conversation(us); got != conversation {
		t.Errorf("conversation %q, want %q", got, conversation)
	}
	chunks := 0
	var usage *acp.SessionUsageUpdate
	for _, u := range us {
		if u.AgentMessageChunk != nil {
			chunks++
		}
		if u.UsageUpdate != nil {
			usage = u.UsageUpdate
		}
	}
	if chunks < 2 {
		t.Errorf("%d chunks; want the message streamed by its deltas", chunks)
	}
	if usage == nil || usage.Used != used || usage.Size != size {
		t.Errorf("usage update %+v, want %d of %d used", usage, used, size)
	}
}

// CheckPromptRefusals checks that s refuses content its agent can't take
// (audio) with ErrInvalidParams, and answers a prompt cancelled before it
// started cancelled.
func CheckPromptRefusals(t *testing.T, s agent.Native) {
	t.Helper()
	_, err := s.Prompt(context.Background(), agent.Turn{Prompt: []acp.ContentBlock{{Audio: &acp.ContentBlockAudio{Data: "AA==", MimeType: "audio/wav"}}}})
	if !errors.Is(err, agent.ErrInvalidParams) {
		t.Errorf("audio: %v, want ErrInvalidParams", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := s.Prompt(ctx, TextTurn("hello", nil)); err != nil || res.StopReason != acp.StopReasonCancelled {
		t.Errorf("cancelled before it started: %+v, %v", res, err)
	}
}

// CheckMissingExecutable checks that an agent whose executable is not
// there can't run: Check says so, Warm does nothing, and Open is
// ErrAgentUnavailable, whether the path came from the options (newBackend
// gets it) or from the environment variable env (newBackend gets "").
func CheckMissingExecutable(t *testing.T, name, env string, newBackend func(path string) Checked) {
	missing := filepath.Join(t.TempDir(), name)
	b := newBackend(missing)
	defer b.Close()
	b.Warm("")
	if b.Check() == nil {
		t.Errorf("Check found %s", missing)
	}
	if _, err := b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir()}, NewRecorder("")); !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("Open: %v, want ErrAgentUnavailable", err)
	}
	t.Setenv(env, missing)
	b = newBackend("")
	defer b.Close()
	if _, err := b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir()}, NewRecorder("")); !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("Open with $%s missing: %v, want ErrAgentUnavailable", env, err)
	}
}

// CheckClosedBackendLeavesNoServer checks that Open after Close fails and
// leaves no server running: the fake's log counts as many exits as starts
// (count counts its records of a direction).
func CheckClosedBackendLeavesNoServer(t *testing.T, b Checked, count func(dir string) int) {
	t.Helper()
	b.Close()
	if _, err := b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir()}, NewRecorder("")); err == nil {
		t.Errorf("Open after Close succeeded")
	}
	if started, exited := count("start"), count("exit"); started != exited {
		t.Errorf("%d servers started after Close, %d stopped", started, exited)
	}
}

// CancelTurn runs a turn of prompt on s, cancels it once what ev recorded
// satisfies until (what says what that is), and checks that the turn ends
// cancelled within WaitGuard.
func CancelTurn(t *testing.T, s agent.Native, ev *Recorder, prompt, what string, until func([]acp.SessionUpdate, []Ask) bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		res agent.TurnResult
		err error
	}
	done := make(chan result, 1)
	go func() {
		res, err := s.Prompt(ctx, TextTurn(prompt, nil))
		done <- result{res, err}
	}()
	ev.WaitFor(t, what, until)
	cancel()
	select {
	case r := <-done:
		if r.err != nil || r.res.StopReason != acp.StopReasonCancelled {
			t.Fatalf("cancelled prompt: %+v, %v", r.res, r.err)
		}
	case <-time.After(WaitGuard):
		t.Fatal("the cancelled prompt did not return")
	}
}

// HasAsk reports a permission ask.
func HasAsk(_ []acp.SessionUpdate, asks []Ask) bool { return len(asks) > 0 }

// CheckNextTurn checks that the next turn of s (after a cancel, say), of
// the prompt "hello again", ends normally and shows whole: what ev
// records of it renders as want.
func CheckNextTurn(t *testing.T, s agent.Native, ev *Recorder, want string) {
	t.Helper()
	ev.Take()
	MustPrompt(t, s, "hello again", nil)
	if got := ev.Conversation(); got != want {
		t.Errorf("the next turn %q; want %q", got, want)
	}
}

// CheckCrashMidTurn checks that an agent that dies mid-turn (the prompt
// "crash now": the fake exits with status 3, saying stderr) fails the turn
// with its exit, its stderr and word that the next prompt restarts it;
// and that the next prompt does, on the same native session. It returns
// the conversations of the crashed turn and of the next one.
func CheckCrashMidTurn(t *testing.T, s agent.Native, ev *Recorder, stderr string) (crashed, next string) {
	t.Helper()
	MustPrompt(t, s, "hello there", nil)
	id := s.NativeID()
	ev.Take()
	_, err := RunPrompt(t, s, "crash now", nil)
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), stderr) ||
		!strings.Contains(err.Error(), "the next prompt restarts it") {
		t.Fatalf("err %v; want the exit with its stderr", err)
	}
	crashed = acptest.Conversation(ev.Take())
	MustPrompt(t, s, "hello again", nil)
	if s.NativeID() != id {
		t.Errorf("native session %s, want %s still", s.NativeID(), id)
	}
	return crashed, ev.Conversation()
}
