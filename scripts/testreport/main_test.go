package main

import (
	"bytes"
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
go test: 1 package, 1 test passed, 1 failed, 1 skipped, 1 did not build, in 1m35s
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
	time.Sleep(100 * time.Millisecond)
	stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	if !strings.Contains(out.String(), "still running translators/opencode (TestE2E_slow)") {
		t.Errorf("heartbeat wrote %q", out.String())
	}
}
