package agentkit

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"
)

func choices(vs ...string) []agent.ConfigValue {
	var cs []agent.ConfigValue
	for _, v := range vs {
		cs = append(cs, agent.ConfigValue{Value: v, Name: v})
	}
	return cs
}

func TestSettings(t *testing.T) {
	s := NewSettings(
		agent.ConfigOption{ID: "mode", Current: "a", Choices: choices("a", "b")},
		agent.ConfigOption{ID: "model", Current: "x", Choices: choices("x", "y")},
	)
	s.Restore(map[string]string{"mode": "b", "model": "gone", "other": "v"})
	if s.Get("mode") != "b" || s.Get("model") != "x" || s.Get("other") != "" {
		t.Errorf("after Restore: %+v", s.Options())
	}
	if !s.Set("mode", "a") || s.Set("mode", "a") || s.Set("nope", "a") {
		t.Errorf("Set should report a change once, and none for an unknown option")
	}
	s.Adopt("model", "z")
	if o, _ := s.Option("model"); o.Current != "z" || len(o.Choices) != 3 {
		t.Errorf("after Adopt: %+v", o)
	}
	opts := s.Options()
	opts[0].Choices[0].Value = "changed"
	if s.Offers("mode", "changed") || !s.Offers("mode", "a") {
		t.Errorf("Options returned the settings' own choices")
	}
	s.Put(agent.ConfigOption{ID: "effort", Current: "low"})
	s.Put(agent.ConfigOption{ID: "mode", Current: "b", Choices: choices("b")})
	s.Remove("model")
	var ids []string
	for _, o := range s.Options() {
		ids = append(ids, o.ID+"="+o.Current)
	}
	if diff := cmp.Diff([]string{"mode=b", "effort=low"}, ids); diff != "" {
		t.Errorf("options (-want +got):\n%s", diff)
	}
}

// turnKey marks a turn context in the tests.
type turnKey struct{}

// Stop gives up on the running turn: the agent is interrupted as on a
// cancel, and Run fails with Stop's error, not the agent's end.
func TestTurns_stopInterruptsAndFails(t *testing.T) {
	ts := NewTurns[string](context.Background())
	interrupted := false
	res, err := Run(context.Background(), ts, nil, TurnSpec[string, int]{
		Ready: func(context.Context) (int, error) { return 1, nil },
		Send: func(context.Context, int) error {
			ts.Stop(errors.New("the provider kept failing"))
			return nil
		},
		Interrupt: func(context.Context, int) error {
			interrupted = true
			ts.End("interrupted")
			return nil
		},
		Outcome: func(context.Context, string) (agent.TurnResult, error) {
			return agent.TurnResult{StopReason: acp.StopReasonCancelled}, nil
		},
	})
	if err == nil || err.Error() != "the provider kept failing" || !interrupted {
		t.Errorf("Run after Stop = %+v, %v (interrupted %v); want Stop's error and an interrupt", res, err, interrupted)
	}
	ts.Stop(errors.New("no turn")) // between turns: nothing to stop
}

func TestTurns_endReachesTheRunningTurnOnly(t *testing.T) {
	ts := NewTurns[string](context.Background())
	if ts.End("stray") {
		t.Errorf("End with no turn running reported a turn")
	}
	if ts.Context() != context.Background() {
		t.Errorf("between turns, asks should use the session's context")
	}
	ctx := context.WithValue(context.Background(), turnKey{}, 1)
	tn := ts.Begin(ctx)
	if ts.Context().Value(turnKey{}) != 1 || tn.Context() != ts.Context() {
		t.Errorf("during a turn, asks should use its context")
	}
	if !ts.End("done") || !ts.End("again") {
		t.Errorf("End during a turn reported none")
	}
	got, err := tn.Wait(func(context.Context) error { t.Error("interrupted a turn that ended"); return nil }, "gone")
	if got != "done" || err != nil {
		t.Errorf("Wait = %q, %v; want the first end", got, err)
	}
	tn.Done()
	if ts.Running() != nil {
		t.Errorf("a turn is still running after Done")
	}
}

