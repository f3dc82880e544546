package bridge_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/editortest"
	"github.com/coder/acp-go-sdk"
)

// writerBackend is an agent that writes files itself, as the real ones
// do. A prompt "write PATH CONTENT" announces an edit of PATH, writes it,
// and completes the call; "early PATH OLD NEW" replaces OLD with NEW in
// PATH before announcing the call with that diff (as an agent whose edit
// runs before its event is read); "exec PATH CONTENT" writes PATH from an
// execute call; "client PATH CONTENT" writes PATH through the editor
// itself, as an ACP agent may.
type writerBackend struct{}

func (writerBackend) Info() agent.Info { return agent.Info{Name: "writer", Title: "Writer"} }
func (writerBackend) Close() error     { return nil }

func (writerBackend) Open(_ context.Context, opts agent.OpenOptions, ev agent.Events) (agent.Native, error) {
	return &writerNative{ev: ev, ed: opts.Editor}, nil
}

type writerNative struct {
	ev agent.Events
	ed agent.Editor
}

func (n *writerNative) NativeID() string                                { return "w-1" }
func (n *writerNative) Caps() agent.SessionCaps                         { return agent.SessionCaps{} }
func (n *writerNative) Close() error                                    { return nil }
func (n *writerNative) Config() []agent.ConfigOption                    { return nil }
func (n *writerNative) SetConfig(context.Context, string, string) error { return nil }

func (n *writerNative) Prompt(ctx context.Context, t agent.Turn) (agent.TurnResult, error) {
	f := strings.Fields(t.Prompt[0].Text.Text)
	id := acp.ToolCallId("call-" + f[0])
	done := acp.UpdateToolCall(id, acp.WithUpdateStatus(acp.ToolCallStatusCompleted))
	switch f[0] {
	case "write", "exec":
		kind := acp.ToolKindEdit
		if f[0] == "exec" {
			kind = acp.ToolKindExecute
		}
		n.ev.Update(acp.StartToolCall(id, "Write "+f[1], acp.WithStartKind(kind),
			acp.WithStartLocations([]acp.ToolCallLocation{{Path: f[1]}}), acp.WithStartStatus(acp.ToolCallStatusInProgress)))
		if err := os.WriteFile(f[1], []byte(f[2]), 0o600); err != nil {
			return agent.TurnResult{}, err
		}
	case "client":
		n.ev.Update(acp.StartToolCall(id, "Write "+f[1], acp.WithStartKind(acp.ToolKindEdit),
			acp.WithStartLocations([]acp.ToolCallLocation{{Path: f[1]}})))
		if _, err := n.ed.WriteTextFile(ctx, acp.WriteTextFileRequest{Path: f[1], Content: f[2]}); err != nil {
			return agent.TurnResult{}, err
		}
	case "early":
		b, err := os.ReadFile(f[1])
		if err != nil {
			return agent.TurnResult{}, err
		}
		if err := os.WriteFile(f[1], []byte(strings.Replace(string(b), f[2], f[3], 1)), 0o600); err != nil {
			return agent.TurnResult{}, err
		}
		n.ev.Update(acp.StartToolCall(id, "Edit "+f[1], acp.WithStartKind(acp.ToolKindEdit),
			acp.WithStartContent([]acp.ToolCallContent{acp.ToolDiffContent(f[1], f[3], f[2])})))
	}
	n.ev.Update(done)
	return agent.TurnResult{StopReason: acp.StopReasonEndTurn}, nil
}

func editorWithFiles(t *testing.T) (*editortest.Editor, acp.SessionId) {
	t.Helper()
	e := editortest.StartEditorOffering(t, writerBackend{}, t.TempDir(), bridge.PersistAlways,
		acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}})
	e.Client.Disk = true
	return e, e.NewSession(t.TempDir())
}

