// Command testreport turns the output of `go test -json` on stdin into
// progress a person can follow while the suite runs:
//
//	ok    translators/claude              22.2s   64 passed   real CLI: claude (14 tests)
//	…     1m05s: still running translators/opencode (TestE2E_serverKilledMidTurn)
//	FAIL  translators/codex               14.6s   40 passed  1 failed
//
// One line per package as it finishes, with its time, its counts and the
// real agent CLIs its end-to-end tests ran (internal/testkit/toolbin logs a
// "toolbin: real NAME CLI" line for each); every skipped test with its
// reason, so that a test that could not run says so; the whole output of
// every failed test; a line naming what is still running after 15 s
// without news; and at the end the totals, the wall time and the slowest
// tests. Lines that are not JSON (go vet's, a crashed binary's) are
// copied through.
//
// A package whose test binary failed outside any test's own failure (it
// timed out, panicked, was killed by a signal, or its TestMain failed)
// says why, and counts: the tests it was running count as failed, and for
// a timeout the part of the goroutine dump that is the module's own code is
// shown (the whole dump is in go test's output, which the report keeps
// only for failures). The summary ends with every failure, one a line.
//
// It exits 1 if a test or a package failed or did not build, so that
// `go test -json ./... | testreport` fails when the suite does (with
// pipefail, go test's own status counts too).
//
// gotestsum does most of this, but it says nothing during a long silent
// package and knows nothing of which tests ran a real CLI; this is the
// little that is needed, on the standard library alone.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Time       time.Time
	Action     string
	Package    string
	ImportPath string // build-output and build-fail
	Test       string
	Elapsed    float64
	Output     string
}

func main() {
	r := newReport(os.Stdout, time.Now)
	stop := r.heartbeat(15 * time.Second)
	err := r.read(os.Stdin)
	stop()
	r.summary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testreport:", err)
		os.Exit(1)
	}
	if r.failed() {
		os.Exit(1)
	}
}

// pkg is what is known of one package so far.
type pkg struct {
	name      string
	started   time.Time
	done      bool
	passed    int
	failed    int
	skipped   int
	running   map[string]bool     // top-level tests started, not ended
	output    map[string][]string // per test ("" for the package)
	realCLIs  map[string]bool
	realTests map[string]bool
	died      string // why the binary failed outside its tests' failures
}

type slow struct {
	test    string
	elapsed float64
}

type report struct {
	out  io.Writer
	now  func() time.Time
	mu   sync.Mutex
	last time.Time // when a line was last written
	t0   time.Time
	pkgs map[string]*pkg
	slow []slow

	builds   map[string][]string // build output per import path
	broken   []string            // packages that did not build
	failures []string            // every failure, for the summary
}

func newReport(out io.Writer, now func() time.Time) *report {
	t := now()
	return &report{out: out, now: now, last: t, t0: t, pkgs: map[string]*pkg{}, builds: map[string][]string{}}
}

// read consumes the event stream to its end.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			r.println(string(line))
			continue
		}
		r.handle(e)
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading go test -json: %w", err)
	}
	return nil
}

var realCLI = regexp.MustCompile(`toolbin: real (\S+) CLI`)

func (r *report) handle(e event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e.Action {
	case "build-output":
		r.builds[e.ImportPath] = append(r.builds[e.ImportPath], e.Output)
		return
	case "build-fail":
		r.broken = append(r.broken, e.ImportPath)
		r.failures = append(r.failures, short(e.ImportPath)+": did not build")
		r.writef("%s", strings.Join(r.builds[e.ImportPath], ""))
		return
	}
	if e.Package == "" {
		return
	}
	p := r.pkg(e.Package, e.Time)
	top := topLevel(e.Test)
	switch e.Action {
	case "run":
		if e.Test == top {
			p.running[top] = true
		}
	case "output":
		p.output[top] = append(p.output[top], e.Output)
		if m := realCLI.FindStringSubmatch(e.Output); m != nil {
			p.realCLIs[m[1]] = true
			if top != "" {
				p.realTests[top] = true
			}
		}
	case "pass", "fail", "skip":
		if e.Test == "" {
			r.finish(p, e)
			return
		}
		if e.Test == top {
			r.endTest(p, e)
		}
	}
}