func TestTurns_cancelInterruptsAndWaitsForTheEnd(t *testing.T) {
	ts := NewTurns[string](context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	tn := ts.Begin(ctx)
	cancel()
	got, err := tn.Wait(func(ictx context.Context) error {
		if _, ok := ictx.Deadline(); !ok {
			t.Error("interrupt without a deadline")
		}
		go ts.End("interrupted")
		return errors.New("slow ack")
	}, "gone")
	if got != "interrupted" || err == nil {
		t.Errorf("Wait = %q, %v; want the agent's end and the interrupt's error", got, err)
	}
}

func TestTurns_sessionEndingWhileWaitingGivesGone(t *testing.T) {
	life, end := context.WithCancel(context.Background())
	ts := NewTurns[string](life)
	ctx, cancel := context.WithCancel(context.Background())
	tn := ts.Begin(ctx)
	cancel()
	got, _ := tn.Wait(func(context.Context) error { end(); return nil }, "gone")
	if got != "gone" {
		t.Errorf("Wait = %q, want gone", got)
	}
}

func TestRun(t *testing.T) {
	ts := NewTurns[string](context.Background())
	var sent []string
	spec := TurnSpec[string, int]{
		Ready:     func(context.Context) (int, error) { return 7, nil },
		Send:      func(_ context.Context, c int) error { sent = append(sent, "sent"); go ts.End("ok"); return nil },
		Interrupt: func(context.Context, int) error { return nil },
		Outcome: func(_ context.Context, end string) (agent.TurnResult, error) {
			return agent.TurnResult{StopReason: acp.StopReason(end)}, nil
		},
	}
	res, err := Run(context.Background(), ts, nil, spec)
	if err != nil || res.StopReason != "ok" || len(sent) != 1 {
		t.Errorf("Run = %+v, %v after %v", res, err, sent)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	spec.Ready = func(ctx context.Context) (int, error) { return 0, ctx.Err() }
	if res, err := Run(ctx, ts, nil, spec); err != nil || res.StopReason != acp.StopReasonCancelled || len(sent) != 1 {
		t.Errorf("a turn cancelled before it was sent: %+v, %v, sent %v", res, err, sent)
	}
	spec.Ready = func(context.Context) (int, error) { return 0, errors.New("no agent") }
	if _, err := Run(context.Background(), ts, nil, spec); err == nil || err.Error() != "no agent" {
		t.Errorf("a failed start: %v", err)
	}
}

// askEvents answers permission asks when told to, or when ctx ends.
type askEvents struct {
	agent.Events
	asked  chan struct{}
	answer chan string
}

func (e askEvents) RequestPermission(ctx context.Context, _ acp.ToolCallUpdate, _ []acp.PermissionOption) (acp.RequestPermissionOutcome, error) {
	e.asked <- struct{}{}
	select {
	case id := <-e.answer:
		return acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(id)), nil
	case <-ctx.Done():
		return acp.NewRequestPermissionOutcomeCancelled(), nil
	}
}

func TestAsks(t *testing.T) {
	ev := askEvents{asked: make(chan struct{}, 1), answer: make(chan string, 1)}
	as := NewAsks(ev)
	ask := func(key string) chan Answer {
		ch := make(chan Answer, 1)
		go func() { ch <- as.Ask(context.Background(), key, acp.ToolCallUpdate{ToolCallId: "t"}, nil) }()
		<-ev.asked
		return ch
	}
	ch := ask("1")
	ev.answer <- "allow"
	if a := <-ch; a.Chosen() != "allow" || a.Withdrawn {
		t.Errorf("answered ask: %+v", a)
	}
	ch = ask("2")
	as.Withdraw("2")
	if a := <-ch; a.Chosen() != "" || !a.Withdrawn {
		t.Errorf("withdrawn ask: %+v", a)
	}
	ch = ask("3")
	as.WithdrawAll()
	if a := <-ch; !a.Withdrawn {
		t.Errorf("ask after WithdrawAll: %+v", a)
	}
	if (Answer{Outcome: acp.NewRequestPermissionOutcomeSelected("x"), Err: errors.New("gone")}).Chosen() != "" {
		t.Errorf("a failed ask has a choice")
	}
}

func TestAsks_cancelledTurnCancelsTheAsk(t *testing.T) {
	ev := askEvents{asked: make(chan struct{}, 1), answer: make(chan string)}
	as := NewAsks(ev)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	var a Answer
	go func() { defer wg.Done(); a = as.Ask(ctx, "k", acp.ToolCallUpdate{}, nil) }()
	<-ev.asked
	cancel()
	wg.Wait()
	if a.Chosen() != "" || a.Withdrawn {
		t.Errorf("ask of a cancelled turn: %+v; want cancelled and still wanted by the agent", a)
	}
}

func TestLower(t *testing.T) {
	l := Lowering[string]{Agent: "agent", Text: func(s string) string { return s },
		Image: func(img *acp.ContentBlockImage) (string, error) { return "image:" + img.MimeType, nil }}
	got, err := Lower([]acp.ContentBlock{
		acp.TextBlock("look"), acp.ImageBlock("aGk=", "image/png"), acp.ResourceLinkBlock("file:///w/a.go", "file:///w/a.go"),
		{Resource: &acp.ContentBlockResource{Resource: acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{Uri: "file:///w/b.txt", Text: "beta"}}}},
	}, l)
	want := []string{"look", "image:image/png", "[@/w/a.go](file:///w/a.go)", "[@/w/b.txt](file:///w/b.txt)\n<context ref=\"file:///w/b.txt\">\nbeta\n</context>"}
	if err != nil || !cmp.Equal(want, got) {
		t.Errorf("Lower = %q, %v; want %q", got, err, want)
	}
	l.Image = nil
	for what, b := range map[string]acp.ContentBlock{
		"images":   acp.ImageBlock("aGk=", "image/png"),
		"audio":    {Audio: &acp.ContentBlockAudio{Data: "x", MimeType: "audio/wav"}},
		"binary":   {Resource: &acp.ContentBlockResource{Resource: acp.EmbeddedResourceResource{BlobResourceContents: &acp.BlobResourceContents{Uri: "file:///w/c.bin", Blob: "AA=="}}}},
		"unknown":  {},
		"block 1:": acp.AudioBlock("x", "audio/wav"),
	} {
		_, err := Lower([]acp.ContentBlock{acp.TextBlock("first"), b}, l)
		if !errors.Is(err, agent.ErrInvalidParams) || !strings.Contains(err.Error(), "prompt block 1") {
			t.Errorf("%s: %v, want ErrInvalidParams naming block 1", what, err)
		}
	}
}

