package nativetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"

	"github.com/acpbridge/acpbridge/internal/testkit/testproc"
	"github.com/coder/acp-go-sdk"
)

// ServerSuite is an agent whose backend drives one native server process
// that its sessions share (codex's app-server, opencode serve), played by
// a fake installation F, for RunServerSuite: how to make the fake and a
// backend on it, and what the fake's scripted model answers. What the
// agent sends its server is its own: the hooks check it. Fake, Backend,
// Ready, Warmed, Inputs and Unforkable are needed; another func left nil
// checks nothing.
//
// The fake's model answers a prompt with Reply and the prompt; "crash
// now" crashes the server mid-turn (see CheckCrashMidTurn).
type ServerSuite[F Installed] struct {
	Agent  string // the backend's name
	EnvVar string // the variable that names its executable
	// Fake makes a fake installation, with the further switches env.
	Fake func(t *testing.T, env ...string) F
	// Backend makes a backend on the executable at path ("": EnvVar's),
	// run with the further environment env.
	Backend func(path string, env []string) Checked
	// Ready waits until a session's native session exists, and returns
	// its id.
	Ready func(t *testing.T, s agent.Native) string
	Allow string // the option of an ask that allows the call once
	// Reply is what the fake's model says before the prompt it echoes.
	Reply string
	// ExitEnv is the fake's switch that has it exit at start, saying the
	// variable's value on stderr.
	ExitEnv string

	// openHasEveryOptionAtOnce: a new session's options; the server's
	// args; Opened checks what the first Open sent.
	Options Options
	Args    string
	Opened  Hook[F]

	// textTurn: "hello there" is answered with a usage update of Used of
	// Size; Answered checks the turn's result (res) and what it sent.
	Used, Size int
	Answered   func(t *testing.T, r Run[F], res agent.TurnResult)

	// cancelWhileAsking: AskPrompt's turn asks the user; Cancelled checks
	// what the server was told of the cancel.
	AskPrompt string
	Cancelled Hook[F]

	// failedTurn: FailPrompt's turn fails with the error FailError.
	FailPrompt, FailError string

	// authFailure: AuthPrompt's turn fails as the provider refuses the
	// key, ErrAuthRequired with each of AuthError (the agent's message and
	// how to log in).
	AuthPrompt string
	AuthError  []string

	// serverCrashMidTurn: the crashed server says CrashStderr; Restarted
	// checks what the restarted one was sent, and the turn after the
	// crash (next, its conversation).
	CrashStderr string
	Restarted   func(t *testing.T, r Run[F], next string)

	// mcpServers: the transports ("stdio", "http", "sse") whose MCP
	// servers Open refuses; MCPSent checks what the server was sent of
	// the rest (MCPServers' servers).
	MCPRefused []string
	MCPSent    Hook[F]

	// nextTurnOptions: the turns run in order, after each of which
	// NextTurned (if set) waits as the agent needs; NextSent checks what
	// they sent; NextOptions are the options' values then.
	NextTurns   []Prompt
	NextTurned  func(t *testing.T, r Run[F], i int)
	NextSent    Hook[F]
	NextOptions map[string]string

	// warm: Warmed waits until the warm-up read the catalog; Catalogued
	// checks that the session did not read it again.
	Warmed     func(t *testing.T, f F)
	Catalogued Hook[F]

	// backendCloseStopsTheServer: CloseEnv are the fake's switches;
	// Stopped checks how the server was stopped.
	CloseEnv []string
	Stopped  Hook[F]

	// twoSessionsAtOnce: two sessions (in two directories) run a turn
	// each at once, of Together with "one" and "two" for %s: each sees
	// Said of its word, and not Unsaid of the other's; TogetherRan checks
	// what the server was asked.
	Together, Said, Unsaid string
	TogetherRan            func(t *testing.T, f F, runs []Run[F])

	// ownFork and forkTold: Inputs returns what a session's turns sent as
	// their prompts, in order; ForkNotice is what a session says when the
	// agent could not fork its parent.
	Inputs     func(t *testing.T, r Run[F]) []string
	ForkNotice string
	// ownFork: a parent that ran ParentPrompt is forked by the agent, in
	// another directory if ForkMoves; Forked checks how, and ForkRan what
	// the fork's first turn, ForkPrompt, did.
	ParentPrompt, ForkPrompt string
	ForkMoves                bool
	Forked                   func(t *testing.T, fork Run[F], parent agent.Native)
	ForkRan                  Hook[F]
	// forkTold: Unforkable makes (on b) the parents, by name, that the
	// agent can't fork; ForkTold checks each fork's turns, ForksTold all
	// that the fake was asked.
	Unforkable func(t *testing.T, b Checked) map[string]string
	ForkTold   Hook[F]
	ForksTold  func(t *testing.T, f F)

	// directoriesAndSystemPrompt: a session is opened with an additional
	// directory and each system prompt in turn, and runs a turn (with the
	// options SetUpConfig); SetUp checks what its Open sent, SetUpTurn
	// what its turn sent.
	SystemPrompts []agent.SystemPrompt
	SetUpConfig   map[string]string
	SetUp         Hook[F]
	SetUpTurn     Hook[F]
}

