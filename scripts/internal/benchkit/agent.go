package benchkit

import (
	"fmt"
	"os"
	"slices"
	"time"
)

// Agent is what every benchmark knows of an agent command under test.
type Agent struct {
	Name    string   // the column title, and a value of -only
	Argv    []string // the command; "STATE" in it is the run's state directory (Dirs.Start)
	Env     []string // added to the fake model's environment
	Version string   // describes the agent for the header
	// Anchor marks an adapter measured for comparison: its not exiting
	// when its stdin closes is noted (Result.Lingered; it is killed), not
	// a failed run.
	Anchor bool
}

// Base is a itself: it makes Agent, and every struct that embeds it, a
// Candidate.
func (a Agent) Base() Agent { return a }

// Candidate is a benchmark's agent under test: an Agent, or a struct that
// embeds one and adds what that benchmark alone needs.
type Candidate interface {
	Base() Agent
}

// Bench is one agent's benchmark, as Run drives it.
type Bench[A Candidate, R Outcome] interface {
	// Header prints what runs against what.
	Header()
	// Agents are the agents to run, in order.
	Agents() []A
	// Warmups are the agents whose first run is not counted: acpbridge's,
	// which starts the daemons its counted runs find running, and
	// acpbridge-cold's, which keeps in its HOME what a user's bridge kept
	// the day before (the catalog of models).
	Warmups() []A
	// RunOnce runs a once, its fake model requests under prefix, and
	// returns its measurements.
	RunOnce(a A, prefix string) R
	// Report prints the results by agent.
	Report(results map[string][]R)
	// Close stops what the benchmark started.
	Close()
}

// Run runs b, closing it at the end: the header, the daemon's first run
// (StartDaemon), o.N runs of each agent (Repeat; with EndOfTurn1 if e2e)
// and the report. It returns the exit status: 1 if the daemon's run, or
// a run of an agent named in must (Status), failed.
func Run[A Candidate, R Outcome](o Options, b Bench[A, R], e2e bool, must ...string) int {
	defer b.Close()
	b.Header()
	for _, a := range b.Warmups() {
		if !Warmup(o, a.Base().Name, func(prefix string) R { return b.RunOnce(a, prefix) }) {
			return 1
		}
	}
	results := Repeat(o, b.Agents(), e2e, b.RunOnce)
	b.Report(results)
	return Status(results, must...)
}

// The names of acpbridge's columns, in every benchmark:
//
//	acpbridge       its default flags, its daemons already running (started
//	                by a run not counted) and settled, as for every bridge
//	                of a user but the first in --shared's time: one HOME
//	                and project for every run (a Shared)
//	acpbridge-cold  its default flags, no daemon running: one HOME and
//	                project for every run (what a run not counted kept
//	                there, the catalog of models, is there), and daemons of
//	                each run's own, stopped after it (DaemonsOfTheRun): a
//	                user's first bridge of the day
//	acpbridge-own   --shared=0: each run a new HOME and project, its servers
//	                its own; with -first (Options.First), its default flags
//	                instead, daemons of each run's own: a new user's first
//	                bridge
const (
	NameBridge = "acpbridge"
	NameCold   = "acpbridge-cold"
	NameOwn    = "acpbridge-own"
)

// Bridge is o.Acpbridge as the agent named agent, running the CLI at
// cli, which the environment variable env tells it, with its daemons in
// the run's own directory (acpbridge-own, AsShared and Cold make the
// others).
func Bridge(o Options, agent, env, cli string) Agent {
	return Agent{
		Name:    NameOwn,
		Argv:    []string{o.Acpbridge, "--agent", agent, "--state-dir", "STATE"},
		Env:     []string{env + "=" + cli, DaemonsOfTheRun},
		Version: CommandLine(os.Environ(), o.Acpbridge, "--version"),
	}
}

// Own is a, from Bridge, as acpbridge-own: with --shared=0, or, if
// first (Options.First), with its default flags and daemons of the run's
// own, as a new user's first bridge.
func (a Agent) Own(first bool) Agent {
	if !first {
		a.Argv = append(slices.Clone(a.Argv), "--shared=0")
	}
	return a
}

// Cold is a, from Bridge, as acpbridge-cold: its default flags, its
// daemons the run's own.
func (a Agent) Cold() Agent {
	a.Name = NameCold
	return a
}

// AsShared is a, from Bridge, as acpbridge: its default flags, its
// daemons sh's.
func (a Agent) AsShared(sh *Shared) Agent {
	a.Name = NameBridge
	a.Env = append(slices.DeleteFunc(slices.Clone(a.Env), func(kv string) bool { return kv == DaemonsOfTheRun }), sh.Env())
	return a
}

// Selects says whether -only selects the agent name: a single name, or
// none for all.
func (o Options) Selects(name string) bool {
	return o.Only == "" || o.Only == name
}

// Failf says on stderr, after the program's name, why it stops.
func (o Options) Failf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, o.Program+": "+format+"\n", args...)
}

// Warmup does the run of agent name that is not counted (see
// Bench.Warmups), with the prefix "/NAME-0". It says on stderr if the run
// failed.
func Warmup[R Outcome](o Options, name string, run func(prefix string) R) (ok bool) {
	if err := run("/" + name + "-0").Base().Err; err != nil {
		o.Failf("the run of %s that is not counted failed: %v", name, err)
		return false
	}
	return true
}

// Status is a benchmark's exit status: 1 if a run of any of the agents
// named failed (acpbridge's, whose failures are bugs to look at), else 0.
func Status[R Outcome](results map[string][]R, names ...string) int {
	for _, name := range names {
		if len(Succeeded(results[name])) != len(results[name]) {
			return 1
		}
	}
	return 0
}

// Finish ends the run of a on p (Stop, with ExitGrace), waits (at most
// ExitGrace) for its session s to stop reading, and records the run in
// res (Record, under label): an anchor that did not exit by itself has
// Lingered; any other agent that did not has failed, unless it had
// already.
func (p *Process) Finish(res *Result, a Agent, s Session, label string, verbose bool) {
	switch {
	case p.Stop(ExitGrace):
	case a.Anchor:
		res.Lingered = true
	case res.Err == nil:
		res.Err = fmt.Errorf("%s did not exit within %v of its stdin closing", a.Name, ExitGrace)
	}
	select {
	case <-s.Done():
	case <-time.After(ExitGrace):
	}
	p.Record(res, os.Stderr, label, verbose)
}

// NoteLingered prints a NOTE if agent name did not exit by itself in some
// of its runs rs.
func NoteLingered[R Outcome](name string, rs []R) {
	lingered := 0
	for _, r := range rs {
		if r.Base().Lingered {
			lingered++
		}
	}
	if lingered > 0 {
		fmt.Printf("NOTE: %s did not exit within %v of its stdin closing in %d of %d runs; it was killed (SIGKILL to its process groups).\n",
			name, ExitGrace, lingered, len(rs))
	}
}