func TestTools(t *testing.T) {
	tools := Tools{Table: map[string]Describer{
		"Read": func(in Input, cwd string) ToolInfo {
			p := AbsPath(in.Str("path"), cwd)
			return ToolInfo{Kind: acp.ToolKindRead, Title: "Read " + RelPath(p, cwd) + LineRange(in.Num("offset"), in.Num("limit")), Locations: At(p, in.Num("offset"))}
		},
	}}
	in := Input{"path": "src/a.go", "offset": float64(3), "limit": float64(2)}
	got := tools.Describe("Read", in, "/w")
	line := 3
	want := ToolInfo{Name: "Read", Kind: acp.ToolKindRead, Title: "Read src/a.go (3 - 4)", Locations: []acp.ToolCallLocation{{Path: "/w/src/a.go", Line: &line}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Describe (-want +got):\n%s", diff)
	}
	if got := tools.Describe("mcp__docs__search", nil, "/w"); got.Title != "docs: search" || got.Kind != acp.ToolKindOther || got.Name != "mcp__docs__search" {
		t.Errorf("an MCP tool: %+v", got)
	}
	tools.Other = func(name string, _ Input, _ string) ToolInfo { return ToolInfo{Title: "other " + name} }
	if got := tools.Describe("Zap", nil, ""); got.Title != "other Zap" {
		t.Errorf("Other: %+v", got)
	}
	if At("relative.go", 0) != nil || RelPath("/elsewhere/x", "/w") != "/elsewhere/x" {
		t.Errorf("relative locations or paths outside cwd")
	}
	if LineRange(5, 0) != " (from line 5)" || LineRange(0, 9) != "" {
		t.Errorf("LineRange")
	}
	nested := Input{"edits": []any{map[string]any{"old": "a"}, "junk"}, "o": map[string]any{"k": "v"}}
	if es := nested.Objects("edits"); len(es) != 2 || es[0].Str("old") != "a" || es[1] != nil || nested.Object("o").Str("k") != "v" {
		t.Errorf("nested input: %v", es)
	}
}

func TestContentHelpers(t *testing.T) {
	if got := Fence("a ``` b\n", "console"); got != "````console\na ``` b\n````" {
		t.Errorf("Fence = %q", got)
	}
	if Texts("") != nil || Console("") != nil || Diffs("", Edit{New: "x"}) != nil {
		t.Errorf("empty content should be none")
	}
	d := Diffs("/w/f", Edit{New: "n", Created: true}, Edit{Old: "o", New: "n"})
	if d[0].Diff.OldText != nil || *d[1].Diff.OldText != "o" {
		t.Errorf("Diffs %+v", d)
	}
	e := UnifiedEdit("--- a\n+++ b\n@@ -1,2 +1,2 @@\n keep\n-before\n+after\n")
	if e.Old != "keep\nbefore\n" || e.New != "keep\nafter\n" {
		t.Errorf("UnifiedEdit = %+v", e)
	}
	if Capitalize("xhigh") != "Xhigh" || Capitalize("") != "" || Quote("q") != `"q"` || Prefixed(" in ", "") != "" {
		t.Errorf("text helpers")
	}
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"short", 10, "short"}, {"abcdef", 3, "abc…"}, {"añb", 2, "a…"}, {"日本", 4, "日…"}, {"日本", 2, "…"}} {
		if got := Truncate([]byte(c.in), c.n); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q (never half a rune)", c.in, c.n, got, c.want)
		}
	}
}