// Prompt is one turn's prompt and the options picked with it.
type Prompt struct {
	Text   string
	Config map[string]string
}

// Run is a suite test's fake, its backend, and the session the test
// opened on it, with what the session's events recorded and the options
// it was opened with (a Cwd always), for the agent's hooks.
type Run[F any] struct {
	Fake    F
	Backend Checked
	Session agent.Native
	Events  *Recorder
	Opts    agent.OpenOptions
}

// Hook is an agent's own check of a suite test's run.
type Hook[F any] func(t *testing.T, r Run[F])

func (h Hook[F]) check(t *testing.T, r Run[F]) {
	t.Helper()
	if h != nil {
		h(t, r)
	}
}

// MCPServers are the MCP servers mcpServers opens a session with, one of
// each transport (mcpTransports).
var MCPServers = []acp.McpServer{
	{Stdio: &acp.McpServerStdio{Name: "tools", Command: "/usr/bin/tool", Args: []string{"--stdio"}, Env: []acp.EnvVariable{{Name: "TOKEN", Value: "x"}}}},
	{Http: &acp.McpServerHttpInline{Name: "docs", Url: "http://127.0.0.1:9/mcp", Headers: []acp.HttpHeader{{Name: "Authorization", Value: "Bearer y"}}}},
	{Sse: &acp.McpServerSseInline{Name: "old", Url: "http://127.0.0.1:9/sse", Headers: []acp.HttpHeader{}}},
}

// mcpTransports are MCPServers' transports, in order.
var mcpTransports = []string{"stdio", "http", "sse"}

// RunServerSuite runs the suite on c, one subtest a check: each runs in
// parallel with the others but missingExecutable, which sets the
// environment. The test that calls it must not be parallel.
func RunServerSuite[F Installed](t *testing.T, c ServerSuite[F]) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"openHasEveryOptionAtOnce", c.openHasEveryOptionAtOnce},
		{"textTurn", c.textTurn},
		{"cancelWhileAsking", c.cancelWhileAsking},
		{"failedTurn", c.failedTurn},
		{"authFailure", c.authFailure},
		{"serverCrashMidTurn", c.serverCrashMidTurn},
		{"serverDoesNotStart", c.serverDoesNotStart},
		{"missingExecutable", c.missingExecutable},
		{"mcpServers", c.mcpServers},
		{"nextTurnOptions", c.nextTurnOptions},
		{"warm", c.warm},
		{"backendCloseStopsTheServer", c.backendCloseStopsTheServer},
		{"closedBackendLeavesNoServer", c.closedBackendLeavesNoServer},
		{"twoSessionsAtOnce", c.twoSessionsAtOnce},
		{"ownFork", c.ownFork},
		{"forkTold", c.forkTold},
		{"directoriesAndSystemPrompt", c.directoriesAndSystemPrompt},
	} {
		t.Run(tc.name, tc.run)
	}
}

// fake makes a fake installation, with the further switches env, and a
// backend on it, which the test closes.
func (c ServerSuite[F]) fake(t *testing.T, env ...string) (F, Checked) {
	t.Helper()
	f := c.Fake(t, env...)
	b := c.Backend(TestBinary(), f.Installation().Env)
	t.Cleanup(func() { b.Close() })
	return f, b
}

// open opens a session in a new directory (unless opts names one) on a
// new fake's backend, with the fake's switches env; it answers asks with
// choice.
func (c ServerSuite[F]) open(t *testing.T, opts agent.OpenOptions, choice string, env ...string) Run[F] {
	t.Helper()
	f, b := c.fake(t, env...)
	return c.openOn(t, f, b, opts, choice)
}

