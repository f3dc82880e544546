package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// stream is go test -json as Go 1.26 writes it, cut down.
const stream = `{"Time":"2026-11-23T10:00:00Z","Action":"start","Package":"github.com/acpbridge/acpbridge/translators/claude"}
{"Time":"2026-11-23T10:00:00Z","Action":"run","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestE2E_text"}
{"Time":"2026-11-23T10:00:00Z","Action":"output","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestE2E_text","Output":"    toolbin.go:52: toolbin: real claude CLI at /x/claude\n"}
{"Time":"2026-11-23T10:00:00Z","Action":"run","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestE2E_text/sub"}
{"Time":"2026-11-23T10:00:01Z","Action":"pass","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestE2E_text/sub","Elapsed":1}
{"Time":"2026-11-23T10:00:01Z","Action":"pass","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestE2E_text","Elapsed":1.5}
{"Time":"2026-11-23T10:00:01Z","Action":"run","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestLive"}
{"Time":"2026-11-23T10:00:01Z","Action":"output","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestLive","Output":"    live_test.go:9: SKIPPED: set KEY to run it\n"}
{"Time":"2026-11-23T10:00:01Z","Action":"output","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestLive","Output":"--- SKIP: TestLive (0.00s)\n"}
{"Time":"2026-11-23T10:00:01Z","Action":"skip","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestLive","Elapsed":0}
{"Time":"2026-11-23T10:00:01Z","Action":"run","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestBroken"}
{"Time":"2026-11-23T10:00:01Z","Action":"output","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestBroken","Output":"    x_test.go:3: got 1, want 2\n"}
{"Time":"2026-11-23T10:00:01Z","Action":"fail","Package":"github.com/acpbridge/acpbridge/translators/claude","Test":"TestBroken","Elapsed":0.2}
{"Time":"2026-11-23T10:00:02Z","Action":"fail","Package":"github.com/acpbridge/acpbridge/translators/claude","Elapsed":2.1}
{"ImportPath":"github.com/acpbridge/acpbridge/bad","Action":"build-output","Output":"bad/x.go:1: syntax error\n"}
{"ImportPath":"github.com/acpbridge/acpbridge/bad","Action":"build-fail"}
not json at all
{"Time":"2026-11-23T10:00:02Z","Action":"skip","Package":"github.com/acpbridge/acpbridge/empty","Output":"?   \tgithub.com/acpbridge/acpbridge/empty\t[no test files]\n"}
`

func TestReport(t *testing.T) {
	var out bytes.Buffer
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	r := newReport(&out, func() time.Time { return now })
	if err := r.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	now = now.Add(95 * time.Second)
	r.summary()
	want := `  skip  translators/claude.TestLive: SKIPPED: set KEY to run it
--- FAIL translators/claude.TestBroken (0.2s)
    x_test.go:3: got 1, want 2
FAIL  translators/claude                      2.1s    1 passed  1 FAILED  1 skipped   real CLI: claude (1 test)
bad/x.go:1: syntax error
not json at all
slowest: translators/claude.TestE2E_text 1.5s
go test: 1 package, 1 test passed, 1 failed, 1 skipped; 0 test binaries died (timed out, panicked, killed), 1 did not build; in 1m35s
failures (2):
  translators/claude.TestBroken
  bad: did not build
`
	if diff := cmp.Diff(want, out.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
	if !r.failed() {
		t.Error("failed() = false after a failed test")
	}
}

func TestReport_heartbeatNamesWhatRuns(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out, time.Now)
	r.handle(event{Action: "run", Package: "github.com/acpbridge/acpbridge/translators/opencode", Test: "TestE2E_slow"})
	stop := r.heartbeat(30 * time.Millisecond)
	defer stop()
	written := func() string {
		r.mu.Lock()
		defer r.mu.Unlock()
		return out.String()
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(written(), "still running translators/opencode (TestE2E_slow)"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat wrote %q", written())
		}
	}
}

const oc = "github.com/acpbridge/acpbridge/translators/opencode"

// ev is one go test -json line of package oc.
func ev(action, test, output string) string {
	b, _ := json.Marshal(event{Time: time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC), Action: action, Package: oc, Test: test, Output: output})
	return string(b) + "\n"
}