func fileText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestEdits_throughTheEditor(t *testing.T) {
	e, id := editorWithFiles(t)
	dir := t.TempDir()
	existing, created := filepath.Join(dir, "a.txt"), filepath.Join(dir, "new.txt")
	if err := os.WriteFile(existing, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}

	e.Say(id, "write "+existing+" agent-wrote-this")
	if w := e.Client.Writes(); len(w) != 0 {
		t.Fatalf("with edits left to the agent, the editor was asked to write %+v", w)
	}

	opts, err := e.SetConfig(id, bridge.ConfigEdits, bridge.EditsEditor)
	if err != nil {
		t.Fatalf("setting edits: %v", err)
	}
	if !slices.ContainsFunc(opts, func(o acp.SessionConfigOption) bool {
		return o.Select != nil && string(o.Select.Id) == bridge.ConfigEdits && string(o.Select.CurrentValue) == bridge.EditsEditor
	}) {
		t.Errorf("the options don't show edits = editor: %+v", opts)
	}
	e.Say(id, "write "+existing+" second")
	e.Say(id, "write "+created+" brand-new")
	want := []editortest.Write{
		{Path: existing, Content: "second", OnDisk: "agent-wrote-this", Existed: true}, // put back, then the editor writes
		{Path: created, Content: "brand-new", Existed: true},                           // emptied until the editor writes it
	}
	if got := e.Client.Writes(); !slices.Equal(got, want) {
		t.Errorf("the editor's writes:\n got %+v\nwant %+v", got, want)
	}
	if got := fileText(t, existing); got != "second" {
		t.Errorf("on disk: %q, want the editor's write", got)
	}
	if fi, err := os.Stat(existing); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the file mode changed: %v %v", fi, err)
	}

	e.Say(id, "early "+existing+" second edited")
	w := e.Client.Writes()
	if last := w[len(w)-1]; last != (editortest.Write{Path: existing, Content: "edited", OnDisk: "second", Existed: true}) {
		t.Errorf("an edit made before it was announced reached the editor as %+v", last)
	}

	e.Say(id, "exec "+existing+" by-a-command")
	if n := len(e.Client.Writes()); n != 3 {
		t.Errorf("a command's write went through the editor (%d writes)", n)
	}

	e.Say(id, "client "+existing+" through-the-client")
	if w := e.Client.Writes(); len(w) != 4 || w[3].Content != "through-the-client" {
		t.Errorf("an agent's own write through the editor was routed again: %+v", w[3:])
	}
}

func TestEdits_editorRefusesTheWrite(t *testing.T) {
	e, id := editorWithFiles(t)
	e.Client.WriteErr = errors.New("read-only buffer")
	path := filepath.Join(t.TempDir(), "a.txt")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := e.SetConfig(id, bridge.ConfigEdits, bridge.EditsEditor); err != nil {
		t.Fatal(err)
	}
	e.Say(id, "write "+path+" kept")
	if got := fileText(t, path); got != "kept" {
		t.Errorf("after the editor refused, the file holds %q, want the agent's content", got)
	}
	if n := len(e.Client.Writes()); n != 1 {
		t.Errorf("the editor was asked %d times", n)
	}
}

func TestEdits_offeredOnlyToAClientThatWritesFiles(t *testing.T) {
	e := editortest.StartEditorOffering(t, writerBackend{}, t.TempDir(), bridge.PersistAlways, acp.ClientCapabilities{})
	resp := e.NewSessionResponse(t.TempDir())
	for _, o := range resp.ConfigOptions {
		if o.Select != nil && o.Select.Id == bridge.ConfigEdits {
			t.Errorf("a client without fs/write_text_file is offered %q", o.Select.Id)
		}
	}
	if _, err := e.SetConfig(resp.SessionId, bridge.ConfigEdits, bridge.EditsEditor); err == nil {
		t.Error("setting edits succeeded for a client that can't write files")
	}
}

func TestEdits_recordedWithTheSession(t *testing.T) {
	state := t.TempDir()
	caps := acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{WriteTextFile: true}}
	e := editortest.StartEditorOffering(t, writerBackend{}, state, bridge.PersistAlways, caps)
	id := e.NewSession(t.TempDir())
	if _, err := e.SetConfig(id, bridge.ConfigEdits, bridge.EditsEditor); err != nil {
		t.Fatal(err)
	}
	e.Stop()
	e = editortest.StartEditorOffering(t, writerBackend{}, state, bridge.PersistAlways, caps)
	e.Client.Disk = true
	e.Load(id, t.TempDir())
	path := filepath.Join(t.TempDir(), "b.txt")
	e.Say(id, "write "+path+" after-restart")
	if w := e.Client.Writes(); len(w) != 1 || w[0].Content != "after-restart" {
		t.Errorf("after a restart the session's edits went %+v, want through the editor", w)
	}
}
