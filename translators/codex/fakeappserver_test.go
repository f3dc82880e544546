package codex

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/daemontest"
	"github.com/acpbridge/acpbridge/internal/testkit/fakeresponses"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
)

// TestMain lets the test binary keep a shared app-server's daemon, and play `codex app-server` when FAKE_CODEX is
// set and it is started as `… app-server …`: a scripted JSON-RPC peer on
// stdin/stdout that keeps its threads and turns in memory, for the session
// tests that must run without the real codex.
func TestMain(m *testing.M) {
	daemontest.KeepFromHere() // of the shared app-servers
	if os.Getenv(fakeEnv) != "" && len(os.Args) > 1 && os.Args[1] == "app-server" {
		os.Exit(fakeAppServer(os.Stdin, os.Stdout))
	}
	os.Exit(fakeresponses.Run(m))
}

// The fake's switches, all environment variables.
const (
	fakeEnv       = "FAKE_CODEX"        // play codex app-server
	fakeLogEnv    = "FAKE_CODEX_LOG"    // append every message in and out here, one JSON a line
	fakeStateEnv  = "FAKE_CODEX_STATE"  // mirror the threads into this file, as codex keeps its rollouts on disk
	fakeModelEnv  = "FAKE_CODEX_MODEL"  // the model a new thread runs, as if config.toml said so
	fakeEffortEnv = "FAKE_CODEX_EFFORT" // likewise the reasoning effort
	fakeNoModels  = "FAKE_CODEX_NO_MODELS"
	fakeExitEnv   = "FAKE_CODEX_EXIT" // exit at once, with this on stderr
)

// fakeModels is model/list's answer, shaped like codex 0.169's.
var fakeModels = []map[string]any{
	{"id": "fake-model", "model": "fake-model", "upgrade": nil, "displayName": "Fake Model", "description": "Scripted fake model",
		"hidden": false, "isDefault": true, "defaultReasoningEffort": "medium", "inputModalities": []string{"text", "image"},
		"supportedReasoningEfforts": []any{
			map[string]any{"reasoningEffort": "low", "description": "Fast responses with lighter reasoning"},
			map[string]any{"reasoningEffort": "medium", "description": "Balances speed and reasoning depth for everyday tasks"},
			map[string]any{"reasoningEffort": "high", "description": "Greater reasoning depth for complex problems"},
		}},
	{"id": "fake-fast", "model": "fake-fast", "displayName": "Fake Fast", "description": "Quicker, shallower",
		"hidden": false, "isDefault": false, "defaultReasoningEffort": "low",
		"supportedReasoningEfforts": []any{map[string]any{"reasoningEffort": "minimal"}, map[string]any{"reasoningEffort": "low"}}},
	{"id": "fake-secret", "model": "fake-secret", "displayName": "Secret", "hidden": true, "isDefault": false,
		"supportedReasoningEfforts": []any{map[string]any{"reasoningEffort": "xhigh"}}},
}

// fakeThread is one thread, as codex would keep it in its rollout.
type fakeThread struct {
	ID     string      `json:"id"`
	Cwd    string      `json:"cwd"`
	Model  string      `json:"model"`
	Effort *string     `json:"effort"`
	Turns  []*fakeTurn `json:"turns"`
	Items  int         `json:"items"` // items made so far, for their ids
}

// fakeTurn is one turn of a thread: its items so far and how it ended.
type fakeTurn struct {
	ID     string           `json:"id"`
	Items  []map[string]any `json:"items"`
	Status string           `json:"status"`
	Error  map[string]any   `json:"error"`

	thread *fakeThread
	stop   chan struct{} // closed by turn/interrupt
	once   sync.Once
}

func (t *fakeTurn) interrupt() { t.once.Do(func() { close(t.stop) }) }

func (t *fakeTurn) interrupted() bool {
	select {
	case <-t.stop:
		return true
	default:
		return false
	}
}

// fakeServer is the fake app-server's state.
type fakeServer struct {
	outMu sync.Mutex
	out   *bufio.Writer
	log   *os.File
	start time.Time

	mu      sync.Mutex // protects the fields below
	inited  bool
	seq     int
	threads map[string]*fakeThread
	loaded  map[string]bool             // threads started or resumed by this process
	running map[string]*fakeTurn        // by turn id
	nextReq int                         // server→client request ids count from 0
	pending map[int]chan map[string]any // answers to them
}

