// Package editor is an ACP client connected over in-memory pipes to a
// bridge, the way an editor drives one: the one editor harness of the
// tests (editortest starts a bridge behind it; the edge package's own tests
// serve it their server).
package editor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/internal/testkit/acptest"
	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"github.com/coder/acp-go-sdk"
)

// Editor is an ACP client connected over in-memory pipes to a bridge that
// runs one backend, as an editor would be.
type Editor struct {
	T      testing.TB
	CS     *acp.ClientSideConnection
	Client *Client
	Init   acp.InitializeResponse // the bridge's answer to the last Initialize

	stdin  io.WriteCloser
	served chan error
	wire   syncbuf.Buffer // what the bridge wrote, as it wrote it
}

// Wire is every line the bridge wrote to the editor so far, as it wrote
// it: for what the SDK's decoding would hide (unknown fields, kinds it
// does not know, a notification told from a request).
func (e *Editor) Wire() string {
	return e.wire.String()
}

// Serve is a bridge's ACP server: it reads requests from in and writes
// what it sends to out until in ends.
type Serve func(ctx context.Context, in io.Reader, out io.Writer) error

// Connect starts serve and a client connected to it, not yet initialized
// (see Initialize). The bridge stops at the end of the test.
func Connect(t testing.TB, serve Serve) *Editor {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	e := &Editor{T: t, Client: &Client{Option: "allow", Files: map[string]string{}}, stdin: inW, served: make(chan error, 1)}
	go func() {
		e.served <- serve(context.Background(), inR, outW)
		outW.Close()
	}()
	e.CS = acp.NewClientSideConnection(e.Client, inW, io.TeeReader(outR, &e.wire))
	t.Cleanup(e.Stop)
	return e
}

// Initialize initializes the connection for a client that offers caps.
func (e *Editor) Initialize(caps acp.ClientCapabilities) acp.InitializeResponse {
	e.T.Helper()
	resp, err := e.CS.Initialize(e.Ctx(), acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersion(acp.ProtocolVersionNumber), ClientCapabilities: caps})
	if err != nil {
		e.T.Fatal(err)
	}
	e.Init = resp
	return resp
}

// Stop closes the editor's side and waits for the bridge (and so every
// agent process it ran for its sessions) to finish; the bridge must end
// without an error. A second Stop returns at once.
func (e *Editor) Stop() {
	e.stdin.Close()
	select {
	case err := <-e.served:
		if err != nil {
			e.T.Errorf("the bridge ended with %v", err)
		}
		e.served <- nil
	case <-time.After(time.Minute):
		e.T.Error("bridge did not stop")
	}
}

// Ctx is a context for one request.
func (e *Editor) Ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	e.T.Cleanup(cancel)
	return ctx
}

// NewSession makes a session in cwd.
func (e *Editor) NewSession(cwd string) acp.SessionId {
	e.T.Helper()
	return e.NewSessionResponse(cwd).SessionId
}

// NewSessionResponse makes a session in cwd and returns the whole answer.
func (e *Editor) NewSessionResponse(cwd string) acp.NewSessionResponse {
	e.T.Helper()
	s, err := e.CS.NewSession(e.Ctx(), acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
	if err != nil {
		e.T.Fatal(err)
	}
	return s
}

// SetConfig sets a session's config option.
func (e *Editor) SetConfig(id acp.SessionId, option, value string) ([]acp.SessionConfigOption, error) {
	resp, err := e.CS.SetSessionConfigOption(e.Ctx(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: id, ConfigId: acp.SessionConfigId(option), Value: acp.SessionConfigValueId(value)}})
	return resp.ConfigOptions, err
}

// Fork forks a session (session/fork) and returns the new one's id.
func (e *Editor) Fork(id acp.SessionId, cwd string) acp.SessionId {
	e.T.Helper()
	resp, err := e.CS.UnstableForkSession(e.Ctx(), acp.UnstableForkSessionRequest{SessionId: id, Cwd: cwd})
	if err != nil {
		e.T.Fatalf("session/fork: %v", err)
	}
	return resp.SessionId
}

