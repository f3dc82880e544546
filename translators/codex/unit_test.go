package codex

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/creachadair/jrpc2/channel"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

func TestVersionless_addsAndStripsTheVersion(t *testing.T) {
	r, w := io.Pipe()
	out, in := io.Pipe()
	var seen []string
	ch := versionless(channel.Line(r, in), func(method string, _ json.RawMessage) { seen = append(seen, method) }, nil)
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
	}, nil)
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
		if _, err := toCodex([]acp.ContentBlock{b}, nil); !errors.Is(err, agent.ErrInvalidParams) {
			t.Errorf("%+v: %v, want ErrInvalidParams", b, err)
		}
	}
}

// Embedded binary files: an image goes as an image; any other file is
// saved where codex can read it and named in the prompt; gone at close.
func TestToCodex_blobs(t *testing.T) {
	png, pdf := "image/png", "application/pdf"
	var files attachments
	items, err := toCodex([]acp.ContentBlock{
		acp.ResourceBlock(acp.EmbeddedResourceResource{BlobResourceContents: &acp.BlobResourceContents{Uri: "file:///w/shot.png", Blob: "aGk=", MimeType: &png}}),
		acp.ResourceBlock(acp.EmbeddedResourceResource{BlobResourceContents: &acp.BlobResourceContents{Uri: "file:///w/spec.pdf", Blob: "JVBERi0=", MimeType: &pdf}}),
	}, &files)
	if err != nil {
		t.Fatal(err)
	}
	if items[0]["type"] != "image" || items[0]["url"] != "data:image/png;base64,aGk=" {
		t.Errorf("image blob: %v", items[0])
	}
	path := filepath.Join(files.dir, "1-spec.pdf") // the image is no file
	if txt, _ := items[1]["text"].(string); !strings.Contains(txt, path) || !strings.Contains(txt, "application/pdf, 5 bytes") {
		t.Errorf("file blob: %v; want it named at %s", items[1], path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "%PDF-" {
		t.Errorf("saved file: %q, %v", b, err)
	}
	files.remove()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the attachment outlived the session: %v", err)
	}
	if _, err := toCodex([]acp.ContentBlock{acp.ResourceBlock(acp.EmbeddedResourceResource{BlobResourceContents: &acp.BlobResourceContents{Uri: "x", Blob: "!!"}})}, &files); !errors.Is(err, agent.ErrInvalidParams) {
		t.Errorf("a blob that is not base64: %v", err)
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
		if got := decision(agentkit.Answer{Outcome: *out}); got != want {
			t.Errorf("decision(%+v) = %s, want %s", *out, got, want)
		}
	}
	if got := decision(agentkit.Answer{Outcome: sel("accept"), Err: errors.New("client gone")}); got != "cancel" {
		t.Errorf("an ask that failed = %s, want cancel", got)
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestModes_configIsTheDefaultAndOverridesAreSentOnce: no policy goes to
// codex until the user picks a mode, then once, with the next turn; and
// config.toml's policy is no longer offered once a preset was sent.
func TestModes_configIsTheDefaultAndOverridesAreSentOnce(t *testing.T) {
	s := newSession(context.Background(), New(Options{}), nil, agent.OpenOptions{Cwd: "/w"}, nil)
	s.thread = "T"
	if got := s.cfg.Get(agent.ConfigMode); got != modeConfig {
		t.Errorf("default mode %q", got)
	}
	p := s.turnParams(nil, nil)
	if _, ok := p["approvalPolicy"]; ok {
		t.Errorf("turn params %v override config.toml without a mode picked", p)
	}
	p = s.turnParams(nil, map[string]string{agent.ConfigMode: "read-only", agent.ConfigModel: "gpt-x", agent.ConfigEffort: "high"})
	if p["approvalPolicy"] != "on-request" || p["model"] != "gpt-x" || p["effort"] != "high" ||
		p["sandboxPolicy"].(map[string]any)["type"] != "readOnly" {
		t.Errorf("turn params after picking: %v", p)
	}
	if p = s.turnParams(nil, nil); len(p) != 2 {
		t.Errorf("the overrides were sent again: %v", p)
	}
	if s.cfg.Offers(agent.ConfigMode, modeConfig) {
		t.Errorf("config.toml's policy is still offered after a preset was sent")
	}
}

// TestModels_modelAndEffortAreSeparateOptions: every listed model is a
// model choice and every effort any of them supports an effort choice.
func TestModels_modelAndEffortAreSeparateOptions(t *testing.T) {
	b := New(Options{})
	setModels(b, `[{"id":"fake-model","displayName":"Fake","isDefault":true,"supportedReasoningEfforts":[{"reasoningEffort":"low"},"high"]},{"id":"other","supportedReasoningEfforts":["medium","high"]},{"id":"secret","hidden":true}]`)
	s := newSession(context.Background(), b, b.modelDocs(), agent.OpenOptions{Cwd: "/w"}, nil)
	got := map[string][]string{}
	current := map[string]string{}
	for _, o := range s.Config() {
		current[o.ID] = o.Current
		for _, c := range o.Choices {
			got[o.ID] = append(got[o.ID], c.Value)
		}
		if !o.NextTurn {
			t.Errorf("option %s applies at once; codex takes it with a turn", o.ID)
		}
	}
	want := map[string][]string{
		agent.ConfigMode:    {modeConfig, "ask", "read-only", "auto", "full-access"},
		agent.ConfigModel:   {"fake-model", "other"},
		agent.ConfigEffort:  {agentkit.EffortDefault, "low", "high", "medium"},
		ConfigCollaboration: {"default", "plan"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("choices (-want +got):\n%s", diff)
	}
	if current[agent.ConfigModel] != "fake-model" || current[agent.ConfigEffort] != agentkit.EffortDefault {
		t.Errorf("current %v, want the default model and effort", current)
	}
}

// TestModels_restoredValuesAreKept: a resumed session keeps the mode,
// model and effort recorded for it.
func TestModels_restoredValuesAreKept(t *testing.T) {
	b := New(Options{})
	setModels(b, `[{"id":"a","isDefault":true,"supportedReasoningEfforts":["low"]},{"id":"b"}]`)
	s := newSession(context.Background(), b, b.modelDocs(), agent.OpenOptions{Cwd: "/w", NativeID: "T",
		Config: map[string]string{agent.ConfigMode: "auto", agent.ConfigModel: "b", agent.ConfigEffort: "low"}}, nil)
	if s.cfg.Get(agent.ConfigMode) != "auto" || s.cfg.Get(agent.ConfigModel) != "b" || s.cfg.Get(agent.ConfigEffort) != "low" {
		t.Errorf("restored options %v", s.Config())
	}
	if s.cfg.Offers(agent.ConfigMode, modeConfig) {
		t.Errorf("config.toml's policy offered for a thread that had a preset")
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
	s := newSession(context.Background(), New(Options{}), nil, agent.OpenOptions{Cwd: "/home/dev/project"}, nil)
	s.history = res.Thread.Turns
	s.at = agentkit.NewAttachment(func(context.Context) (*server, error) { return nil, nil }) // attached, to no server
	s.at.Start(context.Background(), time.Second)
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
	cfg, err := mcpConfig([]acp.McpServer{
		{Stdio: &acp.McpServerStdio{Name: "files", Command: "/bin/mcp-files", Args: []string{"-v"}, Env: []acp.EnvVariable{{Name: "K", Value: "v"}}}},
		{Http: &acp.McpServerHttpInline{Name: "docs", Url: "http://127.0.0.1:9/mcp", Headers: []acp.HttpHeader{{Name: "X-A", Value: "b"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(cfg)
	want := `{"mcp_servers":{"docs":{"http_headers":{"X-A":"b"},"url":"http://127.0.0.1:9/mcp"},"files":{"args":["-v"],"command":"/bin/mcp-files","env":{"K":"v"}}}}`
	if string(got) != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	if _, err := mcpConfig([]acp.McpServer{{Sse: &acp.McpServerSseInline{Name: "old", Url: "http://x", Headers: []acp.HttpHeader{}}}}); !errors.Is(err, agent.ErrInvalidParams) {
		t.Errorf("sse: %v, want ErrInvalidParams", err)
	}
}

// setModels gives b the models of a model/list answer.
func setModels(b *Backend, docs string) {
	b.models.Get(func() ([]modelDoc, error) {
		var ms []modelDoc
		err := json.Unmarshal([]byte(docs), &ms)
		return ms, err
	})
}
