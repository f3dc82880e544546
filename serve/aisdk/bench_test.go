package aisdk

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/webtest"
)

// timeLines reads lines from r until end says one is the last; isChunk
// says which are text chunks.
func timeLines(r *bufio.Reader, start time.Time, isChunk, end func([]byte) bool) (webtest.TurnTimes, error) {
	var first, last time.Time
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return webtest.TurnTimes{}, fmt.Errorf("reading the turn after %d chunks: %w", n, err)
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
	tt := webtest.TurnTimes{First: first.Sub(start), N: n}
	if n > 1 {
		tt.Chunk = last.Sub(first) / time.Duration(n-1)
	}
	return tt, nil
}

// webTurn POSTs body to url and times the SSE stream's text chunks.
func webTurn(client *http.Client, url string, body []byte, chunk, end []byte) (webtest.TurnTimes, error) {
	start := time.Now()
	resp, err := client.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return webtest.TurnTimes{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return webtest.TurnTimes{}, fmt.Errorf("POST: %d %s", resp.StatusCode, msg)
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
	ws := startServer(b, webtest.StartBridge(b), "")
	url := ws.URL + "/api/chat"
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	chunk, end := []byte(`"type":"text-delta"`), []byte("data: [DONE]")
	if _, err := concurrentChats(client, url, "bench", 100, 1, chunk, end); err != nil {
		b.Fatal(err)
	}
	var all []webtest.TurnTimes
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
	webtest.Report(b, all)
	slices.Sort(walls)
	b.ReportMetric(float64(walls[len(walls)/2].Microseconds())/1000, "round-p50-ms")
}

// concurrentChats runs n chats at once, turns turns each, and returns the
// times of every turn.
func concurrentChats(client *http.Client, url, prefix string, n, turns int, chunk, end []byte) ([]webtest.TurnTimes, error) {
	var mu sync.Mutex
	var ts []webtest.TurnTimes
	var errs []error
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprintf("%s-chat%d", prefix, i)
			for turn := range turns {
				body, _ := json.Marshal(map[string]any{"id": id, "messages": []any{webtest.UserMsg(fmt.Sprint("u", turn), fmt.Sprintf("hello %d from %s", turn, id))}})
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
	ws := startServer(t, webtest.StartBridge(t), "")
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
	ts, err := concurrentChats(client, ws.URL+"/api/chat", "t", 100, 2, []byte(`"type":"text-delta"`), []byte("data: [DONE]"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range ts {
		if tt.N != 6 { // "You said: hello N from t-chatI"
			t.Fatalf("a turn streamed %d text chunks, want 6", tt.N)
		}
	}
	if ws.chat.chats.Count() != 100 {
		t.Errorf("%d chats, want 100", ws.chat.chats.Count())
	}
}
