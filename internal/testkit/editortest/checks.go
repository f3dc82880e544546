package editortest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/directive"
	"github.com/coder/acp-go-sdk"
)

// The checks in this file are what every agent must pass end to end, its
// real CLI on a fake model (prompts in the vocabulary of package
// directive), written once and run by each agent's tests.

// turnWait bounds how long a check waits for a turn that should end.
const turnWait = 60 * time.Second

func isText(u acp.SessionUpdate) bool { return u.AgentMessageChunk != nil }

// CheckCancelMidTurn checks that a slow turn of session id, cancelled
// once its answer streams, answers cancelled, and that the next turn then
// runs whole.
func CheckCancelMidTurn(t *testing.T, e *Editor, id acp.SessionId) {
	t.Helper()
	done := make(chan acp.PromptResponse, 1)
	go func() {
		resp, err := e.Prompt(id, "slow please")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- resp
	}()
	e.WaitFor(isText)
	if err := e.CS.Cancel(e.Ctx(), acp.CancelNotification{SessionId: id}); err != nil {
		t.Fatal(err)
	}
	select {
	case resp := <-done:
		if resp.StopReason != acp.StopReasonCancelled {
			t.Errorf("stopReason %q, want cancelled", resp.StopReason)
		}
	case <-time.After(turnWait):
		t.Fatal("the cancelled prompt did not return")
	}
	e.Client.Take()
	if resp, err := e.Prompt(id, "hello again"); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt after cancel: %+v, %v", resp, err)
	}
	// The fake model's whole answer, which ends with the prompt (Claude
	// puts a word of the interrupt before it).
	if got := e.Client.Conversation(); !strings.Contains(got, directive.AnswerPrefix) || !strings.HasSuffix(got, "hello again\n") {
		t.Errorf("the turn after the cancel:%s\nwant its whole answer", got)
	}
}

// CheckRestart checks that a session (in cwd) that ran prompt on the
// bridge start makes is replayed at session/load by the next bridge start
// makes (on the same state) as it ran live, and continues there with the
// prompt next.
func CheckRestart(t *testing.T, start func() *Editor, cwd, prompt, next string) {
	t.Helper()
	e := start()
	id := e.NewSession(cwd)
	if _, err := e.Prompt(id, prompt); err != nil {
		t.Fatal(err)
	}
	live := WithPrompt(prompt, e.Client.Take())
	e.Stop()

	e2 := start()
	e2.Load(id, cwd)
	if got := e2.Client.Conversation(); got != live {
		t.Errorf("replay:%s\nwant (live):%s", got, live)
	}
	if _, err := e2.Prompt(id, next); err != nil {
		t.Fatal(err)
	}
}

// CheckServerKilledMidTurn checks that a turn of session id whose agent
// kill kills once its answer streams fails with an error that says
// killed, and that the next prompt starts the agent again and continues.
func CheckServerKilledMidTurn(t *testing.T, e *Editor, id acp.SessionId, killed string, kill func()) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		_, err := e.Prompt(id, "slow please")
		errc <- err
	}()
	e.WaitFor(isText)
	kill()
	select {
	case err := <-errc:
		if err == nil || !strings.Contains(err.Error(), killed) {
			t.Errorf("prompt when the agent died: %v; want an error saying %q", err, killed)
		}
	case <-time.After(turnWait):
		t.Fatal("the prompt did not return after the kill")
	}
	if resp, err := e.Prompt(id, "hello again"); err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Errorf("prompt after the kill: %+v, %v", resp, err)
	}
}

// OwnFork is how CheckOwnFork reads what the model was sent.
type OwnFork struct {
	// Said is what the model's last request for session id's turn said
	// (its body, or its user messages).
	Said func(id acp.SessionId) string
	// Retold is what a fork told the conversation (not the agent's own
	// fork) says.
	Retold string
}

// CheckOwnFork checks that a fork of a session in cwd continues on a fork
// the agent made itself, on a native session of its own: the model sees
// the parent's turn as the agent's own history, not retold, and the
// parent goes on without the fork's turns. It returns the two sessions.
func CheckOwnFork(t *testing.T, e *Editor, cwd string, f OwnFork) (parent, fork acp.SessionId) {
	t.Helper()
	parent = e.NewSession(cwd)
	e.Say(parent, "Remember the word apricot")
	fork = e.Fork(parent, cwd)
	e.Say(fork, "Which word was it")
	natives := e.NativeIDs()
	if natives[parent] == "" || natives[fork] == "" || natives[parent] == natives[fork] {
		t.Fatalf("native sessions %v; want the fork on a native session of its own", natives)
	}
	if said := f.Said(fork); !strings.Contains(said, "Remember the word apricot") || strings.Contains(said, f.Retold) {
		t.Errorf("the fork's model request does not carry the parent's turn as the agent's own history: %s", said)
	}
	e.Say(parent, "Back in the parent")
	if said := f.Said(parent); !strings.Contains(said, "apricot") || strings.Contains(said, "Which word was it") {
		t.Errorf("the parent's request: %s; want its own turns only", said)
	}
	return parent, fork
}

// CheckCommandAsk checks that prompt "run: <command>" in session id,
// whose command makes made in cwd, asks the client once (it answers with
// Client.Option); that the command's tool call ends completed if allowed,
// else failed; that the command ran only if allowed; and that an ask
// answered cancelled ends the turn cancelled.
func CheckCommandAsk(t *testing.T, e *Editor, id acp.SessionId, cwd, command, made string, allowed bool) {
	t.Helper()
	r, err := e.Prompt(id, "run: "+command)
	if err != nil {
		t.Fatal(err)
	}
	if stop := map[bool]acp.StopReason{true: acp.StopReasonCancelled, false: acp.StopReasonEndTurn}[e.Client.Option == "cancelled"]; r.StopReason != stop {
		t.Errorf("stop reason %s, want %s (an ask answered cancelled ends the turn)", r.StopReason, stop)
	}
	want := map[bool]string{true: "completed", false: "failed"}[allowed]
	got := e.Client.Conversation()
	if !strings.Contains(got, " execute "+want+" "+command+"\n") || e.Client.Asked() != 1 {
		t.Errorf("%d asks; conversation:%s", e.Client.Asked(), got)
	}
	_, err = os.Stat(filepath.Join(cwd, made))
	if ran := err == nil; ran != allowed {
		t.Errorf("the command ran: %v, want %v", ran, allowed)
	}
}

// CheckForkReopened checks that a fork reopened before its first prompt,
// in a new bridge (start starts one, on the same state directory each
// time), continues the parent's conversation: its first prompt reaches
// the model with the parent's turn, whether the agent forks its own
// session again or is told the conversation.
func CheckForkReopened(t *testing.T, start func() *Editor, cwd string, f OwnFork) {
	t.Helper()
	e := start()
	parent := e.NewSession(cwd)
	e.Say(parent, "Remember the word apricot")
	fork := e.Fork(parent, cwd)
	e.Stop()
	e2 := start()
	e2.Load(fork, cwd)
	e2.Say(fork, "Which word was it")
	if said := f.Said(fork); !strings.Contains(said, "apricot") {
		t.Errorf("the reopened fork's model request does not carry the parent's turn: %s", said)
	}
}
