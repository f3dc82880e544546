package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
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

// timeLines reads lines from r until end says one is the last; isChunk
// says which are text chunks.
func timeLines(r *bufio.Reader, start time.Time, isChunk, end func([]byte) bool) (turnTimes, error) {
	var first, last time.Time
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return turnTimes{}, fmt.Errorf("reading the turn after %d chunks: %w", n, err)
		}
		if isChunk(line) {
			now := time.Now()
			if n == 0 {
				first = now
			}
			last = now
			n++
		}
		if end(line) {
			break
		}
	}
	tt := turnTimes{first: first.Sub(start), n: n}
	if n > 1 {
		tt.chunk = last.Sub(first) / time.Duration(n-1)
	}
	return tt, nil
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

// webTurn POSTs body to url and times the SSE stream's text chunks.
func webTurn(client *http.Client, url string, body []byte, chunk, end []byte) (turnTimes, error) {
	start := time.Now()
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return turnTimes{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return turnTimes{}, fmt.Errorf("POST: %d %s", resp.StatusCode, msg)
	}
	tt, err := timeLines(bufio.NewReaderSize(resp.Body, 1<<16), start,
		func(l []byte) bool { return bytes.Contains(l, chunk) }, func(l []byte) bool { return bytes.Contains(l, end) })
	io.Copy(io.Discard, resp.Body)
	return tt, err
}

// BenchmarkWeb_aiSDK100Chats runs a turn in each of 100 chats at once on
// the mock (their sessions started before): it reports the p50 and p99
// time to the first text chunk and the p50 wall time of a round.
func BenchmarkWeb_aiSDK100Chats(b *testing.B) {
	ws := startWebServer(b, startWebBridge(b), "")
	url := ws.URL + "/api/chat"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	chunk, end := []byte(`"type":"text-delta"`), []byte("data: [DONE]")
	if _, err := concurrentChats(client, url, "bench", 100, 1, chunk, end); err != nil {
		b.Fatal(err)
	}
	var all []turnTimes
	var walls []time.Duration
	for b.Loop() {
		start := time.Now()
		ts, err := concurrentChats(client, url, "bench", 100, 1, chunk, end)
		if err != nil {
			b.Fatal(err)
		}
		walls = append(walls, time.Since(start))
		all = append(all, ts...)
	}
	report(b, all)
	slices.Sort(walls)
	b.ReportMetric(float64(walls[len(walls)/2].Microseconds())/1000, "round-p50-ms")
}

// concurrentChats runs n chats at once, turns turns each, and returns the
// times of every turn.
func concurrentChats(client *http.Client, url, prefix string, n, turns int, chunk, end []byte) ([]turnTimes, error) {
	var mu sync.Mutex
	var ts []turnTimes
	var errs []error
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("%s-chat%d", prefix, i)
			for turn := range turns {
				body, _ := json.Marshal(map[string]any{"id": id, "messages": []any{userMsg(fmt.Sprint("u", turn), fmt.Sprintf("hello %d from %s", turn, id))}})
				tt, err := webTurn(client, url, body, chunk, end)
				mu.Lock()
				ts, errs = append(ts, tt), append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return ts, errors.Join(errs...)
}

// A hundred chats at once on the mock: every turn of every chat answered
// in full, in its own session.
func TestChat_100ConcurrentChats(t *testing.T) {
	if testing.Short() {
		t.Skip("SKIPPED: 100 concurrent chats do not run with -short")
	}
	ws := startWebServer(t, startWebBridge(t), "")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	ts, err := concurrentChats(client, ws.URL+"/api/chat", "t", 100, 2, []byte(`"type":"text-delta"`), []byte("data: [DONE]"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range ts {
		if tt.n != 6 { // "You said: hello N from t-chatI"
			t.Fatalf("a turn streamed %d text chunks, want 6", tt.n)
		}
	}
	if len(ws.chat.chats.live) != 100 {
		t.Errorf("%d chats, want 100", len(ws.chat.chats.live))
	}
}