func fakeAppServer(in io.Reader, out io.Writer) int {
	if msg := os.Getenv(fakeExitEnv); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		return 2
	}
	f := &fakeServer{out: bufio.NewWriter(out), start: time.Now(), threads: map[string]*fakeThread{},
		running: map[string]*fakeTurn{}, pending: map[int]chan map[string]any{}, loaded: map[string]bool{}}
	if path := os.Getenv(fakeLogEnv); path != "" {
		f.log, _ = os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	}
	f.record("start", map[string]any{"args": os.Args[1:], "pid": os.Getpid()})
	f.load()
	r := bufio.NewReader(in)
	for {
		line, err := r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			f.handle(line)
		}
		if err != nil {
			break
		}
	}
	f.record("exit", nil) // stdin closed: codex exits with 0
	return 0
}

// record logs a message, as the reference transcripts do:
// {"dir":"client->server"|"server->client"|…, "t_ms", "msg"}.
func (f *fakeServer) record(dir string, msg any) {
	if f.log == nil {
		return
	}
	b, _ := json.Marshal(map[string]any{"dir": dir, "t_ms": time.Since(f.start).Milliseconds(), "msg": msg})
	f.log.Write(append(b, '\n'))
}

// send writes one message, without the "jsonrpc" member, as codex does.
func (f *fakeServer) send(msg map[string]any) {
	b, err := json.Marshal(msg)
	if err != nil {
		panic(err)
	}
	f.outMu.Lock()
	defer f.outMu.Unlock()
	f.record("server->client", json.RawMessage(b))
	f.out.Write(append(b, '\n'))
	f.out.Flush()
}

func (f *fakeServer) notify(method string, params map[string]any) {
	f.send(map[string]any{"method": method, "params": params, "emittedAtMs": time.Now().UnixMilli()})
}

func (f *fakeServer) reply(id json.RawMessage, result any) {
	f.send(map[string]any{"id": id, "result": result})
}

func (f *fakeServer) fail(id json.RawMessage, code int, msg string) {
	f.send(map[string]any{"id": id, "error": map[string]any{"code": code, "message": msg}})
}

// newID makes a UUIDv7-looking id, unique across restarts.
func (f *fakeServer) newID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.newIDLocked()
}

// newIDLocked is newID with f.mu held.
func (f *fakeServer) newIDLocked() string {
	f.seq++
	n := f.seq
	now := time.Now().UnixMilli()
	return fmt.Sprintf("%08x-%04x-7%03x-8%03x-%012x", now>>16, now&0xffff, os.Getpid()&0xfff, n&0xfff, n)
}