func (r *report) pkg(name string, t time.Time) *pkg {
	p := r.pkgs[name]
	if p == nil {
		p = &pkg{name: name, started: t, running: map[string]bool{}, output: map[string][]string{},
			realCLIs: map[string]bool{}, realTests: map[string]bool{}}
		r.pkgs[name] = p
	}
	return p
}

// topLevel is the top-level test of a (sub)test name.
func topLevel(test string) string {
	name, _, _ := strings.Cut(test, "/")
	return name
}

func (r *report) endTest(p *pkg, e event) {
	delete(p.running, e.Test)
	switch e.Action {
	case "pass":
		p.passed++
		r.slow = append(r.slow, slow{short(p.name) + "." + e.Test, e.Elapsed})
	case "fail":
		p.failed++
		r.failures = append(r.failures, short(p.name)+"."+e.Test)
		r.writef("--- FAIL %s.%s (%.1fs)\n%s", short(p.name), e.Test, e.Elapsed, strings.Join(p.output[e.Test], ""))
	case "skip":
		p.skipped++
		r.writef("  skip  %s.%s: %s\n", short(p.name), e.Test, skipReason(p.output[e.Test]))
	}
	delete(p.output, e.Test)
}

// skipReason is the message t.Skip printed: the last output line that is
// not go test's own "--- SKIP" line.
func skipReason(lines []string) string {
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l == "" || strings.HasPrefix(l, "--- SKIP") || strings.HasPrefix(l, "=== ") {
			continue
		}
		if _, msg, ok := strings.Cut(l, ".go:"); ok {
			if _, rest, ok := strings.Cut(msg, ": "); ok {
				return rest
			}
		}
		return l
	}
	return "(no reason given)"
}

func (r *report) finish(p *pkg, e event) {
	p.done = true
	if e.Action == "skip" && p.passed+p.failed+p.skipped == 0 {
		return // no test files
	}
	status := "ok  "
	if e.Action == "fail" {
		status = "FAIL"
		if p.failed == 0 || len(p.running) > 0 { // the binary itself failed
			r.died(p)
		}
	}
	r.writef("%s  %-36s %6.1fs  %s\n", status, short(p.name), e.Elapsed, p.counts())
}

// died reports a test binary that failed outside its tests' own failures:
// why, what it was running (each such test counts as failed), and the
// output that tells more.
func (r *report) died(p *pkg) {
	out := p.allOutput()
	why, detail := diagnose(out)
	running := sorted(p.running)
	p.died = why
	p.failed += len(running)
	for _, test := range running {
		delete(p.running, test)
	}
	what := short(p.name) + ": " + why
	if len(running) > 0 {
		what += " (running " + strings.Join(running, ", ") + ")"
	}
	r.failures = append(r.failures, what)
	r.writef("--- FAIL %s\n%s", what, detail)
}

// allOutput is every line the package printed that is still kept: its
// own, and that of the tests that have not ended (a timeout's panic is
// printed as the output of a running test).
func (p *pkg) allOutput() []string {
	out := append([]string(nil), p.output[""]...)
	for _, test := range sorted(p.running) {
		out = append(out, p.output[test]...)
	}
	return out
}

// diagnose says why a test binary failed from its output, and picks the
// lines that show it: for a timeout the running tests and the module's
// own goroutines, for a panic its message and the goroutine that
// panicked, for a signal the lines before it.
func diagnose(out []string) (why, detail string) {
	text := strings.Join(out, "")
	i := strings.Index(text, "panic: ")
	switch {
	case strings.Contains(text, "panic: test timed out after "):
		head, _, _ := strings.Cut(text[i:], "\n\n")
		why = strings.TrimPrefix(firstLine(head), "panic: ")
		return why, head + "\n" + ownGoroutines(text[i:], dumpLines)
	case i >= 0:
		return firstLine(text[i:]), tailLines(text[i:], dumpLines)
	}
	if m := signalLine.FindString(text); m != "" {
		return "killed by " + strings.TrimSpace(m), tailLines(text, 40)
	}
	return "the test binary failed outside its tests (TestMain, or an exit)", tailLines(text, 40)
}

// dumpLines bounds how much of a goroutine dump is shown.
const dumpLines = 300

var signalLine = regexp.MustCompile(`(?m)^signal: .*$`)

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(l)
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.SplitAfter(strings.TrimRight(s, "\n")+"\n", "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… (%d lines before)\n", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "")
}

