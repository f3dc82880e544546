package benchkit

import (
	"context"
	"time"
)

// Session is an agent under test as a run drives it, over ACP
// (ACPSession) or over the agent's own protocol. Each method wraps its
// errors with the protocol's name of the step.
type Session interface {
	// Initialize does the protocol's handshake and returns how the agent
	// named itself in it ("" if it did not).
	Initialize(ctx context.Context) (agentInfo string, err error)
	// NewSession opens the session (or thread) the turns go to, in cwd.
	NewSession(ctx context.Context, cwd string) error
	// Turn sends prompt and returns when the agent's turn is over, with
	// an error if it did not end normally or the agent's text was not
	// the fake model's answer.
	Turn(ctx context.Context, prompt string) error
	// Done is closed once the session has stopped reading the agent's
	// stdout (it ended).
	Done() <-chan struct{}
}

// Initializer is a Session whose protocol has a step right after the
// initialize answer that is not part of its time: Measure calls
// Initialized then.
type Initializer interface {
	Initialized() error
}

// Times are the durations of the protocol steps of one run.
type Times struct {
	Init       time.Duration // process start → initialize answered
	NewSession time.Duration // session/new (thread/start)
	Turn1      time.Duration // the first prompt, right after NewSession (or Options.Think later)
	Turn2      time.Duration // the second prompt, in the same session: warm
	EndOfTurn1 time.Duration // process start → end of turn 1, wall clock less the think pause
	AgentInfo  string        // how the agent named itself at initialize
}

// Measure drives s through one run of an agent process started at start:
// initialize, a new session in cwd, a pause of think (a user typing),
// then a turn for each of the two prompts, each step within timeout. It
// returns the times of the steps it got through, and the error of the one
// that failed.
func Measure(s Session, start time.Time, timeout, think time.Duration, cwd string, prompts [2]string) (Times, error) {
	var t Times
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	info, err := s.Initialize(ctx)
	cancel()
	if err != nil {
		return t, err
	}
	t.Init, t.AgentInfo = time.Since(start), info
	if i, ok := s.(Initializer); ok {
		if err := i.Initialized(); err != nil {
			return t, err
		}
	}
	if t.NewSession, err = step(timeout, func(ctx context.Context) error { return s.NewSession(ctx, cwd) }); err != nil {
		return t, err
	}
	time.Sleep(think)
	if t.Turn1, err = turn(s, timeout, prompts[0]); err != nil {
		return t, err
	}
	t.EndOfTurn1 = time.Since(start) - think
	t.Turn2, err = turn(s, timeout, prompts[1])
	return t, err
}

// turn is one timed Turn of s.
func turn(s Session, timeout time.Duration, prompt string) (time.Duration, error) {
	return step(timeout, func(ctx context.Context) error { return s.Turn(ctx, prompt) })
}

// step runs f within timeout and returns how long it took.
func step(timeout time.Duration, f func(context.Context) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t := time.Now()
	err := f(ctx)
	return time.Since(t), err
}