func TestMCPServers(t *testing.T) {
	servers := []acp.McpServer{
		{Stdio: &acp.McpServerStdio{Name: "files", Command: "/bin/f", Args: []string{"-v"}, Env: []acp.EnvVariable{{Name: "K", Value: "v"}}}},
		{Http: &acp.McpServerHttpInline{Name: "docs", Url: "http://127.0.0.1:1/mcp", Headers: []acp.HttpHeader{{Name: "A", Value: "b"}}}},
		{Sse: &acp.McpServerSseInline{Name: "old", Url: "http://127.0.0.1:1/sse", Headers: []acp.HttpHeader{}}},
	}
	got, err := MCPServers("agent", servers, MCPStdio, MCPHTTP, MCPSSE)
	want := []MCPServer{
		{Name: "files", Transport: MCPStdio, Command: "/bin/f", Args: []string{"-v"}, Env: map[string]string{"K": "v"}},
		{Name: "docs", Transport: MCPHTTP, URL: "http://127.0.0.1:1/mcp", Headers: map[string]string{"A": "b"}},
		{Name: "old", Transport: MCPSSE, URL: "http://127.0.0.1:1/sse", Headers: map[string]string{}},
	}
	if diff := cmp.Diff(want, got); err != nil || diff != "" {
		t.Errorf("MCPServers: %v (-want +got):\n%s", err, diff)
	}
	_, err = MCPServers("agent", servers, MCPStdio, MCPHTTP)
	if !errors.Is(err, agent.ErrInvalidParams) || !strings.Contains(err.Error(), "not sse (old)") {
		t.Errorf("an sse server for an agent without sse: %v", err)
	}
}