// Load loads a session.
func (e *Editor) Load(id acp.SessionId, cwd string) {
	e.T.Helper()
	if _, err := e.CS.LoadSession(e.Ctx(), acp.LoadSessionRequest{SessionId: id, Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		e.T.Fatal(err)
	}
}

// Prompt sends a text prompt.
func (e *Editor) Prompt(id acp.SessionId, text string) (acp.PromptResponse, error) {
	return e.CS.Prompt(e.Ctx(), acp.PromptRequest{SessionId: id, Prompt: []acp.ContentBlock{acp.TextBlock(text)}})
}

// MustPrompt sends a text prompt, failing the test on an error.
func (e *Editor) MustPrompt(id acp.SessionId, text string) acp.PromptResponse {
	e.T.Helper()
	resp, err := e.Prompt(id, text)
	if err != nil {
		e.T.Fatalf("prompt %q: %v", text, err)
	}
	return resp
}

// Say sends each prompt to session id in turn, failing the test on an
// error.
func (e *Editor) Say(id acp.SessionId, prompts ...string) {
	e.T.Helper()
	for _, p := range prompts {
		e.MustPrompt(id, p)
	}
}

// NativeIDs are the agents' own ids of the sessions session/list shows,
// by the bridge's session id.
func (e *Editor) NativeIDs() map[acp.SessionId]string {
	e.T.Helper()
	list, err := e.CS.ListSessions(e.Ctx(), acp.ListSessionsRequest{})
	if err != nil {
		e.T.Fatal(err)
	}
	out := map[acp.SessionId]string{}
	for _, s := range list.Sessions {
		if m, _ := s.Meta["acpbridge"].(map[string]any); m != nil {
			out[s.SessionId], _ = m["nativeSessionId"].(string)
		}
	}
	return out
}

// EditsThroughEditor sets session id's edits option to editor: the agent's
// file writes come to the client as fs/write_text_file (see Client.Disk).
func (e *Editor) EditsThroughEditor(id acp.SessionId) {
	e.T.Helper()
	if _, err := e.SetConfig(id, bridge.ConfigEdits, bridge.EditsEditor); err != nil {
		e.T.Fatalf("setting edits to editor: %v", err)
	}
}

// CheckWrites checks that the client got exactly want as
// fs/write_text_file requests, and that each file holds the content of its
// last one.
func (e *Editor) CheckWrites(want []Write) {
	e.T.Helper()
	if got := e.Client.Writes(); !slices.Equal(got, want) {
		e.T.Errorf("the editor's writes:\n got %+v\nwant %+v\nconversation:%s", got, want, e.Client.Conversation())
	}
	last := map[string]string{}
	for _, w := range want {
		last[w.Path] = w.Content
	}
	for path, content := range last {
		if b, err := os.ReadFile(path); err != nil || string(b) != content {
			e.T.Errorf("%s holds %q (%v), want the editor's last write %q", path, b, err, content)
		}
	}
}

// WaitFor waits until an update satisfying ok has arrived.
func (e *Editor) WaitFor(ok func(acp.SessionUpdate) bool) {
	e.T.Helper()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		e.Client.mu.Lock()
		for _, n := range e.Client.updates {
			if ok(n.Update) {
				e.Client.mu.Unlock()
				return
			}
		}
		e.Client.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
	}
	e.T.Fatal("the update never came")
}

// Client records updates and answers every permission ask with Option: an
// option id, "kind:allow_once" (say) for the first option of a kind, or
// "cancelled" for the cancelled outcome (the user dismissed the ask); or,
// once SetPolicy gave it one, with its policy.
// Its file system is Files (by path); a terminal runs nothing and outputs
// "ran COMMAND ARGS"; an extension method answers {"pong": its params}.
// Calls records every fs, terminal and extension request, as
// "method sessionId".
type Client struct {
	acp.Client
	Option string

	mu      sync.Mutex
	updates []acp.SessionNotification
	asked   []acp.RequestPermissionRequest
	policy  Policy
	Files   map[string]string
	calls   []string
	terms   map[string]string
	// Elicit, if set, answers elicitation/create (the client must offer
	// elicitation.form at initialize); Elicited keeps what was asked.
	Elicit   func(acp.CreateElicitationRequest) acp.CreateElicitationResponse
	elicited []acp.CreateElicitationRequest
	// OnUpdate, if set, sees each update as it arrives (benchmarks time
	// them); set it before the first session.
	OnUpdate func(acp.SessionNotification)
	// Disk makes fs/write_text_file also write the file to disk, as an
	// editor saving its buffer does; WriteErr makes it fail. Set them
	// before the first session.
	Disk     bool
	WriteErr error
	writes   []Write
}

