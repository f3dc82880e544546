package acpagent

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/editortest"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
	"github.com/coder/acp-go-sdk"
)

// The proxy's cost, on the fake agent: how long an update takes from the
// agent's send to the editor, through the bridge and straight from the
// agent (the difference is what the bridge adds, recording the transcript
// included), and what session/new costs either way. Run with
//
//	go test -run '^$' -bench Proxy -benchtime 20x ./translators/acpagent
//
// Each iteration is a turn of updatesPerTurn updates, sent gap apart (so
// that each is timed alone, not behind the others) or, for the burst
// benchmarks, all at once (ns/op over updatesPerTurn is the cost of one
// update when they queue).

const updatesPerTurn = 100

// The turns' prompts: updates spaced out, and a burst.
var (
	spaced = "stamp " + strconv.Itoa(updatesPerTurn) + " 1ms"
	burst  = "stamp " + strconv.Itoa(updatesPerTurn) + " 0s"
)

// latencies collects send-to-receive times of stamped chunks.
type latencies struct {
	mu sync.Mutex
	ds []time.Duration
}

func (l *latencies) observe(n acp.SessionNotification) {
	now := time.Now()
	if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil {
		if sent, err := strconv.ParseInt(c.Content.Text.Text, 10, 64); err == nil {
			l.mu.Lock()
			l.ds = append(l.ds, now.Sub(time.Unix(0, sent)))
			l.mu.Unlock()
		}
	}
}

// report adds p50 and p99 in µs to b.
func (l *latencies) report(b *testing.B, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	slices.Sort(l.ds)
	if len(l.ds) == 0 {
		b.Fatal("no updates arrived")
	}
	at := func(q float64) float64 { return float64(l.ds[int(q*float64(len(l.ds)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), what+"-p50-µs")
	b.ReportMetric(at(0.99), what+"-p99-µs")
}

func BenchmarkProxy_updateThroughTheBridge(b *testing.B)     { throughTheBridge(b, spaced) }
func BenchmarkProxy_updateStraightFromTheAgent(b *testing.B) { straight(b, spaced) }
func BenchmarkProxy_burstThroughTheBridge(b *testing.B)      { throughTheBridge(b, burst) }
func BenchmarkProxy_burstStraightFromTheAgent(b *testing.B)  { straight(b, burst) }

func throughTheBridge(b *testing.B, prompt string) {
	f := newFakeB(b)
	var l latencies
	e := editortest.StartEditor(b, f.backend(), b.TempDir(), bridge.PersistAuto)
	e.Client.OnUpdate = l.observe
	id := e.NewSession(b.TempDir())
	for b.Loop() {
		if _, err := e.Prompt(id, prompt); err != nil {
			b.Fatal(err)
		}
		e.Client.Take()
	}
	l.report(b, "update")
}

func straight(b *testing.B, prompt string) {
	f := newFakeB(b)
	var l latencies
	cs := direct(b, f, &timedClient{observe: l.observe})
	s, err := cs.NewSession(context.Background(), acp.NewSessionRequest{Cwd: b.TempDir(), McpServers: []acp.McpServer{}})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := cs.Prompt(context.Background(), acp.PromptRequest{SessionId: s.SessionId,
			Prompt: []acp.ContentBlock{acp.TextBlock(prompt)}}); err != nil {
			b.Fatal(err)
		}
	}
	l.report(b, "update")
}

func BenchmarkProxy_sessionNewThroughTheBridge(b *testing.B) {
	f := newFakeB(b)
	e := editortest.StartEditor(b, f.backend(), b.TempDir(), bridge.PersistAuto)
	cwd := b.TempDir()
	e.NewSession(cwd) // the agent starts
	for b.Loop() {
		e.NewSession(cwd)
	}
}

func BenchmarkProxy_sessionNewStraightFromTheAgent(b *testing.B) {
	f := newFakeB(b)
	cs := direct(b, f, &timedClient{})
	cwd := b.TempDir()
	for b.Loop() {
		if _, err := cs.NewSession(context.Background(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
			b.Fatal(err)
		}
	}
}

// newFakeB is newFake for a benchmark.
func newFakeB(b *testing.B) *fake {
	dir := b.TempDir()
	return &fake{cleanup: b.Cleanup, dir: dir, env: map[string]string{"FAKE_ACP": "1", "FAKE_ACP_DIR": dir, "GORACE": "atexit_sleep_ms=0"}}
}

// direct runs the fake agent with an SDK client on its pipes, initialized.
func direct(b *testing.B, f *fake, c acp.Client) *acp.ClientSideConnection {
	cmd := exec.Command(nativetest.TestBinary())
	for k, v := range f.env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	cs := acp.NewClientSideConnection(c, in, out)
	if _, err := cs.Initialize(context.Background(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber}); err != nil {
		b.Fatal(err)
	}
	return cs
}

// timedClient is an ACP client that times updates and does nothing else.
type timedClient struct {
	acp.Client
	observe func(acp.SessionNotification)
}

func (c *timedClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if c.observe != nil {
		c.observe(n)
	}
	return nil
}
