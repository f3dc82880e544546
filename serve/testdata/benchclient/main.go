// Command benchclient is the client side of serve's web benchmarks, run
// as a process of its own as a web client (or an editor) would be: it
// runs turns of the mock over stdio ACP (on its own stdin and stdout),
// over POST /api/chat or over POST /ag-ui, and writes the times of each
// turn's text chunks, as JSON, to -out.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// turn is one turn's times: to its first text chunk, and per chunk after
// it, in microseconds.
type turn struct {
	FirstUS float64 `json:"firstUs"`
	ChunkUS float64 `json:"chunkUs"`
	Chunks  int     `json:"chunks"`
}

var prompt = "bench " + strings.TrimSpace(strings.Repeat("word ", 100))

func main() {
	mode := flag.String("mode", "stdio", "stdio, aisdk or agui")
	url := flag.String("url", "", "the server, for aisdk and agui")
	cwd := flag.String("cwd", "/", "the session's cwd, for stdio")
	n := flag.Int("n", 100, "turns to time, after one more that starts the session")
	out := flag.String("out", "", "where the times go")
	flag.Parse()
	var ts []turn
	var err error
	switch *mode {
	case "stdio":
		ts, err = stdio(*cwd, *n)
	case "aisdk", "agui":
		ts, err = web(*mode, *url, *n)
	default:
		err = fmt.Errorf("unknown mode %q", *mode)
	}
	if err == nil {
		var b []byte
		b, err = json.Marshal(ts)
		if err == nil {
			err = os.WriteFile(*out, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchclient:", err)
		os.Exit(1)
	}
}

// timeLines reads lines until end says one is the last; isChunk says
// which are text chunks.
func timeLines(r *bufio.Reader, start time.Time, isChunk, end func([]byte) bool) (turn, error) {
	var first, last time.Time
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return turn{}, fmt.Errorf("reading a turn after %d chunks: %w", n, err)
		}
		if isChunk(line) {
			now := time.Now()
			if n == 0 {
				first = now
			}
			last, n = now, n+1
		}
		if end(line) {
			break
		}
	}
	t := turn{FirstUS: float64(first.Sub(start).Nanoseconds()) / 1e3, Chunks: n}
	if n > 1 {
		t.ChunkUS = float64(last.Sub(first).Nanoseconds()) / 1e3 / float64(n-1)
	}
	return t, nil
}

// stdio runs n+1 turns over ACP on stdin and stdout.
func stdio(cwd string, n int) ([]turn, error) {
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	id := 0
	send := func(method string, params any) (int, error) {
		id++
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
		_, err := os.Stdout.Write(append(b, '\n'))
		return id, err
	}
	isResponse := func(line []byte, id int) bool {
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Result json.RawMessage `json:"result"`
		}
		return bytes.Contains(line, []byte(`"id":`)) && json.Unmarshal(line, &m) == nil && m.ID != nil && *m.ID == id && m.Method == ""
	}
	call := func(method string, params any) ([]byte, error) {
		id, err := send(method, params)
		if err != nil {
			return nil, err
		}
		for {
			line, err := in.ReadBytes('\n')
			if err != nil {
				return nil, err
			}
			if isResponse(line, id) {
				return line, nil
			}
		}
	}
	if _, err := call("initialize", map[string]any{"protocolVersion": 1}); err != nil {
		return nil, err
	}
	line, err := call("session/new", map[string]any{"cwd": cwd, "mcpServers": []any{}})
	if err != nil {
		return nil, err
	}
	var resp struct {
		Result struct {
			SessionID string `json:"sessionId"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &resp); err != nil || resp.Result.SessionID == "" {
		return nil, fmt.Errorf("session/new: %s", line)
	}
	params := map[string]any{"sessionId": resp.Result.SessionID, "prompt": []any{map[string]any{"type": "text", "text": prompt}}}
	isChunk := func(l []byte) bool { return bytes.Contains(l, []byte(`"agent_message_chunk"`)) }
	var ts []turn
	for i := range n + 1 {
		start := time.Now()
		id, err := send("session/prompt", params)
		if err != nil {
			return nil, err
		}
		t, err := timeLines(in, start, isChunk, func(l []byte) bool { return isResponse(l, id) })
		if err != nil {
			return nil, err
		}
		if i > 0 {
			ts = append(ts, t)
		}
	}
	return ts, nil
}

// web runs n+1 turns over POST /api/chat or POST /ag-ui.
func web(mode, url string, n int) ([]turn, error) {
	var ts []turn
	for i := range n + 1 {
		var body any
		chunk, end := []byte(`"type":"text-delta"`), []byte("data: [DONE]")
		path := "/api/chat"
		if mode == "agui" {
			chunk, end, path = []byte(`"type":"TEXT_MESSAGE_CONTENT"`), []byte(`"type":"RUN_FINISHED"`), "/ag-ui"
			body = map[string]any{"threadId": "bench", "runId": fmt.Sprint("r", i), "state": map[string]any{}, "tools": []any{}, "context": []any{},
				"messages": []any{map[string]any{"id": fmt.Sprint("u", i), "role": "user", "content": prompt}}}
		} else {
			body = map[string]any{"id": "bench", "trigger": "submit-message",
				"messages": []any{map[string]any{"id": "u", "role": "user", "parts": []any{map[string]any{"type": "text", "text": prompt}}}}}
		}
		b, _ := json.Marshal(body)
		start := time.Now()
		resp, err := http.Post(url+path, "application/json", bytes.NewReader(b))
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			msg, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			return nil, fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, msg)
		}
		t, err := timeLines(bufio.NewReaderSize(resp.Body, 1<<16), start,
			func(l []byte) bool { return bytes.Contains(l, chunk) }, func(l []byte) bool { return bytes.Contains(l, end) })
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if i > 0 {
			ts = append(ts, t)
		}
	}
	return ts, nil
}