// openOn is open on the fake f's backend b.
func (c ServerSuite[F]) openOn(t *testing.T, f F, b Checked, opts agent.OpenOptions, choice string) Run[F] {
	t.Helper()
	if opts.Cwd == "" {
		opts.Cwd = t.TempDir()
	}
	ev := NewRecorder(choice)
	return Run[F]{Fake: f, Backend: b, Session: OpenSession(t, b, opts, ev), Events: ev, Opts: opts}
}

// answer is the conversation of the fake model's answer to prompt.
func (c ServerSuite[F]) answer(prompt string) string {
	return "\nagent: " + c.Reply + prompt + "\n"
}

// openHasEveryOptionAtOnce: the first Open starts the server and reads
// the catalog before it returns, so the session's options are complete in
// the session/new response.
func (c ServerSuite[F]) openHasEveryOptionAtOnce(t *testing.T) {
	t.Parallel()
	r := c.open(t, agent.OpenOptions{}, c.Allow)
	CheckOptionsAtOpen(t, r.Backend, r.Session, c.Options)
	if c.Ready(t, r.Session) == "" {
		t.Fatal("no native session once it started")
	}
	if recs := r.Fake.Installation().Records(t); len(recs) == 0 || recs[0].Dir != "start" || strings.Join(recs[0].Msg.Args, " ") != c.Args {
		t.Fatalf("the server was started as %v (its log's first record); want %s", recs[:min(len(recs), 1)], c.Args)
	}
	c.Opened.check(t, r)
}

// textTurn streams a message by its deltas, with the usage; the next
// turn shows its own answer alone.
func (c ServerSuite[F]) textTurn(t *testing.T) {
	t.Parallel()
	r := c.open(t, agent.OpenOptions{}, c.Allow)
	res := MustPrompt(t, r.Session, "hello there", nil)
	CheckStreamedAnswer(t, r.Events.Take(), c.answer("hello there"), c.Used, c.Size)
	if c.Answered != nil {
		c.Answered(t, r, res)
	}
	MustPrompt(t, r.Session, "hello again", nil)
	if got := r.Events.Conversation(); got != c.answer("hello again") {
		t.Errorf("second turn %q", got)
	}
}

// cancelWhileAsking: a turn cancelled while the user is asked ends
// cancelled, and the session takes the next prompt.
func (c ServerSuite[F]) cancelWhileAsking(t *testing.T) {
	t.Parallel()
	r := c.open(t, agent.OpenOptions{}, "wait")
	CancelTurn(t, r.Session, r.Events, c.AskPrompt, "the ask", HasAsk)
	c.Cancelled.check(t, r)
	CheckNextTurn(t, r.Session, r.Events, c.answer("hello again"))
}

// failedTurn: a failed turn is an error with the agent's message, not an
// auth error; the next turn is whole.
func (c ServerSuite[F]) failedTurn(t *testing.T) {
	t.Parallel()
	r := c.open(t, agent.OpenOptions{}, c.Allow)
	_, err := RunPrompt(t, r.Session, c.FailPrompt, nil)
	if err == nil || err.Error() != c.FailError {
		t.Fatalf("err %v; want %s", err, c.FailError)
	}
	if errors.Is(err, agent.ErrAuthRequired) {
		t.Errorf("%v is not an auth error", err)
	}
	CheckNextTurn(t, r.Session, r.Events, c.answer("hello again"))
}

// authFailure: a provider that refuses the key asks the user to log in.
func (c ServerSuite[F]) authFailure(t *testing.T) {
	t.Parallel()
	r := c.open(t, agent.OpenOptions{}, c.Allow)
	_, err := RunPrompt(t, r.Session, c.AuthPrompt, nil)
	if !errors.Is(err, agent.ErrAuthRequired) || !containsAll(err, c.AuthError) {
		t.Fatalf("err %v; want ErrAuthRequired with %s's message", err, c.Agent)
	}
}

// containsAll reports an error that says each of want.
func containsAll(err error, want []string) bool {
	return err != nil && !slices.ContainsFunc(want, func(w string) bool { return !strings.Contains(err.Error(), w) })
}