// handle dispatches one line from the client.
func (f *fakeServer) handle(line []byte) {
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		f.record("client->server", string(line))
		f.send(map[string]any{"id": nil, "error": map[string]any{"code": -32700, "message": "Parse error: " + err.Error()}})
		return
	}
	f.record("client->server", json.RawMessage(line))
	switch {
	case msg.Method == "" && msg.ID != nil: // an answer to one of ours
		var whole map[string]any
		json.Unmarshal(line, &whole)
		id, _ := strconv.Atoi(string(msg.ID))
		f.mu.Lock()
		ch := f.pending[id]
		delete(f.pending, id)
		f.mu.Unlock()
		if ch != nil {
			ch <- whole
		}
		return
	case msg.ID == nil: // a notification: initialized
		return
	}
	f.mu.Lock()
	inited := f.inited
	f.mu.Unlock()
	if !inited && msg.Method != "initialize" {
		f.fail(msg.ID, -32600, "Not initialized")
		return
	}
	var p map[string]any
	json.Unmarshal(msg.Params, &p)
	switch msg.Method {
	case "initialize":
		f.mu.Lock()
		f.inited = true
		f.mu.Unlock()
		f.reply(msg.ID, map[string]any{"userAgent": "acpbridge/0.169.0 (fake; x86_64) (acpbridge; 0.1)", "codexHome": "/fake/.codex",
			"platformFamily": "unix", "platformOs": "linux"})
		f.notify("remoteControl/status/changed", map[string]any{"status": "disabled", "serverName": "fake",
			"installationId": "00000000-0000-0000-0000-000000000000", "environmentId": nil})
	case "model/list":
		if os.Getenv(fakeNoModels) != "" {
			f.fail(msg.ID, -32600, "Invalid request: model/list is unavailable")
			return
		}
		f.reply(msg.ID, map[string]any{"data": fakeModels, "nextCursor": nil})
	case "skills/list":
		f.reply(msg.ID, map[string]any{"data": []any{map[string]any{"cwd": "/w", "errors": []any{}, "skills": []any{
			map[string]any{"name": "lint", "description": "Run the linters", "enabled": true, "path": "/w/.codex/skills/lint/SKILL.md", "scope": "repo"}}}}})
	case "thread/start":
		f.threadStart(msg.ID, p)
	case "thread/resume":
		f.threadResume(msg.ID, p)
	case "thread/fork":
		f.threadFork(msg.ID, p)
	case "thread/read":
		f.threadRead(msg.ID, p)
	case "turn/start":
		f.turnStart(msg.ID, p)
	case "turn/interrupt":
		turnID, _ := p["turnId"].(string)
		f.mu.Lock()
		t := f.running[turnID]
		f.mu.Unlock()
		if t == nil {
			f.fail(msg.ID, -32600, "no active turn "+turnID)
			return
		}
		f.reply(msg.ID, map[string]any{})
		t.interrupt()
	default:
		f.fail(msg.ID, -32600, fmt.Sprintf("Invalid request: unknown variant `%s`", msg.Method))
	}
}

// threadDoc is a thread as thread/start and thread/resume show it.
func (f *fakeServer) threadDoc(th *fakeThread, turns bool) map[string]any {
	now := time.Now().Unix()
	doc := map[string]any{"id": th.ID, "sessionId": th.ID, "forkedFromId": nil, "preview": "", "ephemeral": false,
		"historyMode": "paginated", "modelProvider": "fake", "model": th.Model, "reasoningEffort": th.Effort,
		"createdAt": now, "updatedAt": now, "status": map[string]any{"type": "idle"},
		"path": "/fake/.codex/sessions/rollout-" + th.ID + ".jsonl", "cwd": th.Cwd, "cliVersion": "0.169.0",
		"originator": "acpbridge", "source": "vscode", "name": nil, "turns": []any{}}
	if turns {
		var ts []any
		for _, t := range th.Turns {
			ts = append(ts, map[string]any{"id": t.ID, "items": t.Items, "itemsView": "full", "status": t.Status, "error": t.Error})
		}
		if ts != nil {
			doc["turns"] = ts
		}
	}
	return doc
}

func (f *fakeServer) threadResult(th *fakeThread, p map[string]any, turns bool) map[string]any {
	sandbox := map[string]any{"type": "dangerFullAccess"}
	if s, ok := p["sandbox"].(string); ok {
		sandbox["type"] = map[string]string{"read-only": "readOnly", "workspace-write": "workspaceWrite"}[s]
	}
	return map[string]any{"thread": f.threadDoc(th, turns), "model": th.Model, "modelProvider": "fake", "serviceTier": nil,
		"cwd": th.Cwd, "approvalPolicy": orAny(p["approvalPolicy"], "never"), "approvalsReviewer": "user", "sandbox": sandbox,
		"reasoningEffort": th.Effort}
}

func orAny(v, def any) any {
	if v == nil {
		return def
	}
	return v
}

func (f *fakeServer) threadStart(id json.RawMessage, p map[string]any) {
	th := &fakeThread{ID: f.newID(), Model: "fake-model"}
	th.Cwd, _ = p["cwd"].(string)
	if m := os.Getenv(fakeModelEnv); m != "" {
		th.Model = m
	}
	if m, ok := p["model"].(string); ok && m != "" {
		th.Model = m
	}
	if e := os.Getenv(fakeEffortEnv); e != "" {
		th.Effort = &e
	}
	f.mu.Lock()
	f.threads[th.ID], f.loaded[th.ID] = th, true
	f.mu.Unlock()
	f.save()
	f.reply(id, f.threadResult(th, p, false))
	f.notify("thread/started", map[string]any{"thread": f.threadDoc(th, false)})
}

