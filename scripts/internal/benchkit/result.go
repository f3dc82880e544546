package benchkit

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Result is what both benchmarks measure of one run of an agent.
type Result struct {
	Times
	Peaks
	APIRequests int      // the fake API requests of the run
	APISummary  []string // model and last text of each API request, for -v
	Seen        []ProcID // every process seen in the agent's tree
	Err         error    // why the run failed
	Lingered    bool     // an anchor that did not exit within ExitGrace of its stdin closing
	Stderr      string   // the agent's stderr, when the run failed
}

// Outcome is a benchmark's result of one run: a Result, or a struct that
// embeds one and adds what that benchmark alone measures.
type Outcome interface {
	Base() Result
}

// Base is r itself: it makes Result, and every struct that embeds it, an
// Outcome.
func (r Result) Base() Result { return r }

// Succeeded returns the runs of rs that did not fail.
func Succeeded[R Outcome](rs []R) []R {
	var out []R
	for _, r := range rs {
		if r.Base().Err == nil {
			out = append(out, r)
		}
	}
	return out
}

// Repeat runs each of agents o.N times, one agent after the other:
// run(a, prefix) runs a once, prefix being "/<Name>-<run number>" (a
// label, and the URL path prefix that tells its fake API requests apart).
// It says on stderr how each run went (PrintRun; with EndOfTurn1 if e2e)
// and warns there of any process the runs left alive. It returns the
// results by agent name.
func Repeat[A Candidate, R Outcome](o Options, agents []A, e2e bool, run func(a A, prefix string) R) map[string][]R {
	results := map[string][]R{}
	var seen []ProcID
	for _, a := range agents {
		name := a.Base().Name
		for i := range o.N {
			r := run(a, fmt.Sprintf("/%s-%d", name, i+1))
			results[name] = append(results[name], r)
			seen = append(seen, r.Base().Seen...)
			PrintRun(os.Stderr, name, i+1, r.Base(), o.Verbose, e2e)
		}
	}
	if left := alive(seen); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "%s: WARNING: processes still alive after the runs: %v\n", o.Program, left)
	}
	return results
}

// PrintRun says on w how run i (from 1) of agent name went: if it failed,
// its error and the last lines of the agent's stderr; else, if verbose,
// its times (with EndOfTurn1 if e2e), peaks and fake API requests.
func PrintRun(w io.Writer, name string, i int, r Result, verbose, e2e bool) {
	if r.Err != nil {
		fmt.Fprintf(w, "%s run %d: FAILED: %v\n", name, i, r.Err)
		if r.Stderr != "" {
			fmt.Fprintf(w, "  its stderr (last lines):\n%s\n", indent(tail(r.Stderr, 25), "    "))
		}
		return
	}
	if !verbose {
		return
	}
	us := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	times := fmt.Sprintf("init %v, new %v, turn1 %v, turn2 %v", us(r.Init), us(r.NewSession), us(r.Turn1), us(r.Turn2))
	if e2e {
		times += fmt.Sprintf(", e2e %v", us(r.EndOfTurn1))
	}
	fmt.Fprintf(w, "%s run %d: %s, tree %d KiB, own %d KiB, %d API requests, exes %v\n",
		name, i, times, r.PeakTree, r.PeakOwn, r.APIRequests, r.Exes)
	fmt.Fprintf(w, "  API requests: %s\n", strings.Join(r.APISummary, "; "))
}
