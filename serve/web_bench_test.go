package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// The web edges' overhead: the same turns of the mock (an answer of
// about a hundred streamed words) over stdio ACP (the client's stdin and
// stdout on a Connector of the bridge, as an editor's are), over POST
// /api/chat and over POST /ag-ui (HTTP on loopback). The client is a
// process of its own (testdata/benchclient), as an editor or a browser
// is: in this one, its goroutines would wait on the bridge's for a CPU.
// Each reports the p50 and p99 time from sending the prompt to the first
// text chunk (ttfc), and the p50 time per chunk after it (a turn's last
// chunk's time minus its first's, over the chunks between).
//
//	go test ./serve -run '^$' -bench Web -benchtime 200x

// turnTimes are the times of one turn's text chunks from its start.
type turnTimes struct {
	first time.Duration // to the first text chunk
	chunk time.Duration // per chunk after the first
	n     int           // text chunks
}

// report puts a run's p50 and p99 times to the first chunk, and the p50
// time per chunk, into b's results.
func report(b *testing.B, ts []turnTimes) {
	if len(ts) == 0 {
		return
	}
	firsts := make([]time.Duration, len(ts))
	chunks := make([]time.Duration, len(ts))
	for i, t := range ts {
		firsts[i], chunks[i] = t.first, t.chunk
	}
	slices.Sort(firsts)
	slices.Sort(chunks)
	pct := func(d []time.Duration, p float64) float64 { return float64(d[int(p*float64(len(d)-1))].Microseconds()) }
	b.ReportMetric(pct(firsts, 0.5), "ttfc-p50-µs")
	b.ReportMetric(pct(firsts, 0.99), "ttfc-p99-µs")
	b.ReportMetric(pct(chunks, 0.5), "chunk-p50-µs")
	b.ReportMetric(float64(ts[0].n), "chunks/turn")
}

// BenchmarkWeb times b.N turns of the mock over each edge, the client a
// process of its own.
func BenchmarkWeb(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "benchclient")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/benchclient").CombinedOutput(); err != nil {
		b.Fatalf("building the bench client: %v\n%s", err, out)
	}
	for _, mode := range []string{"stdio", "aisdk", "agui"} {
		b.Run(mode, func(b *testing.B) { benchEdge(b, bin, mode) })
	}
}

// benchEdge runs the bench client over one edge and reports its times.
func benchEdge(b *testing.B, bin, mode string) {
	wb := startWebBridge(b)
	out := filepath.Join(b.TempDir(), "times.json")
	cmd := exec.Command(bin, "-mode", mode, "-n", fmt.Sprint(b.N), "-out", out, "-cwd", b.TempDir())
	cmd.Stderr = os.Stderr
	served, started := make(chan struct{}), func() {}
	if mode == "stdio" {
		served, started = serveStdio(b, cmd, wb.connect)
	} else {
		close(served)
		cmd.Args = append(cmd.Args, "-url", startWebServer(b, wb, "").URL)
	}
	b.ResetTimer()
	err := cmd.Start()
	if err == nil {
		started()
		err = cmd.Wait()
	}
	b.StopTimer()
	<-served
	if err != nil {
		b.Fatalf("the bench client: %v", err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		b.Fatal(err)
	}
	var got []struct {
		FirstUS, ChunkUS float64
		Chunks           int
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		b.Fatal(err)
	}
	ts := make([]turnTimes, len(got))
	for i, t := range got {
		ts[i] = turnTimes{first: time.Duration(t.FirstUS * 1e3), chunk: time.Duration(t.ChunkUS * 1e3), n: t.Chunks}
	}
	report(b, ts)
}

// serveStdio has connect serve cmd's stdin and stdout, as the bridge
// serves an editor's: the channel is closed once it has returned; started
// is to be called once cmd has started (it closes the child's ends here).
func serveStdio(b *testing.B, cmd *exec.Cmd, connect core.Connector) (served chan struct{}, started func()) {
	toChild, fromUs, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	fromChild, toUs, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout = toChild, toUs
	served = make(chan struct{})
	go func() {
		defer close(served)
		connect(context.Background(), fromChild, fromUs, "")
		fromUs.Close()
		fromChild.Close()
	}()
	return served, func() { toChild.Close(); toUs.Close() }
}