// threadResume loads a thread this process knows (or its state file
// does) and answers with its turns, as codex 0.169 does by default.
func (f *fakeServer) threadResume(id json.RawMessage, p map[string]any) {
	tid, _ := p["threadId"].(string)
	f.mu.Lock()
	th := f.threads[tid]
	if th != nil {
		f.loaded[tid] = true
		if m, ok := p["model"].(string); ok && m != "" {
			th.Model = m
		}
	}
	var res map[string]any
	if th != nil {
		res = f.threadResult(th, p, true)
	}
	f.mu.Unlock()
	if th == nil {
		f.fail(id, -32600, "no rollout found for thread id "+tid)
		return
	}
	f.notify("deprecationNotice", map[string]any{"summary": "Full-history hydration is deprecated for paginated threads; use `excludeTurns: true`, then page with `thread/turns/list` and `thread/items/list`.", "details": nil})
	f.reply(id, res)
	f.notify("thread/status/changed", map[string]any{"threadId": tid, "status": map[string]any{"type": "idle"}})
}

// threadRead answers a thread this process knows, with its turns if
// asked, without loading it.
func (f *fakeServer) threadRead(id json.RawMessage, p map[string]any) {
	tid, _ := p["threadId"].(string)
	turns, _ := p["includeTurns"].(bool)
	f.mu.Lock()
	th := f.threads[tid]
	var doc map[string]any
	if th != nil {
		doc = f.threadDoc(th, turns)
	}
	f.mu.Unlock()
	if th == nil {
		f.fail(id, -32600, "no rollout found for thread id "+tid)
		return
	}
	f.reply(id, map[string]any{"thread": doc})
}

// threadFork copies a thread this process knows (or its state file
// does) into a new one, loaded, and answers with its turns. Like codex, it
// has no rollout for a thread never prompted.
func (f *fakeServer) threadFork(id json.RawMessage, p map[string]any) {
	tid, _ := p["threadId"].(string)
	f.mu.Lock()
	parent := f.threads[tid]
	if parent == nil || len(parent.Turns) == 0 {
		f.mu.Unlock()
		f.fail(id, -32600, "no rollout found for thread id "+tid)
		return
	}
	th := &fakeThread{ID: f.newIDLocked(), Cwd: parent.Cwd, Model: parent.Model, Effort: parent.Effort, Items: parent.Items}
	for _, t := range parent.Turns {
		th.Turns = append(th.Turns, &fakeTurn{ID: t.ID, Items: slices.Clone(t.Items), Status: t.Status, Error: t.Error, thread: th})
	}
	if c, ok := p["cwd"].(string); ok && c != "" {
		th.Cwd = c
	}
	if m, ok := p["model"].(string); ok && m != "" {
		th.Model = m
	}
	f.threads[th.ID], f.loaded[th.ID] = th, true
	res := f.threadResult(th, p, true)
	res["thread"].(map[string]any)["forkedFromId"] = tid
	f.mu.Unlock()
	f.save()
	f.reply(id, res)
	f.notify("thread/started", map[string]any{"thread": f.threadDoc(th, false)})
}

func (f *fakeServer) turnStart(id json.RawMessage, p map[string]any) {
	tid, _ := p["threadId"].(string)
	turnID := f.newID()
	f.mu.Lock()
	th := f.threads[tid]
	if th == nil || !f.loaded[tid] {
		f.mu.Unlock()
		f.fail(id, -32600, "thread not found: "+tid)
		return
	}
	if m, ok := p["model"].(string); ok {
		th.Model = m
	}
	if e, ok := p["effort"].(string); ok {
		th.Effort = &e
	}
	t := &fakeTurn{ID: turnID, Status: "inProgress", thread: th, stop: make(chan struct{})}
	th.Turns = append(th.Turns, t)
	f.running[t.ID] = t
	f.mu.Unlock()
	input, _ := p["input"].([]any)
	var text []string
	for _, in := range input {
		if m, ok := in.(map[string]any); ok && m["type"] == "text" {
			text = append(text, m["text"].(string))
		}
	}
	f.reply(id, map[string]any{"turn": map[string]any{"id": t.ID, "rootTurnId": t.ID, "items": []any{}, "itemsView": "notLoaded",
		"status": "inProgress", "error": nil, "startedAt": nil, "completedAt": nil, "durationMs": nil}})
	go f.play(t, input, strings.Join(text, "\n"))
}

