package edge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/acpbridge/acpbridge/translators/mock"
	"github.com/coder/acp-go-sdk"
)

// BenchmarkSessionNew measures session/new over the ACP edge, transcript
// creation (and its fsync) included.
func BenchmarkSessionNew(b *testing.B) {
	h := start(&testing.T{}, b.TempDir())
	h.Initialize(acp.ClientCapabilities{})
	ctx := h.Ctx()
	for b.Loop() {
		if _, err := h.CS.NewSession(ctx, acp.NewSessionRequest{Cwd: "/work", McpServers: []acp.McpServer{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSessionLoad10k measures session/load of a 10,000-message
// transcript, from the request to its response: the transcript read,
// locked and replayed. The client only reads lines, so that its own
// decoding (an editor's business) is not counted.
func BenchmarkSessionLoad10k(b *testing.B) {
	dir := b.TempDir()
	id := writeBigTranscript(b, dir, 10000)
	c := startLines(b, dir)
	c.call(1, `"initialize","params":{"protocolVersion":1}`)
	reqID := 1
	for b.Loop() {
		reqID++
		if n := c.call(reqID, `"session/load","params":{"sessionId":"`+id+`","cwd":"/work","mcpServers":[]}`); n != 10000 {
			b.Fatalf("replayed %d updates, want 10000", n)
		}
		b.StopTimer()
		reqID++
		c.call(reqID, `"session/close","params":{"sessionId":"`+id+`"}`)
		b.StartTimer()
	}
}

// lines is a client that writes requests and counts lines until the
// response, without decoding anything.
type lines struct {
	in  *io.PipeWriter
	out *bufio.Scanner
}

func startLines(b *testing.B, dir string) *lines {
	st, err := persist.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	m, err := bridge.NewManager(bridge.Config{Backends: []agent.Backend{mock.New()}, Default: "mock",
		Store: st, Persist: bridge.PersistAuto, Logger: testLogger()})
	if err != nil {
		b.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		NewServer(m, "bench", testLogger()).Serve(context.Background(), inR, outW)
		close(done)
	}()
	b.Cleanup(func() { inW.Close(); <-done })
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 16<<20)
	return &lines{in: inW, out: sc}
}

// call sends a request and returns how many lines came before its
// response.
func (l *lines) call(id int, methodAndParams string) int {
	fmt.Fprintf(l.in, `{"jsonrpc":"2.0","id":%d,"method":%s}`+"\n", id, methodAndParams)
	prefix := []byte(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,`, id))
	n := 0
	for l.out.Scan() {
		if bytes.HasPrefix(l.out.Bytes(), prefix) {
			return n
		}
		n++
	}
	return -1
}

// writeBigTranscript stores a conversation of n messages: user prompts,
// agent answers, thoughts and tool calls of typical sizes.
func writeBigTranscript(b *testing.B, dir string, n int) string {
	st, err := persist.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	w, err := st.Create(persist.Header{ID: "big", Agent: "mock", Cwd: "/work", CreatedAt: now, UpdatedAt: now})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	text := "Here is a typical answer of a few sentences, about two hundred bytes long, which is what a short agent message in an editor looks like on average. It mentions code.\n"
	entries := make([]bridge.Entry, n)
	for i := range entries {
		var u acp.SessionUpdate
		switch i % 4 {
		case 0:
			u = acp.UpdateUserMessageText(fmt.Sprintf("prompt %d: please look at the code", i))
		case 1:
			u = acp.UpdateAgentThoughtText("thinking about " + text)
		case 2:
			u = acp.StartToolCall(acp.ToolCallId(fmt.Sprintf("call_%d", i)), "Read /work/main.go", acp.WithStartKind(acp.ToolKindRead),
				acp.WithStartStatus(acp.ToolCallStatusCompleted), acp.WithStartLocations([]acp.ToolCallLocation{{Path: "/work/main.go"}}),
				acp.WithStartContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(text))}))
		default:
			u = acp.UpdateAgentMessageText(text)
		}
		entries[i] = bridge.Entry{Seq: int64(i + 1), Update: u}
	}
	enc, err := bridge.Encode(entries)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Append(enc...); err != nil {
		b.Fatal(err)
	}
	return "big"
}

// BenchmarkSessionList10k measures session/list (first page) over 10,000
// stored sessions in several directories.
func BenchmarkSessionList10k(b *testing.B) {
	dir := b.TempDir()
	writeIndex(b, dir, 10000)
	h := start(&testing.T{}, dir)
	h.Initialize(acp.ClientCapabilities{})
	ctx := h.Ctx()
	for b.Loop() {
		resp, err := h.CS.ListSessions(ctx, acp.ListSessionsRequest{})
		if err != nil || len(resp.Sessions) != 100 || resp.NextCursor == nil {
			b.Fatalf("list: %d sessions, %v", len(resp.Sessions), err)
		}
	}
}

// writeIndex writes an index of n sessions directly (creating each through
// the store would fsync n times).
func writeIndex(b *testing.B, dir string, n int) {
	os.MkdirAll(filepath.Join(dir, "sessions"), 0o700)
	f, err := os.Create(filepath.Join(dir, "index.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	base := time.Now().UTC()
	for i := range n {
		t := base.Add(-time.Duration(i) * time.Minute)
		h := persist.Header{Version: 1, ID: fmt.Sprintf("session-%05d", i), Agent: []string{"mock", "claude", "codex"}[i%3],
			NativeID: fmt.Sprintf("native-%d", i), Cwd: fmt.Sprintf("/home/u/project%d", i%20),
			Title: "Fix the flaky test in the transcript store", CreatedAt: t, UpdatedAt: t}
		line, _ := json.Marshal(h)
		f.Write(append(line, '\n'))
	}
}
