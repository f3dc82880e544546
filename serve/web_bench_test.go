package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/webtest"
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
	wb := webtest.StartBridge(b)
	out := filepath.Join(b.TempDir(), "times.json")
	cmd := exec.Command(bin, "-mode", mode, "-n", fmt.Sprint(b.N), "-out", out, "-cwd", b.TempDir())
	cmd.Stderr = os.Stderr
	served, started := make(chan struct{}), func() {}
	if mode == "stdio" {
		served, started = serveStdio(b, cmd, wb.Connect)
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
	ts := make([]webtest.TurnTimes, len(got))
	for i, t := range got {
		ts[i] = webtest.TurnTimes{First: time.Duration(t.FirstUS * 1e3), Chunk: time.Duration(t.ChunkUS * 1e3), N: t.Chunks}
	}
	webtest.Report(b, ts)
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