// serverCrashMidTurn: the turn ends with the exit and its stderr; the
// next prompt restarts the server and continues the native session.
func (c ServerSuite[F]) serverCrashMidTurn(t *testing.T) {
	t.Parallel()
	r := c.open(t, agent.OpenOptions{}, c.Allow)
	_, next := CheckCrashMidTurn(t, r.Session, r.Events, c.CrashStderr)
	if !strings.Contains(next, c.Reply+"hello again\n") {
		t.Errorf("after the restart:%s", next)
	}
	if n := r.Fake.Installation().Count(t, "start"); n != 2 {
		t.Errorf("%d servers started, want 2", n)
	}
	if c.Restarted != nil {
		c.Restarted(t, r, next)
	}
}

// serverDoesNotStart: a server that exits at start fails Open with its
// stderr.
func (c ServerSuite[F]) serverDoesNotStart(t *testing.T) {
	t.Parallel()
	stderr := "fake " + c.Agent + ": the config is broken"
	_, b := c.fake(t, c.ExitEnv+"="+stderr)
	_, err := b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir()}, NewRecorder(c.Allow))
	if err == nil || !strings.Contains(err.Error(), stderr) || !strings.Contains(err.Error(), "did not start") {
		t.Fatalf("Open: %v; want the server's exit and stderr", err)
	}
}

// missingExecutable: no executable is ErrAgentUnavailable, at Open; Warm
// does nothing.
func (c ServerSuite[F]) missingExecutable(t *testing.T) {
	CheckMissingExecutable(t, c.Agent, c.EnvVar, func(path string) Checked { return c.Backend(path, nil) })
}

// mcpServers: the client's MCP servers of a transport the agent takes go
// to the server with the session; Open refuses the others, before it
// starts the server.
func (c ServerSuite[F]) mcpServers(t *testing.T) {
	t.Parallel()
	f, b := c.fake(t)
	var taken []acp.McpServer
	for i, m := range MCPServers {
		if !slices.Contains(c.MCPRefused, mcpTransports[i]) {
			taken = append(taken, m)
			continue
		}
		s, err := b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir(), MCPServers: []acp.McpServer{m}}, NewRecorder(c.Allow))
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, agent.ErrInvalidParams) {
			t.Errorf("%s: %v, want ErrInvalidParams", mcpTransports[i], err)
		}
	}
	if n := f.Installation().Count(t, "start"); n != 0 {
		t.Errorf("a refused Open started the server")
	}
	r := c.openOn(t, f, b, agent.OpenOptions{MCPServers: taken}, c.Allow)
	c.Ready(t, r.Session)
	c.MCPSent.check(t, r)
}

// nextTurnOptions: options picked with a turn go with it to the server,
// and are the session's from then on; the agent reporting back what it
// was sent changes nothing.
func (c ServerSuite[F]) nextTurnOptions(t *testing.T) {
	t.Parallel()
	r := c.open(t, agent.OpenOptions{}, c.Allow)
	for i, p := range c.NextTurns {
		MustPrompt(t, r.Session, p.Text, p.Config)
		if c.NextTurned != nil {
			c.NextTurned(t, r, i)
		}
	}
	c.NextSent.check(t, r)
	opts := r.Session.Config()
	for id, want := range c.NextOptions {
		if o, _ := FindOption(opts, id); o.Current != want {
			t.Errorf("%s = %q, want %q", id, o.Current, want)
		}
	}
	if _, _, changed := r.Events.Snapshot(); changed != 0 {
		t.Errorf("%d ConfigChanged; %s reported what the bridge sent", changed, c.Agent)
	}
}

// warm starts the server and reads the catalog before any session; Open
// then finds it, on that server.
func (c ServerSuite[F]) warm(t *testing.T) {
	t.Parallel()
	f, b := c.fake(t)
	b.Warm("")
	c.Warmed(t, f)
	r := c.openOn(t, f, b, agent.OpenOptions{}, c.Allow)
	if model, ok := FindOption(r.Session.Config(), agent.ConfigModel); !ok || model.Current != c.Options.Model {
		t.Errorf("model option %+v; want %s", model, c.Options.Model)
	}
	MustPrompt(t, r.Session, "hello", nil)
	if n := f.Installation().Count(t, "start"); n != 1 {
		t.Errorf("%d servers; want the warmed one", n)
	}
	c.Catalogued.check(t, r)
}