// load reads the threads codex would find on disk.
func (f *fakeServer) load() {
	var ths map[string]*fakeThread
	if !nativetest.LoadState(os.Getenv(fakeStateEnv), &ths) {
		return
	}
	for id, th := range ths {
		for _, t := range th.Turns {
			t.thread = th
		}
		f.threads[id] = th
	}
}

// save mirrors the threads to the state file.
func (f *fakeServer) save() {
	if err := nativetest.SaveState(os.Getenv(fakeStateEnv), &f.mu, &f.threads); err != nil {
		fmt.Fprintln(os.Stderr, "fake codex:", err)
	}
}

// ask sends a server→client request and waits for its answer, or for the
// turn to be interrupted (then nil).
func (f *fakeServer) ask(t *fakeTurn, method string, params map[string]any) map[string]any {
	f.mu.Lock()
	id := f.nextReq
	f.nextReq++
	ch := make(chan map[string]any, 1)
	f.pending[id] = ch
	f.mu.Unlock()
	f.send(map[string]any{"method": method, "id": id, "params": params})
	select {
	case ans := <-ch:
		f.notify("serverRequest/resolved", map[string]any{"threadId": params["threadId"], "requestId": id})
		return ans
	case <-t.stop:
		f.mu.Lock()
		delete(f.pending, id)
		f.mu.Unlock()
		f.notify("serverRequest/resolved", map[string]any{"threadId": params["threadId"], "requestId": id})
		return nil
	}
}

// decisionOf reads an approval's answer: its decision, or "error: …".
func decisionOf(ans map[string]any) string {
	if ans == nil {
		return "interrupted"
	}
	if e, ok := ans["error"].(map[string]any); ok {
		return fmt.Sprint("error: ", e["message"])
	}
	res, _ := ans["result"].(map[string]any)
	d, _ := res["decision"].(string)
	return d
}

// turnCtx is what one turn's notifications share.
type turnCtx struct {
	f *fakeServer
	t *fakeTurn
}

func (c *turnCtx) params(kv ...any) map[string]any {
	p := map[string]any{"threadId": c.t.thread.ID, "turnId": c.t.ID}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return p
}

func (c *turnCtx) notify(method string, kv ...any) { c.f.notify(method, c.params(kv...)) }

// itemID makes an id unique in the thread, like the model's call ids.
func (c *turnCtx) itemID(prefix string) string {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.t.thread.Items++
	return fmt.Sprintf("%s_%d", prefix, c.t.thread.Items)
}

// started and completed send an item's lifecycle; completed keeps it in
// the thread's history.
func (c *turnCtx) started(item map[string]any) {
	c.notify("item/started", "item", item, "startedAtMs", time.Now().UnixMilli())
}

func (c *turnCtx) completed(item map[string]any) {
	c.f.mu.Lock()
	c.t.Items = append(c.t.Items, item)
	c.f.mu.Unlock()
	c.notify("item/completed", "item", item, "contentTokenCount", nil, "completedAtMs", time.Now().UnixMilli())
}

// message streams an agent message, word by word.
func (c *turnCtx) message(text string) {
	id := c.itemID("msg")
	c.started(map[string]any{"type": "agentMessage", "id": id, "text": "", "phase": nil})
	for _, w := range strings.SplitAfter(text, " ") {
		c.notify("item/agentMessage/delta", "itemId", id, "delta", w)
	}
	c.completed(map[string]any{"type": "agentMessage", "id": id, "text": text, "phase": nil})
}