// A timed-out package counts its running tests as failed, says it timed
// out, and shows the running tests and the module's own goroutines, not
// the testing package's.
func TestReport_timeoutIsExplained(t *testing.T) {
	in := ev("start", "", "") + ev("run", "TestQuick", "") + ev("pass", "TestQuick", "") +
		ev("run", "TestE2E_sharedServer", "") + ev("run", "TestE2E_sharedServer/fork", "")
	for _, l := range []string{
		"panic: test timed out after 10m0s\n", "\trunning tests:\n", "\t\tTestE2E_sharedServer (4m2s)\n", "\t\tTestE2E_sharedServer/fork (1m1s)\n", "\n",
		"goroutine 19 [running]:\n", "testing.(*M).startAlarm.func1()\n", "\t/usr/local/go/src/testing/testing.go:2802 +0x354\n", "\n",
		"goroutine 7 [select]:\n", "github.com/acpbridge/acpbridge/translators/internal/agentkit.(*Attachment[...]).Ready(0x4568b4)\n",
		"\t/w/translators/internal/agentkit/shared.go:240 +0xdb\n", "\n",
		"goroutine 8 [IO wait]:\n", "internal/poll.runtime_pollWait(0x7f60429e0c00, 0x72)\n", "\n",
	} {
		in += ev("output", "TestE2E_sharedServer/fork", l)
	}
	in += ev("output", "", "FAIL\tgithub.com/acpbridge/acpbridge/translators/opencode\t600.1s\n") + ev("fail", "", "")
	out, r := run(t, in)
	for _, want := range []string{
		"--- FAIL translators/opencode: test timed out after 10m0s (running TestE2E_sharedServer)\n",
		"\t\tTestE2E_sharedServer/fork (1m1s)\n",
		"agentkit.(*Attachment[...]).Ready",
		"FAIL  translators/opencode",
		"1 passed  1 FAILED",
		"1 failed, 0 skipped; 1 test binaries died",
		"failures (1):\n  translators/opencode: test timed out after 10m0s (running TestE2E_sharedServer)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
	for _, notWant := range []string{"startAlarm", "runtime_pollWait"} {
		if strings.Contains(out, notWant) {
			t.Errorf("the report shows %q, a goroutine not of the module:\n%s", notWant, out)
		}
	}
	if !r.failed() {
		t.Error("failed() = false after a timeout")
	}
}

// A test binary killed by a signal, or one that fails with no test
// failing (TestMain), is a failure the summary counts and explains.
func TestReport_deathsAreCounted(t *testing.T) {
	for _, tc := range []struct {
		name, output, why string
	}{
		{"signal", "signal: killed\n", "killed by signal: killed (running TestE2E_x)"},
		{"panic", "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n", "panic: boom (running TestE2E_x)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := ev("start", "", "") + ev("run", "TestE2E_x", "") + ev("output", "TestE2E_x", tc.output) + ev("fail", "", "")
			out, r := run(t, in)
			if !strings.Contains(out, "failures (1):\n  translators/opencode: "+tc.why+"\n") || !strings.Contains(out, "1 test binaries died") {
				t.Errorf("report:\n%s\nwant the failure %q counted", out, tc.why)
			}
			if !r.failed() {
				t.Error("failed() = false")
			}
		})
	}
	in := ev("start", "", "") + ev("output", "", "TestMain: no database\n") + ev("output", "", "FAIL\tx\t0.1s\n") + ev("fail", "", "")
	if out, _ := run(t, in); !strings.Contains(out, "translators/opencode: the test binary failed outside its tests") || !strings.Contains(out, "TestMain: no database") {
		t.Errorf("a failing TestMain:\n%s", out)
	}
}

// A package the stream ends in the middle of is a failure too.
func TestReport_unfinishedPackageFails(t *testing.T) {
	out, r := run(t, ev("start", "", "")+ev("run", "TestE2E_x", ""))
	if !strings.Contains(out, "translators/opencode: did not finish") || !r.failed() {
		t.Errorf("failed() = %v; report:\n%s", r.failed(), out)
	}
}

// run reports on in and returns the report's output.
func run(t *testing.T, in string) (string, *report) {
	t.Helper()
	var out bytes.Buffer
	r := newReport(&out, func() time.Time { return time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC) })
	if err := r.read(strings.NewReader(in)); err != nil {
		t.Fatal(err)
	}
	r.summary()
	return out.String(), r
}