// backendCloseStopsTheServer: Close ends the server and leaves no
// process; a closed backend starts none.
func (c ServerSuite[F]) backendCloseStopsTheServer(t *testing.T) {
	t.Parallel()
	r := c.open(t, agent.OpenOptions{}, c.Allow, c.CloseEnv...)
	MustPrompt(t, r.Session, "hello", nil)
	r.Session.Close()
	r.Backend.Close()
	fake := r.Fake.Installation()
	if n := fake.Count(t, "exit"); n != 1 {
		t.Fatalf("the server exited %d times by Close, want 1", n)
	}
	c.Stopped.check(t, r)
	for _, rec := range fake.Records(t) {
		if rec.Dir == "start" && testproc.Alive(rec.Msg.Pid) {
			t.Errorf("the server's process %d is still there", rec.Msg.Pid)
		}
	}
	r.Backend.Close()
	checkClosed(t, r.Backend)
	if n := fake.Count(t, "start"); n != 1 {
		t.Errorf("%d servers started", n)
	}
}

// checkClosed checks that a closed backend's Open fails as unavailable,
// or (if it knows its catalog) returns a session whose prompts do.
func checkClosed(t *testing.T, b Checked) {
	t.Helper()
	s, err := b.Open(context.Background(), agent.OpenOptions{Cwd: t.TempDir()}, NewRecorder(""))
	if err != nil {
		if !errors.Is(err, agent.ErrAgentUnavailable) {
			t.Errorf("Open after Close: %v", err)
		}
		return
	}
	defer s.Close()
	if _, err := RunPrompt(t, s, "hello", nil); !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("prompt after Close: %v", err)
	}
}

// closedBackendLeavesNoServer: whatever Open does after Close, no server
// is left running.
func (c ServerSuite[F]) closedBackendLeavesNoServer(t *testing.T) {
	t.Parallel()
	f, b := c.fake(t)
	CheckClosedBackendLeavesNoServer(t, b, func(dir string) int { return f.Installation().Count(t, dir) })
}

// twoSessionsAtOnce: two turns at once on the one server; each session
// sees its own.
func (c ServerSuite[F]) twoSessionsAtOnce(t *testing.T) {
	t.Parallel()
	f, b := c.fake(t)
	words := []string{"one", "two"}
	runs := []Run[F]{c.openOn(t, f, b, agent.OpenOptions{}, c.Allow), c.openOn(t, f, b, agent.OpenOptions{}, c.Allow)}
	var wg sync.WaitGroup
	for i, r := range runs {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), WaitGuard)
			defer cancel()
			if res, err := r.Session.Prompt(ctx, TextTurn(fmt.Sprintf(c.Together, words[i]), nil)); err != nil || res.StopReason != acp.StopReasonEndTurn {
				t.Errorf("session %d: %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	for i, r := range runs {
		got := r.Events.Conversation()
		if !strings.Contains(got, fmt.Sprintf(c.Said, words[i])) || strings.Contains(got, fmt.Sprintf(c.Unsaid, words[1-i])) {
			t.Errorf("session %d:%s", i, got)
		}
	}
	if n := f.Installation().Count(t, "start"); n != 1 {
		t.Errorf("%d servers, want 1", n)
	}
	if c.TogetherRan != nil {
		c.TogetherRan(t, f, runs)
	}
}

// ownFork: a session opened with ForkOf is the agent's own fork of its
// parent, and goes on on it, not told the parent's transcript; the parent
// goes on on its own.
func (c ServerSuite[F]) ownFork(t *testing.T) {
	t.Parallel()
	f, b := c.fake(t)
	if !b.Info().Caps.Forks {
		t.Fatalf("%s does not fork", c.Agent)
	}
	parent := c.openOn(t, f, b, agent.OpenOptions{}, c.Allow)
	MustPrompt(t, parent.Session, c.ParentPrompt, nil)
	told := false
	opts := agent.OpenOptions{Cwd: parent.Opts.Cwd, ForkOf: parent.Session.NativeID(),
		History: func() []acp.SessionUpdate { told = true; return nil }}
	if c.ForkMoves {
		opts.Cwd = t.TempDir()
	}
	fork := c.openOn(t, f, b, opts, c.Allow)
	if id := c.Ready(t, fork.Session); id == "" || id == parent.Session.NativeID() {
		t.Fatalf("the fork's native session %q; want one of its own (the parent's is %s)", id, parent.Session.NativeID())
	}
	if c.Forked != nil {
		c.Forked(t, fork, parent.Session)
	}
	MustPrompt(t, fork.Session, c.ForkPrompt, nil)
	c.ForkRan.check(t, fork)
	MustPrompt(t, parent.Session, "Back in the parent", nil)
	in, parents := c.Inputs(t, fork), c.Inputs(t, parent)
	if len(in) != 1 || len(parents) != 2 {
		t.Fatalf("the fork's prompts %v, the parent's %v; want the fork's on the fork, the parent's on the parent", in, parents)
	}
	if strings.Contains(in[0], "forked from") || told {
		t.Errorf("the fork's first prompt %s (the transcript read: %v); want the prompt alone", in[0], told)
	}
	if got := fork.Events.Conversation(); strings.Contains(got, "could not fork") {
		t.Errorf("conversation:%s", got)
	}
}

