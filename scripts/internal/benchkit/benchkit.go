// Package benchkit is what scripts/benchagent's agents (claude, codex,
// opencode) share: their common flags (Options), the run of an
// agent process in a fresh temporary directory with a sampler on its
// process tree (MakeDirs, Dirs.Start, Process), the timed protocol steps
// of a run over ACP or another protocol (Session, Measure, ACPSession),
// and the statistics and table of the report (Repeat, Table, Median, Num);
// and, for the scripts that measure acpbridge serve (benchserve, hostile),
// a serve process on the mock (StartServe).
//
// The process tree is followed through /proc, so it works on Linux only
// (on Windows, Dirs.Start says it is not supported).
package benchkit

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

const (
	// SampleEvery is how often the sampler reads an agent's process tree.
	SampleEvery = 20 * time.Millisecond
	// ExitGrace is how long an agent has to exit once its stdin is
	// closed, and then its process tree to go once killed.
	ExitGrace = 5 * time.Second
)

// PSSEvery is how many samples apart the sampler reads the PSS of the
// processes (PeakPSS), 1 (every sample) unless a benchmark sets it before
// starting its agents. Reading /proc/PID/smaps_rollup walks every mapping
// of the process under its mmap lock: for a Bun or Node runtime with
// thousands of mappings it takes about 10 ms, which every SampleEvery
// slows the agent down and takes half a CPU. The last sample, at Stop,
// always reads it.
var PSSEvery = 1

// Options are the flags both benchmarks take, and the repository.
type Options struct {
	Program   string        // the benchmark's name, for messages and temporary directories
	Root      string        // the acpbridge repository, from the working directory
	N         int           // runs per agent
	Acpbridge string        // the acpbridge binary
	Timeout   time.Duration // the limit of each protocol step
	Verbose   bool          // print each run and the agents' stderr
	Keep      bool          // keep each run's temporary directory
	Only      string        // the agents to run
	Think     time.Duration // the pause between session/new and the first prompt
	// First has acpbridge-own run with its default flags instead of
	// --shared=0: a new user's first bridge, no daemon running and no
	// catalog kept.
	First bool

	rootErr error // why there is no Root
}

// Flags finds the repository and returns the flag set of program with the
// flags of o; timeout and only are the usage of -timeout and -only. The
// program adds its own flags to it (with defaults under o.Root), then
// calls Parse.
func (o *Options) Flags(program, timeout, only string) *flag.FlagSet {
	o.Program = program
	o.Root, o.rootErr = RepoRoot()
	fs := flag.NewFlagSet(program, flag.ContinueOnError)
	fs.IntVar(&o.N, "n", 5, "runs per agent")
	fs.StringVar(&o.Acpbridge, "acpbridge", filepath.Join(o.Root, "bin/acpbridge"), "the acpbridge `binary`")
	fs.DurationVar(&o.Timeout, "timeout", 120*time.Second, timeout)
	fs.BoolVar(&o.Verbose, "v", false, "print each run and pass the agents' stderr through")
	fs.BoolVar(&o.Keep, "keep", false, "keep each run's temporary directory")
	fs.StringVar(&o.Only, "only", "", only)
	fs.DurationVar(&o.Think, "think", 0, "pause this long between session/new and the first prompt, as a user typing it does "+
		"(left out of every time measured)")
	fs.BoolVar(&o.First, "first", false, "run acpbridge-own with its default flags instead of --shared=0, as a new user's very first bridge: "+
		"each run a new HOME and project, no daemon running (the run's own, stopped after it), no catalog kept")
	return fs
}

// Parse parses args with fs (from Flags) and checks -n. If the program
// is not to go on, ok is false and status is its exit status: 0 for -h,
// 2 for a usage error or a working directory outside the repository.
func (o *Options) Parse(fs *flag.FlagSet, args []string) (status int, ok bool) {
	if o.rootErr != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", o.Program, o.rootErr)
		return 2, false
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, false
		}
		return 2, false
	}
	if o.N < 1 {
		fmt.Fprintf(os.Stderr, "%s: -n must be at least 1\n", o.Program)
		return 2, false
	}
	return 0, true
}