func TestExecutable(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "agent-cli")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	t.Setenv("ACPBRIDGE_TEST_AGENT", "")
	if p, err := (Executable{Name: "agent-cli", Env: "ACPBRIDGE_TEST_AGENT"}).Find(); err != nil || p != bin {
		t.Errorf("on PATH: %q, %v", p, err)
	}
	_, err := Executable{Name: "missing-cli", Env: "ACPBRIDGE_TEST_AGENT"}.Find()
	if !errors.Is(err, agent.ErrAgentUnavailable) || !strings.Contains(err.Error(), "ACPBRIDGE_TEST_AGENT") {
		t.Errorf("missing: %v; want ErrAgentUnavailable naming the variable", err)
	}
	t.Setenv("ACPBRIDGE_TEST_AGENT", bin)
	if p, err := (Executable{Name: "missing-cli", Env: "ACPBRIDGE_TEST_AGENT"}).Find(); err != nil || p != bin {
		t.Errorf("from the variable: %q, %v", p, err)
	}
	if _, err := (Executable{Name: "agent-cli", Env: "ACPBRIDGE_TEST_AGENT", Path: filepath.Join(dir, "nope")}).Find(); !errors.Is(err, agent.ErrAgentUnavailable) {
		t.Errorf("a missing Path must not fall back: %v", err)
	}
}

func TestParsePatch(t *testing.T) {
	patch := "*** Begin Patch\n*** Add File: a.txt\n+hello\n*** Update File: b.txt\n*** Move to: c.txt\n@@ func x\n ctx\n-old\n+new\n*** Delete File: d.txt\n*** End Patch\n"
	got := ParsePatch(patch)
	want := []PatchFile{
		{Path: "a.txt", Op: "add", Edit: Edit{New: "hello\n", Created: true}},
		{Path: "b.txt", Op: "update", MoveTo: "c.txt", Edit: Edit{Old: "ctx\nold\n", New: "ctx\nnew\n"}},
		{Path: "d.txt", Op: "delete"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParsePatch (-want +got):\n%s", diff)
	}
	info := PatchEdit(patch, "/w")
	if info.Title != "Edit 3 files" || len(info.Locations) != 3 || len(info.Content) != 2 || info.Locations[1].Path != "/w/c.txt" {
		t.Errorf("PatchEdit = %+v", info)
	}
	if got := PatchEdit("*** Begin Patch\n*** Add File: x/y.go\n+package y\n*** End Patch", "/w").Title; got != "Write x/y.go" {
		t.Errorf("title of one added file = %q", got)
	}
}

// A tool call carries the agent's own name of its tool, from its start to
// its last update; an update that names none leaves it out.
func TestToolInfo_named(t *testing.T) {
	info := ToolInfo{Name: "Bash", Kind: acp.ToolKindExecute, Title: "ls"}
	if u := info.Start("t1", acp.ToolCallStatusPending); u.ToolCall.Name == nil || *u.ToolCall.Name != "Bash" {
		t.Errorf("Start: name %v, want Bash", u.ToolCall.Name)
	}
	if u := info.Refresh("t1"); u.ToolCallUpdate.Name == nil || *u.ToolCallUpdate.Name != "Bash" {
		t.Errorf("Refresh: name %v, want Bash", u.ToolCallUpdate.Name)
	}
	if c := info.Call("t1"); c.Name == nil || *c.Name != "Bash" {
		t.Errorf("Call: name %v, want Bash", c.Name)
	}
	if u := acp.UpdateToolCall("t1", Named("")); u.ToolCallUpdate.Name != nil {
		t.Errorf("Named(\"\"): name %q, want none", *u.ToolCallUpdate.Name)
	}
}

// An agent's environment is the bridge's without acpbridge serve's token;
// the variables its Options give are kept.
func TestCLI_envWithoutToken(t *testing.T) {
	t.Setenv("ACPBRIDGE_TOKEN", "the-token")
	t.Setenv("KEPT", "1")
	env := NewCLI("agent", "", Options{Env: []string{"GIVEN=2"}}).Env()
	for _, kv := range env {
		if strings.HasPrefix(kv, "ACPBRIDGE_TOKEN=") {
			t.Errorf("the agent's environment holds %s", kv)
		}
	}
	if !slices.Contains(env, "KEPT=1") || !slices.Contains(env, "GIVEN=2") {
		t.Errorf("the agent's environment lacks KEPT=1 or GIVEN=2: %q", env)
	}
}
