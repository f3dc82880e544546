package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	built     string
	buildErr  error
)

// binary builds acpbridge once for the benchmarks that time whole
// processes (a test binary re-exec'd would time the test framework too).
func binary(b *testing.B) string {
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "acpbridge-bench")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "acpbridge")
		out, err := exec.Command("go", "build", "-o", built, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return built
}

// lineProc is a bridge process spoken to in raw lines.
type lineProc struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

func startLineProc(b *testing.B, args ...string) *lineProc {
	cmd := exec.Command(binary(b), args...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 16<<20)
	return &lineProc{cmd: cmd, in: in, out: sc}
}

// call sends a request and reads up to its response; each line before it
// is passed to seen.
func (p *lineProc) call(b *testing.B, id int, methodAndParams string, seen func([]byte)) {
	fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":%d,"method":%s}`+"\n", id, methodAndParams)
	prefix := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, id))
	for p.out.Scan() {
		if bytes.HasPrefix(p.out.Bytes(), prefix) {
			return
		}
		if seen != nil {
			seen(p.out.Bytes())
		}
	}
	b.Fatalf("bridge exited before answering %d", id)
}

func (p *lineProc) stop() {
	p.in.Close()
	p.cmd.Wait()
}

// BenchmarkStartToInitialize measures from exec to the initialize reply,
// and reports the median and 90th percentile of the runs besides their
// mean (ns/op), which a busy machine's few slow starts pull up. For many
// runs, and to compare builds in one run, see scripts/bench-start.sh.
func BenchmarkStartToInitialize(b *testing.B) {
	state := b.TempDir()
	binary(b)
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		p := startLineProc(b, "--agent", "mock", "--state-dir", state)
		p.call(b, 1, `"initialize","params":{"protocolVersion":1}`, nil)
		took = append(took, time.Since(start))
		b.StopTimer()
		p.stop()
		b.StartTimer()
	}
	slices.Sort(took)
	b.ReportMetric(float64(percentile(took, 50))/1e6, "p50-ms")
	b.ReportMetric(float64(percentile(took, 90))/1e6, "p90-ms")
}

// percentile is the p-th percentile of sorted ds (nearest rank).
func percentile(ds []time.Duration, p int) time.Duration {
	i := (len(ds)*p + 99) / 100
	return ds[max(i-1, 0)]
}

// BenchmarkRSS reports the bridge's resident memory idle (after
// initialize and session/new) and at its peak during a slow mock turn.
func BenchmarkRSS(b *testing.B) {
	for b.Loop() {
		p := startLineProc(b, "--agent", "mock", "--state-dir", b.TempDir())
		p.call(b, 1, `"initialize","params":{"protocolVersion":1}`, nil)
		var sid string
		fmt.Fprintf(p.in, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/work","mcpServers":[]}}`+"\n")
		for p.out.Scan() {
			if _, after, ok := strings.Cut(p.out.Text(), `"sessionId":"`); ok {
				sid, _, _ = strings.Cut(after, `"`)
				break
			}
		}
		time.Sleep(200 * time.Millisecond)
		idle := rssKiB(b, p.cmd.Process.Pid)
		peak := idle
		p.call(b, 3, `"session/prompt","params":{"sessionId":"`+sid+`","prompt":[{"type":"text","text":"slow think plan read"}]}`,
			func([]byte) { peak = max(peak, rssKiB(b, p.cmd.Process.Pid)) })
		p.stop()
		b.ReportMetric(float64(idle)/1024, "idle-MiB")
		b.ReportMetric(float64(peak)/1024, "turn-MiB")
	}
}

func rssKiB(b *testing.B, pid int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}