func (c *turnCtx) usage() {
	c.notify("thread/tokenUsage/updated", "tokenUsage", map[string]any{
		"total":              map[string]any{"totalTokens": 49, "inputTokens": 42, "cachedInputTokens": 0, "outputTokens": 7, "reasoningOutputTokens": 0},
		"last":               map[string]any{"totalTokens": 49, "inputTokens": 42, "cachedInputTokens": 0, "outputTokens": 7, "reasoningOutputTokens": 0},
		"modelContextWindow": 258400})
	c.f.notify("account/rateLimits/updated", map[string]any{"rateLimits": map[string]any{"limitId": "codex", "primary": nil, "secondary": nil}})
}

// play runs a turn; words in the prompt pick the script:
//
//	approve  a command that needs approval (early: the request before item/started)
//	patch    a file change that needs approval
//	slow     deltas every 10 ms until interrupted
//	fail     an upstream error (internalServerError)
//	unauthorized  a 401, reported by an error notification only
//	crash    the server dies mid-turn (once an approval was answered), with a word on stderr
//	plan     turn/plan/updated
//	think    reasoning deltas first
//	mcp      an MCP tool call whose arguments hold a "jsonrpc" key
//	rename   thread/name/updated
//	question item/tool/requestUserInput, which the bridge does not take
//	browse   web searches
//	askthread:<id>  an approval about another thread
//	offline  retries the model request without end, until interrupted
//	anything else: "Hello from fake model. You said: …"
func (f *fakeServer) play(t *fakeTurn, input []any, text string) {
	c := &turnCtx{f: f, t: t}
	c.f.notify("thread/status/changed", map[string]any{"threadId": t.thread.ID, "status": map[string]any{"type": "active", "activeFlags": []any{}}})
	c.notify("turn/started", "turn", map[string]any{"id": t.ID, "items": []any{}, "status": "inProgress", "error": nil})
	user := map[string]any{"type": "userMessage", "id": f.newID(), "clientId": nil, "content": input}
	c.started(user)
	c.completed(user)
	f.save()
	status, errDoc := "completed", map[string]any(nil)
	switch {
	case strings.Contains(text, "crash"):
		// The approval's round trip makes sure that the client has taken
		// turn/start's answer before the server dies: jrpc2 drops an
		// answer read just before EOF (server.call then reports "context canceled", not the exit).
		c.message("partial answer")
		f.ask(t, "item/commandExecution/requestApproval", c.params("itemId", c.itemID("call"), "command", "/bin/bash -lc 'rm -rf build'",
			"cwd", t.thread.Cwd, "commandActions", []any{}))
		f.save()
		fmt.Fprintln(os.Stderr, "fake codex: boom, the model stream broke")
		os.Exit(3)
	case strings.Contains(text, "question"):
		ans := f.ask(t, "item/tool/requestUserInput", c.params("itemId", c.itemID("call"),
			"questions", []any{map[string]any{"id": "q1", "header": "Pick", "question": "Which one?", "options": []any{}}}))
		c.message("My question was answered: " + decisionOf(ans))
	case strings.Contains(text, "browse"):
		for _, it := range []map[string]any{
			{"type": "webSearch", "id": c.itemID("ws"), "query": "acp protocol", "action": map[string]any{"type": "search", "query": "acp protocol"}},
			{"type": "webSearch", "id": c.itemID("ws"), "query": "", "action": map[string]any{"type": "open_page", "url": "https://agentclientprotocol.com"}},
		} {
			c.started(it)
			c.completed(it)
		}
		c.message("Browsed.")
	case strings.Contains(text, "slow"):
		id := c.itemID("msg")
		c.started(map[string]any{"type": "agentMessage", "id": id, "text": ""})
		for i := 0; i < 6000 && !t.interrupted(); i++ { // a minute at most
			c.notify("item/agentMessage/delta", "itemId", id, "delta", fmt.Sprintf("tick %d. ", i))
			select {
			case <-t.stop:
			case <-time.After(10 * time.Millisecond):
			}
		}
		// An interrupted message never completes.
	case strings.Contains(text, "offline"): // codex retries an unreachable provider without end
		for i := 1; i <= 500 && !t.interrupted(); i++ {
			c.notify("error", "error", map[string]any{"message": fmt.Sprintf("stream disconnected before completion: error sending request (retry %d)", i),
				"codexErrorInfo": map[string]any{"httpConnectionFailed": map[string]any{"httpStatusCode": nil}}}, "willRetry", true)
			select {
			case <-t.stop:
			case <-time.After(10 * time.Millisecond):
			}
		}
		status = "interrupted"
	case strings.Contains(text, "askthread:"):
		other := strings.Fields(strings.SplitN(text, "askthread:", 2)[1])[0]
		ans := f.ask(t, "item/commandExecution/requestApproval", map[string]any{"threadId": other, "turnId": "", "itemId": "call_x",
			"command": "/bin/bash -lc 'touch x'", "cwd": t.thread.Cwd, "commandActions": []any{}})
		c.message("The approval for the other thread was answered: " + decisionOf(ans))
	case strings.Contains(text, "approve"):
		status = c.command(strings.Contains(text, "early"))
	case strings.Contains(text, "patch"):
		status = c.patch()
	case strings.Contains(text, "unauthorized"):
		c.f.notify("thread/status/changed", map[string]any{"threadId": t.thread.ID, "status": map[string]any{"type": "systemError"}})
		c.notify("error", "error", map[string]any{"message": "unexpected status 401 Unauthorized: Missing bearer or basic authentication in header",
			"codexErrorInfo": "unauthorized", "additionalDetails": nil}, "willRetry", false)
		status = "failed"
	case strings.Contains(text, "fail"):
		e := map[string]any{"message": "We’re currently experiencing high demand, which may cause temporary errors.",
			"codexErrorInfo": "internalServerError", "additionalDetails": nil}
		c.notify("error", "error", map[string]any{"message": "Reconnecting... 1/5", "codexErrorInfo": map[string]any{"responseStreamDisconnected": map[string]any{}}}, "willRetry", true)
		c.notify("error", "error", e, "willRetry", false)
		status, errDoc = "failed", e
	case strings.Contains(text, "plan"):
		c.message("Planning.")
		c.notify("turn/plan/updated", "explanation", "fake plan", "plan", []any{
			map[string]any{"step": "first step", "status": "inProgress"}, map[string]any{"step": "second step", "status": "pending"}})
		c.message("Plan updated.")
	case strings.Contains(text, "think"):
		id := c.itemID("rs")
		c.started(map[string]any{"type": "reasoning", "id": id, "summary": []any{}, "content": []any{}})
		c.notify("item/reasoning/summaryPartAdded", "itemId", id, "summaryIndex", 0)
		c.notify("item/reasoning/summaryTextDelta", "itemId", id, "delta", "Planning ", "summaryIndex", 0)
		c.notify("item/reasoning/summaryTextDelta", "itemId", id, "delta", "the answer.", "summaryIndex", 0)
		c.notify("item/reasoning/summaryPartAdded", "itemId", id, "summaryIndex", 1)
		c.notify("item/reasoning/summaryTextDelta", "itemId", id, "delta", "Checking twice.", "summaryIndex", 1)
		c.completed(map[string]any{"type": "reasoning", "id": id, "summary": []any{"Planning the answer.", "Checking twice."}, "content": []any{}})
		c.message("Thought it through.")
	case strings.Contains(text, "mcp"):
		id := c.itemID("call")
		it := map[string]any{"type": "mcpToolCall", "id": id, "server": "rpc", "tool": "forward", "status": "inProgress",
			"arguments": map[string]any{"jsonrpc": "2.0", "method": "ping", "id": 7}, "result": nil, "error": nil}
		c.started(it)
		done := map[string]any{}
		for k, v := range it {
			done[k] = v
		}
		done["status"], done["result"] = "completed", map[string]any{"content": []any{map[string]any{"type": "text", "text": `{"jsonrpc":"2.0","id":7,"result":"pong"}`}}, "structuredContent": nil}
		c.completed(done)
		c.message("The server said pong.")
	case strings.Contains(text, "rename"):
		c.f.notify("thread/name/updated", map[string]any{"threadId": t.thread.ID, "threadName": "Fake thread"})
		c.message("Renamed.")
	default:
		c.message("Hello from fake model. You said: " + text)
	}
	if t.interrupted() {
		status = "interrupted"
	}
	c.usage()
	f.mu.Lock()
	t.Status, t.Error = status, errDoc
	delete(f.running, t.ID)
	f.mu.Unlock()
	f.save()
	c.f.notify("thread/status/changed", map[string]any{"threadId": t.thread.ID, "status": map[string]any{"type": "idle"}})
	c.f.notify("turn/completed", map[string]any{"threadId": t.thread.ID, "turn": map[string]any{"id": t.ID, "items": []any{},
		"itemsView": "summary", "status": status, "error": errDoc, "durationMs": 5}})
}

