package serve

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The web edges' overhead: the same turns of the mock (an answer of about
// a hundred streamed words) over stdio ACP (a client of the same
// Connector on in-memory pipes, reading lines), over POST /api/chat and
// over POST /ag-ui (an HTTP client reading SSE lines on loopback). Each
// reports the p50 and p99 time from sending the prompt to the first text
// chunk (ttfc) and the p50 time per chunk after it (the turn's last chunk
// minus its first, over the chunks between).
//
//	go test ./serve -run '^$' -bench Web -benchtime 200x

// benchPrompt makes the mock answer with about a hundred chunks.
var benchPrompt = "bench " + strings.TrimSpace(strings.Repeat("word ", 100))

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

// rawACP is an ACP client that writes JSON-RPC lines and reads lines,
// decoding only the responses it waits for.
type rawACP struct {
	w  io.WriteCloser
	r  *bufio.Reader
	id int
}

func (c *rawACP) send(method, params string) (int, error) {
	c.id++
	_, err := fmt.Fprintf(c.w, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", c.id, method, params)
	return c.id, err
}

// isResponse tells the response to request id.
func isResponse(line []byte, id int) bool {
	return bytes.HasPrefix(line, []byte(`{"id":`+fmt.Sprint(id)+`,`)) || bytes.Contains(line, []byte(`"id":`+fmt.Sprint(id)+`,"jsonrpc"`)) ||
		bytes.Contains(line, []byte(`"id":`+fmt.Sprint(id)+`,"result"`)) || bytes.Contains(line, []byte(`"id":`+fmt.Sprint(id)+`}`))
}

// call sends a request and returns its response line.
func (c *rawACP) call(method, params string) ([]byte, error) {
	id, err := c.send(method, params)
	if err != nil {
		return nil, err
	}
	for {
		line, err := c.r.ReadBytes('\n')
		if err != nil {
			return nil, err
		}
		if isResponse(line, id) && !bytes.Contains(line, []byte(`"method"`)) {
			return line, nil
		}
	}
}

// BenchmarkWeb_stdioACP is the baseline: the mock's turns over an ACP
// connection of the same Connector, as stdio carries them.
func BenchmarkWeb_stdioACP(b *testing.B) {
	wb := startWebBridge(b)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		wb.connect(b.Context(), inR, outW, "")
		outW.Close()
	}()
	b.Cleanup(func() { inW.Close(); <-done })
	c := &rawACP{w: inW, r: bufio.NewReaderSize(outR, 1<<20)}
	if _, err := c.call("initialize", `{"protocolVersion":1}`); err != nil {
		b.Fatal(err)
	}
	line, err := c.call("session/new", fmt.Sprintf(`{"cwd":%q,"mcpServers":[]}`, b.TempDir()))
	if err != nil {
		b.Fatal(err)
	}
	var resp struct {
		Result struct {
			SessionID string `json:"sessionId"`
		}
	}
	if err := json.Unmarshal(line, &resp); err != nil || resp.Result.SessionID == "" {
		b.Fatalf("session/new: %s %v", line, err)
	}
	params, _ := json.Marshal(map[string]any{"sessionId": resp.Result.SessionID, "prompt": []any{map[string]any{"type": "text", "text": benchPrompt}}})
	isChunk := func(l []byte) bool { return bytes.Contains(l, []byte(`"agent_message_chunk"`)) }
	var ts []turnTimes
	for b.Loop() {
		start := time.Now()
		id, err := c.send("session/prompt", string(params))
		if err != nil {
			b.Fatal(err)
		}
		tt, err := timeLines(c.r, start, isChunk, func(l []byte) bool { return isResponse(l, id) && !bytes.Contains(l, []byte(`"method"`)) })
		if err != nil {
			b.Fatal(err)
		}
		ts = append(ts, tt)
	}
	report(b, ts)
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
	return timeLines(bufio.NewReaderSize(resp.Body, 1<<16), start,
		func(l []byte) bool { return bytes.Contains(l, chunk) }, func(l []byte) bool { return bytes.Contains(l, end) })
}

// BenchmarkWeb_aiSDK is the mock's turns over POST /api/chat.
func BenchmarkWeb_aiSDK(b *testing.B) {
	ws := startWebServer(b, startWebBridge(b), "")
	url := ws.URL + "/api/chat"
	body, _ := json.Marshal(map[string]any{"id": "bench", "messages": []any{userMsg("u1", benchPrompt)}})
	chunk, end := []byte(`"type":"text-delta"`), []byte("data: [DONE]")
	if _, err := webTurn(http.DefaultClient, url, body, chunk, end); err != nil { // the session's start
		b.Fatal(err)
	}
	var ts []turnTimes
	for b.Loop() {
		tt, err := webTurn(http.DefaultClient, url, body, chunk, end)
		if err != nil {
			b.Fatal(err)
		}
		ts = append(ts, tt)
	}
	report(b, ts)
}

// BenchmarkWeb_agui is the mock's turns over POST /ag-ui.
func BenchmarkWeb_agui(b *testing.B) {
	ws := startWebServer(b, startWebBridge(b), "")
	url := ws.URL + "/ag-ui"
	chunk, end := []byte(`"type":"TEXT_MESSAGE_CONTENT"`), []byte(`"type":"RUN_FINISHED"`)
	n := 0
	next := func() []byte {
		n++
		in := runInputOf("bench", fmt.Sprintf("r%d", n), benchPrompt)
		in["messages"] = []any{map[string]any{"id": fmt.Sprintf("u%d", n), "role": "user", "content": benchPrompt}}
		body, _ := json.Marshal(in)
		return body
	}
	if _, err := webTurn(http.DefaultClient, url, next(), chunk, end); err != nil {
		b.Fatal(err)
	}
	var ts []turnTimes
	for b.Loop() {
		tt, err := webTurn(http.DefaultClient, url, next(), chunk, end)
		if err != nil {
			b.Fatal(err)
		}
		ts = append(ts, tt)
	}
	report(b, ts)
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