// ownGoroutines is the goroutines of a dump whose stacks run the module's
// own code (the testing package's and the runtime's left out), at most
// max lines, with a count of the rest.
func ownGoroutines(dump string, max int) string {
	var keep []string
	left, lines := 0, 0
	for _, g := range strings.Split(dump, "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") || !strings.Contains(g, module+"/") && !strings.Contains(g, module+".") {
			continue
		}
		n := strings.Count(g, "\n") + 1
		if lines+n > max {
			left++
			continue
		}
		keep = append(keep, g)
		lines += n
	}
	s := strings.Join(keep, "\n\n") + "\n"
	if left > 0 {
		s += fmt.Sprintf("… and %d more of the module's goroutines (the whole dump is in go test -json's output)\n", left)
	}
	return s
}

func (p *pkg) counts() string {
	s := fmt.Sprintf("%3d passed", p.passed)
	if p.failed > 0 {
		s += fmt.Sprintf("  %d FAILED", p.failed)
	}
	if p.skipped > 0 {
		s += fmt.Sprintf("  %d skipped", p.skipped)
	}
	if len(p.realCLIs) > 0 {
		s += fmt.Sprintf("   real CLI: %s (%s)", strings.Join(sorted(p.realCLIs), ", "), plural(len(p.realTests), "test"))
	}
	return s
}

// heartbeat says what is still running whenever nothing was written for
// quiet; the returned func stops it and waits for it to end.
func (r *report) heartbeat(quiet time.Duration) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	tick := time.NewTicker(quiet / 3)
	go func() {
		defer close(ended)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				r.mu.Lock()
				if r.now().Sub(r.last) >= quiet {
					r.writef("…     %s: still running %s\n", r.since(), r.running())
				}
				r.mu.Unlock()
			}
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

func (r *report) running() string {
	var parts []string
	for _, p := range r.pkgs {
		if p.done {
			continue
		}
		tests := sorted(p.running)
		if len(tests) > 2 {
			tests = append(tests[:2], fmt.Sprintf("+%d", len(tests)-2))
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", short(p.name), strings.Join(tests, ", ")))
	}
	if len(parts) == 0 {
		return "the build"
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func (r *report) summary() {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n, passed, failed, skipped int
	for _, p := range r.pkgs {
		if p.passed+p.failed+p.skipped > 0 {
			n++
		}
		passed, failed, skipped = passed+p.passed, failed+p.failed, skipped+p.skipped
	}
	sort.Slice(r.slow, func(i, j int) bool { return r.slow[i].elapsed > r.slow[j].elapsed })
	if len(r.slow) > 5 {
		r.slow = r.slow[:5]
	}
	var names []string
	for _, s := range r.slow {
		names = append(names, fmt.Sprintf("%s %.1fs", s.test, s.elapsed))
	}
	if len(names) > 0 {
		r.writef("slowest: %s\n", strings.Join(names, ", "))
	}
	for _, p := range r.pkgs {
		if !p.done {
			r.failures = append(r.failures, short(p.name)+": did not finish (go test ended first)")
		}
	}
	r.writef("go test: %s, %s passed, %d failed, %d skipped; %d test binaries died (timed out, panicked, killed), %d did not build; in %s\n",
		plural(n, "package"), plural(passed, "test"), failed, skipped, r.dead(), len(r.broken), r.since())
	if len(r.failures) > 0 {
		r.writef("failures (%d):\n", len(r.failures))
		for _, f := range r.failures {
			r.writef("  %s\n", f)
		}
	}
}

// dead is how many test binaries failed outside their tests.
func (r *report) dead() int {
	n := 0
	for _, p := range r.pkgs {
		if p.died != "" {
			n++
		}
	}
	return n
}

func (r *report) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.broken) > 0 {
		return true
	}
	for _, p := range r.pkgs {
		if p.failed > 0 || !p.done || p.died != "" {
			return true
		}
	}
	return false
}

func (r *report) since() string {
	return r.now().Sub(r.t0).Round(time.Second).String()
}

func (r *report) println(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.writef("%s\n", s)
}

// writef writes with r.mu held.
func (r *report) writef(format string, args ...any) {
	fmt.Fprintf(r.out, format, args...)
	r.last = r.now()
}

// module is the module's path.
const module = "github.com/acpbridge/acpbridge"

// short drops the module path from a package's import path.
func short(path string) string {
	if path == module {
		return "acpbridge (main)"
	}
	return strings.TrimPrefix(path, module+"/")
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