// forked is the transcript forkTold's forks are told.
var forked = []acp.SessionUpdate{acp.UpdateUserMessageText("Remember the word apricot"),
	acp.UpdateAgentMessageText("I will."), acp.UpdateUserMessageText("Which word was it")}

// forkTold: a parent the agent can't fork is forked as a new native
// session, whose first turn is told the conversation from the bridge's
// transcript, without the turn's own prompt, once; the client sees a
// thought saying so. With nothing recorded before the prompt, nothing is
// told.
func (c ServerSuite[F]) forkTold(t *testing.T) {
	t.Parallel()
	f, b := c.fake(t)
	parents := c.Unforkable(t, b)
	for _, name := range slices.Sorted(maps.Keys(parents)) {
		t.Run(name, func(t *testing.T) {
			r := c.openOn(t, f, b, agent.OpenOptions{ForkOf: parents[name], History: func() []acp.SessionUpdate { return forked }}, c.Allow)
			if c.Ready(t, r.Session) == "" {
				t.Fatal("no native session")
			}
			MustPrompt(t, r.Session, "Which word was it", nil)
			MustPrompt(t, r.Session, "And again", nil)
			checkTold(t, c.Inputs(t, r))
			if got := r.Events.Conversation(); !strings.Contains(got, c.ForkNotice) {
				t.Errorf("conversation:%s", got)
			}
			c.ForkTold.check(t, r)
		})
	}
	name := slices.Min(slices.Collect(maps.Keys(parents)))
	r := c.openOn(t, f, b, agent.OpenOptions{ForkOf: parents[name], History: func() []acp.SessionUpdate { return forked[2:] }}, c.Allow)
	MustPrompt(t, r.Session, "Which word was it", nil)
	if in := c.Inputs(t, r); len(in) != 1 || strings.Contains(in[0], "forked from") {
		t.Errorf("prompts %v; with nothing recorded before the prompt, nothing to tell", in)
	}
	if c.ForksTold != nil {
		c.ForksTold(t, f)
	}
}

// checkTold checks the prompts of a fork told its parent's transcript:
// the first tells it once, then the prompt; the second is the prompt
// alone.
func checkTold(t *testing.T, in []string) {
	t.Helper()
	if len(in) != 2 {
		t.Fatalf("prompts %v; want two", in)
	}
	if !strings.Contains(in[0], "which it was forked from") || !strings.Contains(in[0], "Remember the word apricot") ||
		strings.Count(in[0], "Which word was it") != 1 {
		t.Errorf("the first prompt %s; want the conversation told once, then the prompt", in[0])
	}
	if strings.Contains(in[1], "forked from") {
		t.Errorf("the second prompt %s; want the prompt alone", in[1])
	}
}

// directoriesAndSystemPrompt: a session's additional directories and its
// system prompt go to the server with the session, or with its turns.
func (c ServerSuite[F]) directoriesAndSystemPrompt(t *testing.T) {
	t.Parallel()
	for _, p := range c.SystemPrompts {
		f, b := c.fake(t)
		r := c.openOn(t, f, b, agent.OpenOptions{Directories: []string{t.TempDir()}, SystemPrompt: &p}, c.Allow)
		c.Ready(t, r.Session)
		c.SetUp.check(t, r)
		if _, err := RunPrompt(t, r.Session, "hello", c.SetUpConfig); err != nil {
			t.Fatal(err)
		}
		c.SetUpTurn.check(t, r)
	}
}