// Write is one fs/write_text_file the client received, with what the file
// held on disk when it came ("" with Existed false: no file).
type Write struct {
	Path, Content string
	OnDisk        string
	Existed       bool
}

// Writes returns the fs/write_text_file requests so far.
func (c *Client) Writes() []Write {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Write(nil), c.writes...)
}

func (c *Client) record(method string, id acp.SessionId) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, method+" "+string(id))
}

// Calls returns the fs, terminal and extension requests so far.
func (c *Client) Calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.calls...)
}

func (c *Client) ReadTextFile(_ context.Context, r acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	c.record(acp.ClientMethodFsReadTextFile, r.SessionId)
	c.mu.Lock()
	defer c.mu.Unlock()
	text, ok := c.Files[r.Path]
	if !ok {
		return acp.ReadTextFileResponse{}, acp.NewInvalidParams(map[string]any{"error": "no file " + r.Path})
	}
	return acp.ReadTextFileResponse{Content: text}, nil
}

func (c *Client) WriteTextFile(_ context.Context, r acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	c.record(acp.ClientMethodFsWriteTextFile, r.SessionId)
	c.mu.Lock()
	defer c.mu.Unlock()
	w := Write{Path: r.Path, Content: r.Content}
	if b, err := os.ReadFile(r.Path); err == nil {
		w.OnDisk, w.Existed = string(b), true
	}
	c.writes = append(c.writes, w)
	if c.WriteErr != nil {
		return acp.WriteTextFileResponse{}, c.WriteErr
	}
	c.Files[r.Path] = r.Content
	if c.Disk {
		if err := os.WriteFile(r.Path, []byte(r.Content), 0o644); err != nil {
			return acp.WriteTextFileResponse{}, acp.NewInternalError(map[string]any{"error": err.Error()})
		}
	}
	return acp.WriteTextFileResponse{}, nil
}

func (c *Client) CreateTerminal(_ context.Context, r acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	c.record(acp.ClientMethodTerminalCreate, r.SessionId)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.terms == nil {
		c.terms = map[string]string{}
	}
	id := fmt.Sprintf("term-%d", len(c.terms)+1)
	c.terms[id] = strings.TrimSpace("ran " + r.Command + " " + strings.Join(r.Args, " "))
	return acp.CreateTerminalResponse{TerminalId: acp.TerminalId(id)}, nil
}

func (c *Client) TerminalOutput(_ context.Context, r acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	c.record(acp.ClientMethodTerminalOutput, r.SessionId)
	c.mu.Lock()
	defer c.mu.Unlock()
	code := 0
	return acp.TerminalOutputResponse{Output: c.terms[string(r.TerminalId)], ExitStatus: &acp.TerminalExitStatus{ExitCode: &code}}, nil
}

func (c *Client) WaitForTerminalExit(_ context.Context, r acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	c.record(acp.ClientMethodTerminalWaitForExit, r.SessionId)
	code := 0
	return acp.WaitForTerminalExitResponse{ExitCode: &code}, nil
}

func (c *Client) KillTerminal(_ context.Context, r acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	c.record(acp.ClientMethodTerminalKill, r.SessionId)
	return acp.KillTerminalResponse{}, nil
}

func (c *Client) ReleaseTerminal(_ context.Context, r acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	c.record(acp.ClientMethodTerminalRelease, r.SessionId)
	return acp.ReleaseTerminalResponse{}, nil
}