// command plays a command that needs approval; it returns the turn's
// status (a cancelled approval interrupts the turn).
func (c *turnCtx) command(early bool) string {
	c.message("I'll run `mkdir -p made` now.")
	id := c.itemID("call")
	actions := []any{map[string]any{"type": "unknown", "command": "mkdir -p made"}}
	it := map[string]any{"type": "commandExecution", "id": id, "command": "/bin/bash -lc 'mkdir -p made'", "cwd": c.t.thread.Cwd,
		"processId": nil, "source": "agent", "status": "inProgress", "commandActions": actions, "aggregatedOutput": nil, "exitCode": nil}
	if !early {
		c.started(it)
	}
	c.f.notify("thread/status/changed", map[string]any{"threadId": c.t.thread.ID, "status": map[string]any{"type": "active", "activeFlags": []any{"waitingOnApproval"}}})
	ans := c.f.ask(c.t, "item/commandExecution/requestApproval", c.params("kind", "command", "itemId", id, "environmentId", "local",
		"command", it["command"], "cwd", c.t.thread.Cwd, "commandActions", actions, "proposedExecpolicyAmendment", []any{"mkdir", "-p", "made"},
		"availableDecisions", []any{"accept", map[string]any{"acceptWithExecpolicyAmendment": map[string]any{"execpolicy_amendment": []any{"mkdir", "-p", "made"}}}, "cancel"}))
	if early {
		c.started(it)
	}
	done := map[string]any{}
	for k, v := range it {
		done[k] = v
	}
	switch d := decisionOf(ans); d {
	case "accept", "acceptForSession":
		c.notify("item/commandExecution/outputDelta", "itemId", id, "delta", "made\n")
		done["status"], done["aggregatedOutput"], done["exitCode"], done["processId"] = "completed", "made\n", 0, "4242"
		c.completed(done)
		c.message("Tool finished. Output was: made (" + d + ")")
	case "decline":
		done["status"] = "declined"
		c.completed(done)
		c.message("The command was declined.")
	default: // cancel, interrupted, or an error answer
		done["status"] = "declined"
		c.completed(done)
		return "interrupted"
	}
	return "completed"
}

