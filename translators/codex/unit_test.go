package codex

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/acptest"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

func TestVersionless_addsAndStripsTheVersion(t *testing.T) {
	r, w := io.Pipe()
	out, in := io.Pipe()
	var seen []string
	ch := versionless(r, in, func(method string, _ json.RawMessage) { seen = append(seen, method) })
	go func() {
		io.WriteString(w, `{"method":"a","params":{}}`+"\n"+`{"method":"b","params":{}}`+"\n"+`{"id":1,"result":{}}`+"\n")
	}()
	got, err := ch.Recv()
	if err != nil || string(got) != `{"jsonrpc":"2.0","id":1,"result":{}}` {
		t.Errorf("Recv = %s, %v", got, err)
	}
	if strings.Join(seen, ",") != "a,b" {
		t.Errorf("notifications %v, want a,b handled in order before the response", seen)
	}
	go ch.Send([]byte(`{"jsonrpc":"2.0","id":2,"method":"turn/start"}`))
	buf := make([]byte, 100)
	n, _ := out.Read(buf)
	if s := strings.TrimSpace(string(buf[:n])); s != `{"id":2,"method":"turn/start"}` {
		t.Errorf("sent %s", s)
	}
}

func TestToCodex(t *testing.T) {
	items, err := toCodex([]acp.ContentBlock{
		acp.TextBlock("look"), acp.ImageBlock("aGk=", "image/png"), acp.ResourceLinkBlock("a.go", "file:///w/a.go"),
		{Resource: &acp.ContentBlockResource{Resource: acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{Uri: "file:///w/b.txt", Text: "beta"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(items)
	want := `[{"text":"look","text_elements":[],"type":"text"},{"type":"image","url":"data:image/png;base64,aGk="},` +
		`{"text":"[@a.go](file:///w/a.go)","text_elements":[],"type":"text"},` +
		`{"text":"[@/w/b.txt](file:///w/b.txt)\n\u003ccontext ref=\"file:///w/b.txt\"\u003e\nbeta\n\u003c/context\u003e","text_elements":[],"type":"text"}]`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	for _, b := range []acp.ContentBlock{{Audio: &acp.ContentBlockAudio{Data: "x", MimeType: "audio/wav"}}, {}} {
		if _, err := toCodex([]acp.ContentBlock{b}); !errors.Is(err, bridge.ErrInvalidParams) {
			t.Errorf("%+v: %v, want ErrInvalidParams", b, err)
		}
	}
}

func TestDecision(t *testing.T) {
	sel := func(id string) acp.RequestPermissionOutcome {
		return acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(id))
	}
	for out, want := range map[*acp.RequestPermissionOutcome]string{
		ptrTo(sel("accept")): "accept", ptrTo(sel("acceptForSession")): "acceptForSession",
		ptrTo(sel("decline")): "decline", ptrTo(acp.NewRequestPermissionOutcomeCancelled()): "cancel",
	} {
		if got := decision(*out, nil); got != want {
			t.Errorf("decision(%+v) = %s, want %s", *out, got, want)
		}
	}
	if got := decision(sel("accept"), errors.New("client gone")); got != "cancel" {
		t.Errorf("an ask that failed = %s, want cancel", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestModes_configIsTheDefaultAndOverridesAreSentOnce: no policy goes to
// codex until the user picks a mode, then once, with the next turn.
func TestModes_configIsTheDefaultAndOverridesAreSentOnce(t *testing.T) {
	s := newSession(New(Options{}), bridge.OpenOptions{Cwd: "/w"}, nil)
	s.thread = "T"
	if s.Modes().Current != modeConfig {
		t.Errorf("default mode %q", s.Modes().Current)
	}
	p := s.turnParams(nil)
	if _, ok := p["approvalPolicy"]; ok {
		t.Errorf("turn params %v override config.toml without a mode picked", p)
	}
	ctx := context.Background()
	s.SetMode(ctx, "read-only")
	s.SetModel(ctx, "gpt-x/high")
	p = s.turnParams(nil)
	if p["approvalPolicy"] != "on-request" || p["model"] != "gpt-x" || p["effort"] != "high" ||
		p["sandboxPolicy"].(map[string]any)["type"] != "readOnly" {
		t.Errorf("turn params after picking: %v", p)
	}
	if p = s.turnParams(nil); len(p) != 2 {
		t.Errorf("the overrides were sent again: %v", p)
	}
	if err := s.SetMode(ctx, modeConfig); !errors.Is(err, bridge.ErrInvalidParams) {
		t.Errorf("back to config: %v", err)
	}
}

func TestModels_effortsArePickedWithTheModel(t *testing.T) {
	b := New(Options{})
	json.Unmarshal([]byte(`[{"id":"fake-model","displayName":"Fake","supportedReasoningEfforts":[{"reasoningEffort":"low"},"high"]},{"id":"secret","hidden":true}]`), &b.models)
	s := newSession(b, bridge.OpenOptions{Cwd: "/w", Model: "fake-model"}, nil)
	var ids []string
	for _, m := range s.Models().Available {
		ids = append(ids, m.ID)
	}
	if diff := cmp.Diff([]string{"fake-model", "fake-model/low", "fake-model/high"}, ids); diff != "" {
		t.Errorf("models (-want +got):\n%s", diff)
	}
}

func TestHunkTexts(t *testing.T) {
	old, updated := hunkTexts("@@ -1,2 +1,2 @@\n keep\n-before\n+after\n")
	if old != "keep\nbefore\n" || updated != "keep\nafter\n" {
		t.Errorf("old %q, new %q", old, updated)
	}
}

// TestHistory_replaysAResumedThread replays the turns of a real
// thread/resume result.
func TestHistory_replaysAResumedThread(t *testing.T) {
	raw, err := os.ReadFile("testdata/resume_result.json")
	if err != nil {
		t.Fatal(err)
	}
	var res threadResult
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	s := newSession(New(Options{}), bridge.OpenOptions{Cwd: "/home/dev/project"}, nil)
	s.history, s.readyErr = res.Thread.Turns, nil
	close(s.ready)
	us, err := s.History(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := acptest.Conversation(us)
	if !strings.Contains(got, "user: ") || !strings.Contains(got, "agent: ") {
		t.Errorf("history:\n%s", got)
	}
}

// TestMCPConfig pins the config override codex was seen to apply
// (mcpServerStatus/list then lists the server for the thread).
func TestMCPConfig(t *testing.T) {
	cfg := mcpConfig([]acp.McpServer{
		{Stdio: &acp.McpServerStdio{Name: "files", Command: "/bin/mcp-files", Args: []string{"-v"}, Env: []acp.EnvVariable{{Name: "K", Value: "v"}}}},
		{Http: &acp.McpServerHttpInline{Name: "docs", Url: "http://127.0.0.1:9/mcp", Headers: []acp.HttpHeader{{Name: "X-A", Value: "b"}}}},
	})
	got, _ := json.Marshal(cfg)
	want := `{"mcp_servers":{"docs":{"http_headers":{"X-A":"b"},"url":"http://127.0.0.1:9/mcp"},"files":{"args":["-v"],"command":"/bin/mcp-files","env":{"K":"v"}}}}`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if err := checkMCP([]acp.McpServer{{Sse: &acp.McpServerSseInline{Name: "old", Url: "http://x", Headers: []acp.HttpHeader{}}}}); !errors.Is(err, bridge.ErrInvalidParams) {
		t.Errorf("sse: %v, want ErrInvalidParams", err)
	}
}