// HandleExtensionMethod answers every extension method with its params.
func (c *Client) HandleExtensionMethod(_ context.Context, method string, params json.RawMessage) (any, error) {
	var p struct {
		SessionID acp.SessionId `json:"sessionId"`
	}
	json.Unmarshal(params, &p)
	c.record(method, p.SessionID)
	return map[string]any{"pong": params}, nil
}

func (c *Client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	if c.OnUpdate != nil {
		c.OnUpdate(n)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n)
	return nil
}

// Policy answers a permission ask.
type Policy func(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)

// Choose is the Policy that answers every ask with the option optionID.
func Choose(optionID string) Policy {
	return func(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(acp.PermissionOptionId(optionID))}, nil
	}
}

// SetPolicy has p answer the permission asks from now on.
func (c *Client) SetPolicy(p Policy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policy = p
}

// CreateElicitation answers a form with Elicit, keeping what was
// asked; without Elicit, the method is not found.
func (c *Client) CreateElicitation(_ context.Context, r acp.CreateElicitationRequest) (acp.CreateElicitationResponse, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.Elicit == nil {
		return acp.CreateElicitationResponse{}, acp.NewMethodNotFound(acp.ClientMethodElicitationCreate)
	}
	c.elicited = append(c.elicited, r)
	return c.Elicit(r), nil
}

// CompleteElicitation takes the end of a URL elicitation; the client asks
// none.
func (c *Client) CompleteElicitation(context.Context, acp.CompleteElicitationNotification) error {
	return nil
}

// Elicited returns the forms the client was asked to fill.
func (c *Client) Elicited() []acp.CreateElicitationRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.elicited)
}

func (c *Client) RequestPermission(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	c.mu.Lock()
	c.asked = append(c.asked, r)
	if p := c.policy; p != nil {
		c.mu.Unlock()
		return p(ctx, r) // outside the lock: a policy may wait
	}
	defer c.mu.Unlock()
	if c.Option == "cancelled" {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	choice := acp.PermissionOptionId(c.Option)
	if kind, ok := strings.CutPrefix(c.Option, "kind:"); ok { // the first option of that kind
		for _, o := range r.Options {
			if string(o.Kind) == kind {
				choice = o.OptionId
				break
			}
		}
	}
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeSelected(choice)}, nil
}

// Take returns the updates so far, of every session, and forgets them.
func (c *Client) Take() []acp.SessionUpdate { return c.take(func(acp.SessionId) bool { return true }) }

// Notifications returns the session/update notifications so far, of every
// session, in the order they came, and keeps them.
func (c *Client) Notifications() []acp.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.updates)
}

// TakeFor returns the updates so far of one session and forgets them.
func (c *Client) TakeFor(id acp.SessionId) []acp.SessionUpdate {
	return c.take(func(s acp.SessionId) bool { return s == id })
}

func (c *Client) take(match func(acp.SessionId) bool) []acp.SessionUpdate {
	c.mu.Lock()
	defer c.mu.Unlock()
	var us []acp.SessionUpdate
	kept := c.updates[:0]
	for _, n := range c.updates {
		if match(n.SessionId) {
			us = append(us, n.Update)
		} else {
			kept = append(kept, n)
		}
	}
	c.updates = kept
	return us
}

// Conversation renders the updates so far and forgets them.
func (c *Client) Conversation() string { return acptest.Conversation(c.Take()) }

// ConversationOf renders the updates so far of one session, and keeps
// them.
func (c *Client) ConversationOf(id acp.SessionId) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var us []acp.SessionUpdate
	for _, n := range c.updates {
		if n.SessionId == id {
			us = append(us, n.Update)
		}
	}
	return acptest.Conversation(us)
}

// Asked is how many permission asks came.
func (c *Client) Asked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.asked)
}

// Asks returns the permission asks so far.
func (c *Client) Asks() []acp.RequestPermissionRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]acp.RequestPermissionRequest(nil), c.asked...)
}

// WithPrompt is a turn's updates as a replay shows them: the prompt first.
func WithPrompt(prompt string, us []acp.SessionUpdate) string {
	return acptest.Conversation(append([]acp.SessionUpdate{acp.UpdateUserMessageText(prompt)}, us...))
}
