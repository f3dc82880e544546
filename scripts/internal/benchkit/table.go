package benchkit

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Metric is one row of a Table: one number of each successful run.
type Metric struct {
	Name string
	Unit string // "ms", "MiB" or ""
	Get  func(Result) float64
}

// Labels are the words in which the benchmarks' rows differ.
type Labels struct {
	NewSession string // the title of the session/new row
	Child      string // what the agent runs, e.g. "claude"
	Matching   string // the matched executable (Peaks.MaxMatching), e.g. "pinned codex"
	API        string // the fake API, e.g. "Messages"
	// WallClock times "start → end of turn 1" by the wall clock
	// (EndOfTurn1) instead of adding Init, NewSession and Turn1 up.
	WallClock bool
}

// Metrics are the rows of a benchmark's table, in the words of l.
func Metrics(l Labels) []Metric {
	endOfTurn1 := Metric{"start → end of turn 1 (init+new+turn1)", "ms", func(r Result) float64 { return Ms(r.Init + r.NewSession + r.Turn1) }}
	if l.WallClock {
		endOfTurn1 = Metric{"start → end of turn 1 (wall clock)", "ms", func(r Result) float64 { return Ms(r.EndOfTurn1) }}
	}
	return []Metric{
		{"process start → initialize response", "ms", func(r Result) float64 { return Ms(r.Init) }},
		{l.NewSession, "ms", func(r Result) float64 { return Ms(r.NewSession) }},
		{"turn 1 (the first prompt)", "ms", func(r Result) float64 { return Ms(r.Turn1) }},
		{"turn 2 (warm, same session)", "ms", func(r Result) float64 { return Ms(r.Turn2) }},
		{"session/new + turn 1", "ms", func(r Result) float64 { return Ms(r.NewSession + r.Turn1) }},
		endOfTurn1,
		{"peak RSS, process tree (agent + " + l.Child + ")", "MiB", func(r Result) float64 { return MiB(r.PeakTree) }},
		{"peak PSS, process tree (shared pages split)", "MiB", func(r Result) float64 { return MiB(r.PeakPSS) }},
		{"peak RSS, agent process alone", "MiB", func(r Result) float64 { return MiB(r.PeakOwn) }},
		{"peak RSS, tree minus agent (≈ " + l.Child + ")", "MiB", func(r Result) float64 { return MiB(r.PeakTree - r.PeakOwn) }},
		{l.Matching + " processes at once (max)", "", func(r Result) float64 { return float64(r.MaxMatching) }},
		{l.API + " API requests per run", "", func(r Result) float64 { return float64(r.APIRequests) }},
	}
}

// Ratio is a ratio column of a Table: the median of agent Num over that
// of agent Den.
type Ratio struct{ Title, Num, Den string }

// Table is the report of a benchmark: for each metric, the median and
// range of each agent's successful runs, and the ratios of medians.
type Table[R Outcome] struct {
	Metrics []Metric
	Agents  []string       // the columns, in order
	Results map[string][]R // by agent; the table shows the successful runs
	Ratios  []Ratio
	Width   int // of an agent's column
}

// The widths of a Table's other columns.
const (
	metricWidth = 42
	unitWidth   = 6
	ratioWidth  = 14
)

// Print prints t on w.
func (t Table[R]) Print(w io.Writer) {
	ok := map[string][]R{}
	fmt.Fprintf(w, "%-*s %*s", metricWidth, "metric (median; [min–max])", unitWidth, "unit")
	for _, name := range t.Agents {
		ok[name] = Succeeded(t.Results[name])
		fmt.Fprintf(w, " %*s", t.Width, fmt.Sprintf("%s (n=%d)", name, len(ok[name])))
	}
	for _, r := range t.Ratios {
		fmt.Fprintf(w, " %*s", ratioWidth, r.Title)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, strings.Repeat("-", metricWidth+1+unitWidth+len(t.Agents)*(t.Width+1)+len(t.Ratios)*(ratioWidth+1)))
	for _, m := range t.Metrics {
		t.printRow(w, m, ok)
	}
}

// printRow prints the row of m, ok being the successful runs by agent.
func (t Table[R]) printRow(w io.Writer, m Metric, ok map[string][]R) {
	fmt.Fprintf(w, "%-*s %*s", metricWidth, m.Name, unitWidth, m.Unit)
	meds := map[string]float64{}
	for _, name := range t.Agents {
		cell := "—"
		if xs := values(ok[name], m.Get); len(xs) > 0 {
			meds[name] = Median(xs)
			cell = fmt.Sprintf("%s [%s–%s]", Num(meds[name]), Num(slices.Min(xs)), Num(slices.Max(xs)))
		}
		fmt.Fprintf(w, " %*s", t.Width, cell)
	}
	for _, r := range t.Ratios {
		cell := "—"
		if len(ok[r.Num]) > 0 && len(ok[r.Den]) > 0 && meds[r.Den] > 0 {
			cell = fmt.Sprintf("%.2fx", meds[r.Num]/meds[r.Den])
		}
		fmt.Fprintf(w, " %*s", ratioWidth, cell)
	}
	fmt.Fprintln(w)
}

// values is get of each of rs.
func values[R Outcome](rs []R, get func(Result) float64) []float64 {
	var xs []float64
	for _, r := range rs {
		xs = append(xs, get(r.Base()))
	}
	return xs
}

// MedianOf is the median of get over rs.
func MedianOf[R Outcome](rs []R, get func(Result) float64) float64 {
	return Median(values(rs, get))
}

// Median is the median of xs, 0 if there are none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Num formats x for a table: no decimals from 100 on, one from 10 on,
// else two.
func Num(x float64) string {
	switch {
	case x >= 100:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case x >= 10:
		return strconv.FormatFloat(x, 'f', 1, 64)
	default:
		return strconv.FormatFloat(x, 'f', 2, 64)
	}
}

// Ms is d in milliseconds.
func Ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// MiB is kib KiB in MiB.
func MiB(kib int64) float64 { return float64(kib) / 1024 }

// Distinct is the sorted distinct strings of get over rs.
func Distinct[R any](rs []R, get func(R) []string) []string {
	var out []string
	for _, r := range rs {
		out = append(out, get(r)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// PrintRuns prints, for each agent of names, what its process trees ran,
// how it named itself at initialize and the user-agents of its requests
// to the fake model (uas), over its runs.
func PrintRuns[R Outcome](names []string, results map[string][]R, uas func(R) []string) {
	for _, name := range names {
		printRuns(name, results[name], uas)
	}
}

// printRuns is PrintRuns of agent name's runs rs.
func printRuns[R Outcome](name string, rs []R, uas func(R) []string) {
	ran := Distinct(rs, func(r R) []string { return r.Base().Exes })
	if len(ran) == 0 {
		return
	}
	fmt.Printf("\n%s process tree ran: %s", name, strings.Join(ran, ", "))
	if infos := Distinct(rs, func(r R) []string { return nonEmpty(r.Base().AgentInfo) }); len(infos) > 0 {
		fmt.Printf("\n%s initialize: %s", name, strings.Join(infos, "; "))
	}
	if all := Distinct(rs, uas); len(all) > 0 {
		fmt.Printf("\n%s → fake API user-agent: %s", name, strings.Join(all, "; "))
	}
}

// nonEmpty is s alone, or nothing if s is empty.
func nonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
