package benchkit

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		xs   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{7}, 7},
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{10, 10, 1, 1000, 5}, 10},
	} {
		in := slices.Clone(c.xs)
		if got := Median(c.xs); got != c.want {
			t.Errorf("Median(%v) = %v, want %v", c.xs, got, c.want)
		}
		if !slices.Equal(in, c.xs) {
			t.Errorf("Median sorted its argument: %v, was %v", c.xs, in)
		}
	}
}

func TestNum(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{0, "0.00"},
		{5.836, "5.84"},
		{9.999, "10.00"},
		{10, "10.0"},
		{23.94, "23.9"},
		{99.96, "100.0"},
		{100, "100"},
		{1091.4, "1091"},
	} {
		if got := Num(c.x); got != c.want {
			t.Errorf("Num(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

func TestParseKiB(t *testing.T) {
	status := "Name:\tclaude\nVmPeak:\t  900000 kB\nVmRSS:\t  300123 kB\nRssAnon:\t  1 kB\n"
	if got := parseKiB(status, "VmRSS:"); got != 300123 {
		t.Errorf("VmRSS = %d, want 300123", got)
	}
	rollup := "55d0c0000000-7ffc00000000 ---p 00000000 00:00 0   [rollup]\nRss:              10240 kB\nPss:               9000 kB\n"
	if got := parseKiB(rollup, "Pss:"); got != 9000 {
		t.Errorf("Pss = %d, want 9000", got)
	}
	// A zombie has no VmRSS line.
	if got := parseKiB("Name:\tx\nState:\tZ (zombie)\n", "VmRSS:"); got != 0 {
		t.Errorf("no VmRSS: %d, want 0", got)
	}
}

func TestParseStat(t *testing.T) {
	// The command name may hold spaces and parentheses.
	b := []byte("4242 (node (worker) 1) S 4200 4242 4200 0 -1 4194560 1 0 0 0 3 1 0 0 20 0 11 0 987654 1000 2000\n")
	st, ok := parseStat(b)
	if want := (procStat{state: 'S', ppid: 4200, pgid: 4242, start: 987654}); !ok || st != want {
		t.Errorf("parseStat = %+v, %v; want %+v, true", st, ok, want)
	}
	if _, ok := parseStat([]byte("4242 (short) S 1 2")); ok {
		t.Error("parseStat of a short line: ok")
	}
	if _, ok := parseStat([]byte("no parenthesis")); ok {
		t.Error("parseStat without ')': ok")
	}
}

func TestDescendants(t *testing.T) {
	stats := map[int]procStat{
		1:  {ppid: 0},
		10: {ppid: 1},
		11: {ppid: 10},
		12: {ppid: 10},
		13: {ppid: 12},
		20: {ppid: 1},
	}
	got := slices.Sorted(maps.Keys(descendants(10, stats)))
	if want := []int{10, 11, 12, 13}; !slices.Equal(got, want) {
		t.Errorf("descendants(10) = %v, want %v", got, want)
	}
	if got := descendants(99, stats); len(got) != 0 {
		t.Errorf("descendants of a gone root = %v, want none", got)
	}
}

func TestSucceededAndMedianOf(t *testing.T) {
	type run struct {
		Result
		extra string
	}
	rs := []run{
		{Result{Times: Times{Turn1: 3e6}}, "a"},
		{Result{Err: errors.New("failed")}, "b"},
		{Result{Times: Times{Turn1: 1e6}}, "c"},
	}
	ok := Succeeded(rs)
	if len(ok) != 2 || ok[0].extra != "a" || ok[1].extra != "c" {
		t.Fatalf("Succeeded = %+v", ok)
	}
	if got := MedianOf(ok, func(r Result) float64 { return Ms(r.Turn1) }); got != 2 {
		t.Errorf("MedianOf turn 1 = %v ms, want 2", got)
	}
}

func TestFirstLineAndTail(t *testing.T) {
	if got := FirstLine("  hello world\nmore", 5); got != "hello…" {
		t.Errorf("FirstLine = %q", got)
	}
	if got := tail("a\nb\nc\n", 2); got != "b\nc" {
		t.Errorf("tail = %q", got)
	}
	if got := indent("a\nb", "  "); got != "  a\n  b" {
		t.Errorf("indent = %q", got)
	}
}

func TestTablePrint(t *testing.T) {
	ms := func(x float64) Times { return Times{Init: time.Duration(x * float64(time.Millisecond))} }
	tab := Table[Result]{
		Metrics: []Metric{{"process start → initialize response", "ms", func(r Result) float64 { return Ms(r.Init) }}},
		Agents:  []string{"acpbridge", "zed-adapter", "none"},
		Results: map[string][]Result{
			"acpbridge":   {{Times: ms(4)}, {Times: ms(6)}, {Err: errors.New("x")}},
			"zed-adapter": {{Times: ms(568)}},
		},
		Ratios: []Ratio{{"zed/acpbridge", "zed-adapter", "acpbridge"}, {"none/acpbridge", "none", "acpbridge"}},
		Width:  24,
	}
	var b strings.Builder
	tab.Print(&b)
	// The format the benchmarks printed before the table was shared.
	want := fmt.Sprintf("%-42s %6s %24s %24s %24s %14s %14s\n", "metric (median; [min–max])", "unit",
		"acpbridge (n=2)", "zed-adapter (n=1)", "none (n=0)", "zed/acpbridge", "none/acpbridge") +
		strings.Repeat("-", 42+1+6+3*(24+1)+2*(14+1)) + "\n" +
		fmt.Sprintf("%-42s %6s %24s %24s %24s %14s %14s\n", "process start → initialize response", "ms",
			"5.00 [4.00–6.00]", "568 [568–568]", "—", "113.60x", "—")
	if got := b.String(); got != want {
		t.Errorf("Print:\n%s\nwant:\n%s", got, want)
	}
}

func TestPSSDue(t *testing.T) {
	var got []int
	for n := range 25 {
		if pssDue(n, 10) {
			got = append(got, n)
		}
	}
	if want := []int{0, 10, 20}; !slices.Equal(got, want) {
		t.Errorf("pssDue(n, 10) for n < 25: %v, want %v", got, want)
	}
	for _, every := range []int{0, 1} {
		for n := range 5 {
			if !pssDue(n, every) {
				t.Errorf("pssDue(%d, %d) = false, want every sample", n, every)
			}
		}
	}
}