// patch plays a file change that needs approval.
func (c *turnCtx) patch() string {
	c.message("Creating hello.txt.")
	id := c.itemID("call")
	path := strings.TrimSuffix(c.t.thread.Cwd, "/") + "/hello.txt"
	changes := []any{map[string]any{"path": path, "kind": map[string]any{"type": "add"}, "diff": "hello from apply_patch\n"}}
	it := map[string]any{"type": "fileChange", "id": id, "changes": changes, "status": "inProgress"}
	c.started(it)
	ans := c.f.ask(c.t, "item/fileChange/requestApproval", c.params("itemId", id, "reason", nil, "grantRoot", nil))
	done := map[string]any{"type": "fileChange", "id": id, "changes": changes, "status": "completed"}
	switch decisionOf(ans) {
	case "accept", "acceptForSession":
		c.completed(done)
		c.notify("turn/diff/updated", "diff", "diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n--- /dev/null\n+++ b/hello.txt\n@@ -0,0 +1 @@\n+hello from apply_patch\n")
		c.message("Tool finished. Output was: A hello.txt")
	case "decline":
		done["status"] = "declined"
		c.completed(done)
		c.message("The patch was declined.")
	default:
		done["status"] = "declined"
		c.completed(done)
		return "interrupted"
	}
	return "completed"
}
