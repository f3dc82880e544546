package opencode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/daemontest"
	"github.com/acpbridge/acpbridge/internal/testkit/nativetest"
)

// TestMain lets the test binary play `opencode serve` when FAKE_OPENCODE is
// set and it is started as `… serve …`: OpenCode's HTTP API on a free
// loopback port, behind HTTP basic authentication, with its sessions in
// memory (and in a state file, as OpenCode keeps them on disk) and a
// scripted model, for the session tests that must run without the real
// opencode.
func TestMain(m *testing.M) {
	daemontest.KeepFromHere() // of the shared servers
	if os.Getenv(fakeEnv) != "" && len(os.Args) > 1 && os.Args[1] == "serve" {
		os.Exit(fakeOpenCode())
	}
	code := m.Run()
	removeSharedHome()
	os.Exit(code)
}

// The fake's switches, all environment variables.
const (
	fakeEnv      = "FAKE_OPENCODE"       // play opencode serve
	fakeLogEnv   = "FAKE_OPENCODE_LOG"   // append every request, event and connection here, one JSON a line
	fakeStateEnv = "FAKE_OPENCODE_STATE" // mirror the sessions into this file, so that a restarted server knows them
	fakeExitEnv  = "FAKE_OPENCODE_EXIT"  // exit at once, with this on stderr
	fakeDropEnv  = "FAKE_OPENCODE_DROP"  // the first event stream drops after this many events
	// fakeEOFEnv makes the server exit when its stdin closes. opencode
	// does not (it waits for SIGTERM, two seconds later in proc.Stop's
	// ladder); the tests set it to spare that wait, except the one that
	// checks the SIGTERM.
	fakeEOFEnv = "FAKE_OPENCODE_EOF"
)

// fakeVersion is the version the fake says it is.
const fakeVersion = "1.18.33"

// The fake's answers to the catalog calls, shaped like opencode 1.18's.
var (
	fakeAgents = []map[string]any{
		{"name": "build", "description": "The default agent. Executes tools based on configured permissions.", "mode": "primary", "native": true,
			"permission": []any{}, "options": map[string]any{}},
		{"name": "plan", "description": "Plan mode. Disallows all edit tools.", "mode": "primary", "native": true,
			"permission": []any{map[string]any{"permission": "edit", "pattern": "*", "action": "deny"}}, "options": map[string]any{}},
		{"name": "general", "description": "General-purpose agent for researching complex questions.", "mode": "subagent", "native": true, "hidden": true,
			"permission": []any{}, "options": map[string]any{}},
		{"name": "compaction", "mode": "primary", "native": true, "hidden": true, "permission": []any{}, "options": map[string]any{}},
	}
	fakeProviders = map[string]any{
		"providers": []any{map[string]any{
			"id": "fake", "name": "Fake (scripted)", "source": "config", "env": []any{}, "options": map[string]any{},
			"models": map[string]any{
				"fake-model": fakeModelDoc("fake-model", "Fake Model", 128000, map[string]any{
					"low": map[string]any{"reasoningEffort": "low"}, "medium": map[string]any{"reasoningEffort": "medium"},
					"high": map[string]any{"reasoningEffort": "high"}}),
				"fake-fast": fakeModelDoc("fake-fast", "Fake Fast", 32000, nil),
			},
		}},
		"default": map[string]any{"fake": "fake-model"},
	}
)

func fakeModelDoc(id, name string, context int, variants map[string]any) map[string]any {
	m := map[string]any{"id": id, "providerID": "fake", "name": name,
		"api":          map[string]any{"id": id, "url": "http://127.0.0.1:18402/v1", "npm": "@ai-sdk/openai-compatible"},
		"capabilities": map[string]any{"temperature": true, "reasoning": true, "attachment": true, "toolcall": true},
		"cost":         map[string]any{"input": 0, "output": 0}, "limit": map[string]any{"context": context, "output": 4096},
		"status": "active", "options": map[string]any{}, "headers": map[string]any{}, "release_date": "2026-01-01"}
	if variants != nil {
		m["variants"] = variants
	}
	return m
}

// fakeSession is one session, as opencode keeps it on disk.
type fakeSession struct {
	ID         string           `json:"id"`
	Directory  string           `json:"directory"`
	Title      string           `json:"title"`
	Permission []map[string]any `json:"permission"` // the rules it was created with
	Agent      string           `json:"agent"`
	Model      map[string]any   `json:"model"`   // {id, providerID, variant}
	Allowed    []string         `json:"allowed"` // patterns the user allowed "always"
	Calls      int              `json:"calls"`   // tool calls made so far, for their ids
	Created    int64            `json:"created"`

	turnMu   sync.Mutex    // one turn at a time: opencode queues a prompt behind the running one
	running  *fakeTurn     // guarded by fakeServer.mu
	prompted chan struct{} // a prompt came; guarded by fakeServer.mu
}

// fakeCommands is what GET /command lists: a built-in and a skill, as the
// real one does.
var fakeCommands = []map[string]any{
	{"name": "init", "description": "guided AGENTS.md setup", "source": "command", "template": "Create AGENTS.md. $ARGUMENTS", "hints": []string{"$ARGUMENTS"}},
	{"name": "customize-opencode", "description": "configure opencode", "source": "skill", "template": "…", "hints": []string{}},
}

// fakeServer is the fake opencode serve's state.
type fakeServer struct {
	start    time.Time
	password string

	logMu sync.Mutex
	log   *os.File

	emitMu sync.Mutex // one event at a time, to the log and every stream in the same order

	mu       sync.Mutex // protects the fields below
	seq      int
	sessions map[string]*fakeSession
	streams  map[string][]*fakeStream       // by directory
	asks     map[string]chan map[string]any // pending permissions and questions by id
	drop     int                            // events the first stream carries before it drops; 0: none
	opened   int                            // event streams opened so far
	mcp      map[string]map[string]any      // MCP servers by directory and name
}

func fakeOpenCode() int {
	if msg := os.Getenv(fakeExitEnv); msg != "" {
		fmt.Fprintln(os.Stderr, msg)
		return 2
	}
	f := &fakeServer{start: time.Now(), password: os.Getenv("OPENCODE_SERVER_PASSWORD"), sessions: map[string]*fakeSession{},
		streams: map[string][]*fakeStream{}, asks: map[string]chan map[string]any{},
		mcp: map[string]map[string]any{}}
	fmt.Sscan(os.Getenv(fakeDropEnv), &f.drop)
	if path := os.Getenv(fakeLogEnv); path != "" {
		f.log, _ = os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	}
	f.load()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake opencode:", err)
		return 1
	}
	url := "http://" + ln.Addr().String()
	f.record("start", map[string]any{"args": os.Args[1:], "pid": os.Getpid(), "url": url})
	go (&http.Server{Handler: f.routes()}).Serve(ln)
	fmt.Println("opencode server listening on " + url)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	eof := make(chan struct{})
	if os.Getenv(fakeEOFEnv) != "" {
		go func() {
			io.Copy(io.Discard, os.Stdin)
			close(eof)
		}()
	}
	select {
	case s := <-sig:
		f.record("exit", map[string]any{"signal": s.String()})
	case <-eof:
		f.record("exit", map[string]any{"stdin": "closed"})
	}
	return 0
}

// record logs one thing: {"dir": "start"|"request"|"refused"|"error"|"event"|"connect"|"disconnect"|"exit", "t_ms", "msg"}.
func (f *fakeServer) record(dir string, msg any) {
	if f.log == nil {
		return
	}
	b, _ := json.Marshal(map[string]any{"dir": dir, "t_ms": time.Since(f.start).Milliseconds(), "msg": msg})
	f.logMu.Lock()
	defer f.logMu.Unlock()
	f.log.Write(append(b, '\n'))
}

// newID makes an opencode-looking id, unique across restarts.
func (f *fakeServer) newID(prefix string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.newIDLocked(prefix)
}

// newIDLocked is newID with f.mu held.
func (f *fakeServer) newIDLocked(prefix string) string {
	f.seq++
	n := f.seq
	return fmt.Sprintf("%s_%011x%05d%06d", prefix, time.Now().UnixMilli(), os.Getpid()%100000, n)
}

// load reads the sessions opencode would find on disk.
func (f *fakeServer) load() {
	var ss map[string]*fakeSession
	if nativetest.LoadState(os.Getenv(fakeStateEnv), &ss) {
		f.sessions = ss
	}
}

// save mirrors the sessions to the state file.
func (f *fakeServer) save() {
	if err := nativetest.SaveState(os.Getenv(fakeStateEnv), &f.mu, &f.sessions); err != nil {
		fmt.Fprintln(os.Stderr, "fake opencode:", err)
	}
}

// routes is the API, every route behind the password.
func (f *fakeServer) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /global/health", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"healthy": true, "version": fakeVersion})
	})
	mux.HandleFunc("GET /agent", func(w http.ResponseWriter, r *http.Request) { reply(w, fakeAgents) })
	mux.HandleFunc("GET /command", func(w http.ResponseWriter, r *http.Request) { reply(w, fakeCommands) })
	mux.HandleFunc("GET /config/providers", func(w http.ResponseWriter, r *http.Request) { reply(w, fakeProviders) })
	mux.HandleFunc("GET /config", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"$schema": "https://opencode.ai/config.json", "model": "fake/fake-model", "autoupdate": false,
			"permission": map[string]any{}, "agent": map[string]any{}, "mode": map[string]any{}, "plugin": []any{}})
	})
	mux.HandleFunc("GET /event", f.events)
	mux.HandleFunc("POST /session", f.createSession)
	mux.HandleFunc("GET /session/{id}", func(w http.ResponseWriter, r *http.Request) {
		if s := f.session(w, r); s != nil {
			f.mu.Lock()
			doc := s.doc()
			f.mu.Unlock()
			reply(w, doc)
		}
	})
	mux.HandleFunc("PATCH /session/{id}", f.updateSession)
	mux.HandleFunc("POST /session/{id}/fork", f.forkSession)
	mux.HandleFunc("POST /mcp", f.addMCP)
	mux.HandleFunc("POST /instance/dispose", func(w http.ResponseWriter, r *http.Request) { reply(w, true) })
	mux.HandleFunc("POST /session/{id}/prompt_async", f.promptAsync)
	mux.HandleFunc("POST /session/{id}/abort", f.abort)
	mux.HandleFunc("POST /permission/{id}/reply", func(w http.ResponseWriter, r *http.Request) {
		body, ok := f.decode(w, r, "reply", "message")
		if !ok {
			return
		}
		if !slices.Contains([]any{"once", "always", "reject"}, body["reply"]) {
			f.fail(w, r, http.StatusBadRequest, "BadRequest", fmt.Sprintf("invalid reply %v", body["reply"]))
			return
		}
		f.answer(w, r, body)
	})
	mux.HandleFunc("POST /question/{id}/reply", func(w http.ResponseWriter, r *http.Request) {
		body, ok := f.decode(w, r, "answers")
		if !ok {
			return
		}
		if _, ok := body["answers"].([]any); !ok {
			f.fail(w, r, http.StatusBadRequest, "BadRequest", "answers must be an array")
			return
		}
		f.answer(w, r, body)
	})
	mux.HandleFunc("POST /question/{id}/reject", func(w http.ResponseWriter, r *http.Request) {
		if _, ok := f.decode(w, r); ok {
			f.answer(w, r, map[string]any{"rejected": true})
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		f.fail(w, r, http.StatusNotFound, "NotFoundError", "no route "+r.Method+" "+r.URL.Path)
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, password, ok := r.BasicAuth()
		if f.password != "" && (!ok || user != "opencode" || password != f.password) {
			f.record("refused", map[string]any{"method": r.Method, "path": r.URL.Path, "user": user})
			w.Header().Set("WWW-Authenticate", `Basic realm="Secure Area"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		var body any
		if len(b) > 0 {
			if err := json.Unmarshal(b, &body); err != nil {
				body = string(b)
			}
		}
		f.record("request", map[string]any{"method": r.Method, "path": r.URL.Path, "directory": r.URL.Query().Get("directory"),
			"body": body, "contentType": r.Header.Get("Content-Type")})
		mux.ServeHTTP(w, r)
	})
}

func reply(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// fail answers with opencode's error shape, and logs it.
func (f *fakeServer) fail(w http.ResponseWriter, r *http.Request, status int, name, msg string) {
	f.record("error", map[string]any{"method": r.Method, "path": r.URL.Path, "status": status, "name": name, "message": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"name": name, "data": map[string]any{"message": msg}})
}

// decode reads a JSON object body that may hold the keys allowed only, as
// opencode's schemas (additionalProperties: false) demand.
func (f *fakeServer) decode(w http.ResponseWriter, r *http.Request, allowed ...string) (map[string]any, bool) {
	b, _ := io.ReadAll(r.Body)
	body := map[string]any{}
	if len(bytes.TrimSpace(b)) > 0 {
		if err := json.Unmarshal(b, &body); err != nil {
			f.fail(w, r, http.StatusBadRequest, "BadRequest", "malformed JSON: "+err.Error())
			return nil, false
		}
	}
	for k := range body {
		if !slices.Contains(allowed, k) {
			f.fail(w, r, http.StatusBadRequest, "BadRequest", "unrecognized key "+k)
			return nil, false
		}
	}
	return body, true
}

// session is the session the path names, or nil after a 404.
func (f *fakeServer) session(w http.ResponseWriter, r *http.Request) *fakeSession {
	id := r.PathValue("id")
	f.mu.Lock()
	s := f.sessions[id]
	f.mu.Unlock()
	if s == nil {
		f.fail(w, r, http.StatusNotFound, "NotFoundError", "Session not found: "+id)
	}
	return s
}

// doc is the session's Session.Info; f.mu is held.
func (s *fakeSession) doc() map[string]any {
	doc := map[string]any{"id": s.ID, "slug": "fake-slug", "projectID": "0000fake", "directory": s.Directory, "path": "",
		"title": s.Title, "version": fakeVersion, "cost": 0,
		"tokens": map[string]any{"input": 0, "output": 0, "reasoning": 0, "cache": map[string]any{"read": 0, "write": 0}},
		"time":   map[string]any{"created": s.Created, "updated": time.Now().UnixMilli()}}
	if s.Agent != "" {
		doc["agent"] = s.Agent
	}
	if s.Model != nil {
		doc["model"] = s.Model
	}
	return doc
}

func (f *fakeServer) createSession(w http.ResponseWriter, r *http.Request) {
	body, ok := f.decode(w, r, "parentID", "title", "agent", "model", "metadata", "permission", "workspaceID")
	if !ok {
		return
	}
	dir := r.URL.Query().Get("directory")
	now := time.Now()
	s := &fakeSession{ID: f.newID("ses"), Directory: dir, Title: "New session - " + now.UTC().Format(time.RFC3339Nano), Created: now.UnixMilli()}
	if t, ok := body["title"].(string); ok {
		s.Title = t
	}
	if s.Permission, ok = f.permission(w, r, body); !ok {
		return
	}
	f.add(w, s)
}

// permission reads a body's permission rules, failing the request if one
// is malformed.
func (f *fakeServer) permission(w http.ResponseWriter, r *http.Request, body map[string]any) ([]map[string]any, bool) {
	rules, _ := body["permission"].([]any)
	var out []map[string]any
	for _, rule := range rules {
		m, _ := rule.(map[string]any)
		if m == nil || m["permission"] == nil || m["pattern"] == nil || m["action"] == nil || len(m) != 3 {
			f.fail(w, r, http.StatusBadRequest, "BadRequest", fmt.Sprintf("invalid permission rule %v", rule))
			return nil, false
		}
		out = append(out, m)
	}
	return out, true
}

// add keeps a new session, answers with it, and announces it in its
// directory.
func (f *fakeServer) add(w http.ResponseWriter, s *fakeSession) {
	f.mu.Lock()
	f.sessions[s.ID] = s
	doc := s.doc()
	f.mu.Unlock()
	f.save()
	reply(w, doc)
	f.emit(s.Directory, "session.created", map[string]any{"sessionID": s.ID, "info": doc})
	f.emit(s.Directory, "session.updated", map[string]any{"sessionID": s.ID, "info": doc})
}

// forkSession copies a session as opencode 1.18 does: in the parent's
// directory (whatever ?directory= says), titled "… (fork #1)", without
// the parent's permission rules.
func (f *fakeServer) forkSession(w http.ResponseWriter, r *http.Request) {
	parent := f.session(w, r)
	if parent == nil {
		return
	}
	if _, ok := f.decode(w, r, "messageID"); !ok {
		return
	}
	f.mu.Lock()
	s := &fakeSession{ID: f.newIDLocked("ses"), Directory: parent.Directory, Title: parent.Title + " (fork #1)",
		Agent: parent.Agent, Model: parent.Model, Calls: parent.Calls, Created: time.Now().UnixMilli()}
	f.mu.Unlock()
	f.add(w, s)
}

// updateSession changes a session's title or permission rules.
func (f *fakeServer) updateSession(w http.ResponseWriter, r *http.Request) {
	s := f.session(w, r)
	if s == nil {
		return
	}
	body, ok := f.decode(w, r, "title", "metadata", "permission", "time")
	if !ok {
		return
	}
	rules, ok := f.permission(w, r, body)
	if !ok {
		return
	}
	f.mu.Lock()
	if _, set := body["permission"]; set {
		s.Permission = rules
	}
	if t, ok := body["title"].(string); ok {
		s.Title = t
	}
	doc := s.doc()
	f.mu.Unlock()
	f.save()
	reply(w, doc)
	f.emit(s.Directory, "session.updated", map[string]any{"sessionID": s.ID, "info": doc})
}

func (f *fakeServer) addMCP(w http.ResponseWriter, r *http.Request) {
	body, ok := f.decode(w, r, "name", "config")
	if !ok {
		return
	}
	name, _ := body["name"].(string)
	cfg, _ := body["config"].(map[string]any)
	allowed := map[any][]string{"local": {"type", "command", "cwd", "environment", "enabled", "timeout"},
		"remote": {"type", "url", "enabled", "headers", "oauth", "timeout"}}[cfg["type"]]
	if name == "" || allowed == nil {
		f.fail(w, r, http.StatusBadRequest, "BadRequest", "invalid MCP server")
		return
	}
	for k := range cfg {
		if !slices.Contains(allowed, k) {
			f.fail(w, r, http.StatusBadRequest, "BadRequest", "unrecognized key config."+k)
			return
		}
	}
	dir := r.URL.Query().Get("directory")
	f.mu.Lock()
	if f.mcp[dir] == nil {
		f.mcp[dir] = map[string]any{}
	}
	f.mcp[dir][name] = map[string]any{"status": "connected"}
	status := f.mcp[dir]
	f.mu.Unlock()
	reply(w, status)
}

// fakeStream is one client's event stream.
type fakeStream struct {
	mu     sync.Mutex
	w      io.Writer
	rc     *http.ResponseController
	left   int // events it carries before it drops; -1: no limit
	done   chan struct{}
	closed bool
}

// send writes one event, unless the stream has ended.
func (st *fakeStream) send(b []byte) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed {
		return
	}
	_, err := fmt.Fprintf(st.w, "data: %s\n\n", b)
	if err == nil {
		err = st.rc.Flush()
	}
	if st.left > 0 {
		st.left--
	}
	if err != nil || st.left == 0 {
		st.closed = true
		close(st.done)
	}
}

// events serves GET /event: server.connected, then every event of the
// directory's instance.
func (f *fakeServer) events(w http.ResponseWriter, r *http.Request) {
	dir := r.URL.Query().Get("directory")
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	st := &fakeStream{w: w, rc: http.NewResponseController(w), left: -1, done: make(chan struct{})}
	f.mu.Lock()
	f.opened++
	n := f.opened
	if n == 1 && f.drop > 0 {
		st.left = f.drop
	}
	f.mu.Unlock()
	f.record("connect", map[string]any{"directory": dir, "stream": n})
	f.emitMu.Lock()
	b := f.event(dir, "server.connected", map[string]any{})
	st.send(b)
	f.mu.Lock()
	f.streams[dir] = append(f.streams[dir], st)
	f.mu.Unlock()
	f.emitMu.Unlock()
	dropped := false
	select {
	case <-st.done:
		dropped = true
	case <-r.Context().Done():
	}
	st.mu.Lock()
	if !st.closed {
		st.closed = true
		close(st.done)
	}
	st.mu.Unlock()
	f.mu.Lock()
	f.streams[dir] = slices.DeleteFunc(f.streams[dir], func(o *fakeStream) bool { return o == st })
	f.mu.Unlock()
	f.record("disconnect", map[string]any{"directory": dir, "stream": n, "dropped": dropped})
}

// event makes and logs an event; emitMu is held.
func (f *fakeServer) event(dir, typ string, props map[string]any) []byte {
	ev := map[string]any{"id": f.newID("evt"), "type": typ, "properties": props}
	b, err := json.Marshal(ev)
	if err != nil {
		panic(err)
	}
	f.record("event", map[string]any{"directory": dir, "event": json.RawMessage(b)})
	return b
}

// emit sends an event to every stream of the directory.
func (f *fakeServer) emit(dir, typ string, props map[string]any) {
	f.emitMu.Lock()
	defer f.emitMu.Unlock()
	b := f.event(dir, typ, props)
	f.mu.Lock()
	streams := slices.Clone(f.streams[dir])
	f.mu.Unlock()
	for _, st := range streams {
		st.send(b)
	}
}

// answer delivers a permission's or a question's answer to the turn
// waiting for it.
func (f *fakeServer) answer(w http.ResponseWriter, r *http.Request, ans map[string]any) {
	id := r.PathValue("id")
	f.mu.Lock()
	ch := f.asks[id]
	delete(f.asks, id)
	f.mu.Unlock()
	if ch == nil {
		f.fail(w, r, http.StatusNotFound, "NotFoundError", "no pending request "+id)
		return
	}
	ch <- ans
	reply(w, true)
}

// fakeTurn is one prompt being played.
type fakeTurn struct {
	f    *fakeServer
	s    *fakeSession
	dir  string
	text string

	agent    string
	model    map[string]any // {providerID, modelID}
	userID   string
	asstID   string
	stop     chan struct{} // closed by an abort
	stopOnce sync.Once
}

func (t *fakeTurn) abort() { t.stopOnce.Do(func() { close(t.stop) }) }

func (f *fakeServer) promptAsync(w http.ResponseWriter, r *http.Request) {
	s := f.session(w, r)
	if s == nil {
		return
	}
	body, ok := f.decode(w, r, "messageID", "model", "agent", "noReply", "tools", "format", "system", "variant", "parts")
	if !ok {
		return
	}
	parts, ok := body["parts"].([]any)
	if !ok {
		f.fail(w, r, http.StatusBadRequest, "BadRequest", "parts must be an array")
		return
	}
	var text []string
	for _, p := range parts {
		if m, _ := p.(map[string]any); m["type"] == "text" {
			s, _ := m["text"].(string)
			text = append(text, s)
		}
	}
	t := &fakeTurn{f: f, s: s, dir: r.URL.Query().Get("directory"), text: strings.Join(text, "\n"), agent: "build",
		model: map[string]any{"providerID": "fake", "modelID": "fake-model"}, stop: make(chan struct{})}
	if a, ok := body["agent"].(string); ok && a != "" {
		t.agent = a
	}
	variant := "default"
	if v, ok := body["variant"].(string); ok && v != "" {
		variant = v
	}
	if m, ok := body["model"].(map[string]any); ok {
		if m["providerID"] == nil || m["modelID"] == nil || len(m) != 2 {
			f.fail(w, r, http.StatusBadRequest, "BadRequest", fmt.Sprintf("invalid model %v", m))
			return
		}
		t.model = m
	}
	f.mu.Lock()
	s.Agent, s.Model = t.agent, map[string]any{"id": t.model["modelID"], "providerID": t.model["providerID"], "variant": variant}
	prompted := s.promptedChan()
	f.mu.Unlock()
	select {
	case prompted <- struct{}{}:
	default:
	}
	if path := replaying(); path != "" {
		w.WriteHeader(http.StatusNoContent)
		go t.replay(path)
		return
	}
	if strings.Contains(t.text, "eager") { // the turn's events come before the answer, which waits for an abort (half a second at most)
		go t.play(parts)
		select {
		case <-t.stop:
		case <-time.After(500 * time.Millisecond):
		}
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.WriteHeader(http.StatusNoContent)
	http.NewResponseController(w).Flush()
	go t.play(parts)
}

// promptedChan is the session's prompted channel; fakeServer.mu is held.
func (s *fakeSession) promptedChan() chan struct{} {
	if s.prompted == nil {
		s.prompted = make(chan struct{}, 1)
	}
	return s.prompted
}

// abort stops the session's running turn; with none, opencode just says
// the session is idle.
func (f *fakeServer) abort(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f.mu.Lock()
	var t *fakeTurn
	dir := ""
	if s := f.sessions[id]; s != nil {
		t, dir = s.running, s.Directory
	}
	f.mu.Unlock()
	if t != nil {
		t.abort()
	} else if dir != "" {
		f.emit(dir, "session.status", map[string]any{"sessionID": id, "status": map[string]any{"type": "idle"}})
		f.emit(dir, "session.idle", map[string]any{"sessionID": id})
	}
	reply(w, true)
}

// emit sends one event of the turn's session.
func (t *fakeTurn) emit(typ string, kv ...any) {
	props := map[string]any{"sessionID": t.s.ID}
	for i := 0; i+1 < len(kv); i += 2 {
		props[kv[i].(string)] = kv[i+1]
	}
	t.f.emit(t.dir, typ, props)
}

func (t *fakeTurn) status(typ string, kv ...any) {
	st := map[string]any{"type": typ}
	for i := 0; i+1 < len(kv); i += 2 {
		st[kv[i].(string)] = kv[i+1]
	}
	t.emit("session.status", "status", st)
}

func (t *fakeTurn) sessionUpdated() {
	t.f.mu.Lock()
	doc := t.s.doc()
	t.f.mu.Unlock()
	t.emit("session.updated", "info", doc)
}

var fakeTokens = map[string]any{"total": 49, "input": 42, "output": 7, "reasoning": 0, "cache": map[string]any{"write": 0, "read": 0}}

// assistant starts a new assistant message.
func (t *fakeTurn) assistant() {
	t.asstID = t.f.newID("msg")
	t.emit("message.updated", "info", t.asstInfo(nil))
	t.part(map[string]any{"type": "step-start", "snapshot": "4dbbb03570c37919a15bf834747bffb2a1feb43a"})
}

func (t *fakeTurn) asstInfo(extra map[string]any) map[string]any {
	info := map[string]any{"id": t.asstID, "parentID": t.userID, "role": "assistant", "mode": t.agent, "agent": t.agent,
		"path": map[string]any{"cwd": t.dir, "root": t.dir}, "cost": 0,
		"tokens":  map[string]any{"input": 0, "output": 0, "reasoning": 0, "cache": map[string]any{"read": 0, "write": 0}},
		"modelID": t.model["modelID"], "providerID": t.model["providerID"], "time": map[string]any{"created": time.Now().UnixMilli()},
		"sessionID": t.s.ID}
	for k, v := range extra {
		info[k] = v
	}
	return info
}

// finish ends the assistant message's step and the message.
func (t *fakeTurn) finish(reason string) {
	t.part(map[string]any{"type": "step-finish", "reason": reason, "snapshot": "4dbbb03570c37919a15bf834747bffb2a1feb43a",
		"tokens": fakeTokens, "cost": 0})
	t.emit("message.updated", "info", t.asstInfo(map[string]any{"tokens": fakeTokens, "finish": reason,
		"time": map[string]any{"created": time.Now().UnixMilli(), "completed": time.Now().UnixMilli()}}))
}

// part sends a part of the assistant message; it returns the part's id.
func (t *fakeTurn) part(p map[string]any) string {
	if p["id"] == nil {
		p["id"] = t.f.newID("prt")
	}
	p["messageID"], p["sessionID"] = t.asstID, t.s.ID
	t.emit("message.part.updated", "part", p, "time", time.Now().UnixMilli())
	return p["id"].(string)
}

// say streams a text or reasoning part word by word.
func (t *fakeTurn) say(kind, text string) {
	id := t.part(map[string]any{"type": kind, "text": "", "time": map[string]any{"start": time.Now().UnixMilli()}})
	for _, w := range strings.SplitAfter(text, " ") {
		t.emit("message.part.delta", "messageID", t.asstID, "partID", id, "field", "text", "delta", w)
	}
	t.part(map[string]any{"id": id, "type": kind, "text": text, "time": map[string]any{"start": time.Now().UnixMilli(), "end": time.Now().UnixMilli()}})
}

// idle ends the turn, as opencode does.
func (t *fakeTurn) idle() {
	t.status("idle")
	t.emit("session.idle")
}

// fail ends the turn with a session error: idle, then idle again once the
// failed message is saved, as opencode does.
func (t *fakeTurn) fail(name string, data map[string]any) {
	errDoc := map[string]any{"name": name, "data": data}
	t.emit("session.error", "error", errDoc)
	t.idle()
	t.emit("message.updated", "info", t.asstInfo(map[string]any{"error": errDoc}))
	t.idle()
}

// aborted ends an aborted turn as opencode does: the error, idle, the
// message's last state, and idle again a little later, which the bridge
// must not take for the end of its next turn (opencode queues that turn
// behind this one). The fake holds that idle until the next prompt came
// (two seconds at most), so that it falls between that prompt and its
// turn, where it is most misleading.
func (t *fakeTurn) abortEnd(partID, text string) {
	t.f.mu.Lock()
	prompted := t.s.promptedChan()
	t.f.mu.Unlock()
	select { // forget this turn's own prompt
	case <-prompted:
	default:
	}
	errDoc := map[string]any{"name": "MessageAbortedError", "data": map[string]any{"message": "Aborted"}}
	t.emit("session.error", "error", errDoc)
	t.idle()
	t.f.mu.Lock()
	t.s.running = nil
	t.f.mu.Unlock()
	if partID != "" {
		t.part(map[string]any{"id": partID, "type": "text", "text": text, "time": map[string]any{"start": time.Now().UnixMilli(), "end": time.Now().UnixMilli()}})
	}
	t.emit("message.updated", "info", t.asstInfo(map[string]any{"error": errDoc}))
	select {
	case <-prompted:
	case <-time.After(2 * time.Second):
	}
	t.idle()
}

// tool sends a tool part's state.
func (t *fakeTurn) tool(partID, name, callID string, state map[string]any) {
	t.part(map[string]any{"id": partID, "type": "tool", "tool": name, "callID": callID, "state": state})
}

// callID makes a tool call id unique in the session, as the model's are.
func (t *fakeTurn) callID() string {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.s.Calls++
	return fmt.Sprintf("call_%d", t.s.Calls)
}

// asks reports whether the session's rules ask before permission.
func (t *fakeTurn) asks(permission, pattern string) bool {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	for _, a := range t.s.Allowed {
		if a == "*" || a == pattern || (strings.HasSuffix(a, "*") && strings.HasPrefix(pattern, strings.TrimSuffix(a, "*"))) {
			return false
		}
	}
	for _, r := range t.s.Permission {
		if r["permission"] == permission && r["action"] == "ask" {
			return true
		}
	}
	return false // opencode allows what no rule asks about
}

// ask sends a permission.asked or question.asked and waits for its
// answer, or for an abort (nil).
func (t *fakeTurn) ask(typ, id string, kv ...any) map[string]any {
	ch := make(chan map[string]any, 1)
	t.f.mu.Lock()
	t.f.asks[id] = ch
	t.f.mu.Unlock()
	t.emit(typ, append([]any{"id", id}, kv...)...)
	select {
	case ans := <-ch:
		return ans
	case <-t.stop:
		select {
		case ans := <-ch: // answered, then aborted: the answer came first (the bridge sends them in turn)
			return ans
		default:
		}
		t.f.mu.Lock()
		delete(t.f.asks, id)
		t.f.mu.Unlock()
		return nil
	}
}

// permission asks for a permission if the rules say so; it returns the
// reply ("once" if not asked), or "" if the turn was aborted.
func (t *fakeTurn) permission(permission, pattern string, always []string, md map[string]any, callID string) string {
	if !t.asks(permission, pattern) {
		return "once"
	}
	id := t.f.newID("per")
	ans := t.ask("permission.asked", id, "permission", permission, "patterns", []string{pattern}, "metadata", md,
		"always", always, "tool", map[string]any{"messageID": t.asstID, "callID": callID})
	if ans == nil {
		t.emit("permission.replied", "requestID", id, "reply", "reject")
		return ""
	}
	r := ans["reply"].(string)
	if r == "always" {
		t.f.mu.Lock()
		t.s.Allowed = append(t.s.Allowed, always...)
		t.f.mu.Unlock()
	}
	t.emit("permission.replied", "requestID", id, "reply", r)
	return r
}

// after is a word's argument: "run: echo hi" → "echo hi".
func after(text, word string) (string, bool) {
	_, rest, ok := strings.Cut(text, word)
	if !ok {
		return "", false
	}
	rest, _, _ = strings.Cut(rest, "\n")
	return strings.TrimSpace(rest), true
}

// play runs a turn; words in the prompt pick the script:
//
//	run: <cmd>     a bash call, which asks for permission
//	write: <file>  a write, which asks for permission with the diff
//	fetch: <url>   a webfetch, which asks for permission
//	ask            a question with two options
//	todo           a todo list (todo.updated)
//	think          a reasoning part first
//	slow           deltas every 50 ms until aborted
//	fail400        the provider refuses the request (APIError 400)
//	authfail       the provider refuses the key (ProviderAuthError)
//	crash          the server dies mid-turn, with a word on stderr
//	retry          two retry statuses before the answer
//	title          the session gets a title
//	switch         the session reports another agent and model
//	epilogue       a todo.updated after the turn's last event
//	eager          prompt_async answers once the turn is aborted (half a second at most)
//	lateinfo       the session.updated after the idle comes after the next prompt
//	anything else: "Hello from fake. You said: …"
func (t *fakeTurn) play(parts []any) {
	s, f := t.s, t.f
	s.turnMu.Lock()
	defer s.turnMu.Unlock()
	f.mu.Lock()
	s.running = t
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		if s.running == t {
			s.running = nil
		}
		f.mu.Unlock()
		f.save()
	}()
	f.save()
	if !strings.Contains(t.text, "eager") {
		// opencode takes a while to start a turn; prompt_async's answer
		// is read by then, which a test that cancels at the turn's first
		// events relies on (see TestFake_cancelBeforePromptAnswered).
		time.Sleep(50 * time.Millisecond)
	}

	t.userID = f.newID("msg")
	t.emit("message.updated", "info", map[string]any{"id": t.userID, "role": "user", "sessionID": s.ID,
		"time": map[string]any{"created": time.Now().UnixMilli()}, "agent": t.agent, "model": t.model})
	for _, p := range parts {
		if m, ok := p.(map[string]any); ok {
			echo := map[string]any{"id": f.newID("prt"), "messageID": t.userID, "sessionID": s.ID}
			for k, v := range m {
				echo[k] = v
			}
			t.emit("message.part.updated", "part", echo, "time", time.Now().UnixMilli())
		}
	}
	t.sessionUpdated()
	t.status("busy")
	text := t.text
	if strings.Contains(text, "retry") {
		for i := 1; i <= 2; i++ {
			t.status("retry", "attempt", i, "message", "Rate limited, the fake says", "next", time.Now().UnixMilli()+10)
		}
		t.status("busy")
	}
	t.assistant()
	switch {
	case strings.Contains(text, "crash"):
		t.say("text", "partial answer")
		fmt.Fprintln(os.Stderr, "fake opencode: boom, the model stream broke")
		os.Exit(3)
	case strings.Contains(text, "fail400"):
		t.fail("APIError", map[string]any{"message": "fake bad request", "statusCode": 400, "isRetryable": false,
			"responseBody": `{"error": {"message": "fake bad request", "type": "invalid_request_error"}}`})
		return
	case strings.Contains(text, "authfail"):
		t.fail("ProviderAuthError", map[string]any{"providerID": "fake", "message": "Invalid API key"})
		return
	}
	if strings.Contains(text, "think") {
		t.say("reasoning", "Thinking about it.")
	}
	answer := "Hello from fake. You said: " + text
	if cmd, ok := after(text, "run:"); ok {
		answer = t.runTool("bash", cmd)
	} else if file, ok := after(text, "write:"); ok {
		answer = t.runTool("write", file)
	} else if url, ok := after(text, "fetch:"); ok {
		answer = t.runTool("webfetch", url)
	} else if strings.Contains(text, "ask") {
		answer = t.question()
	} else if strings.Contains(text, "todo") {
		answer = t.todo()
	} else if strings.Contains(text, "slow") {
		answer = t.slow()
	}
	if answer == "" { // the turn ended early
		return
	}
	if strings.Contains(text, "switch") {
		t.agent, t.model = "plan", map[string]any{"providerID": "fake", "modelID": "fake-fast"}
		f.mu.Lock()
		s.Agent, s.Model = "plan", map[string]any{"id": "fake-fast", "providerID": "fake", "variant": "default"}
		f.mu.Unlock()
		t.sessionUpdated()
	}
	t.say("text", answer)
	if strings.Contains(text, "title") {
		f.mu.Lock()
		s.Title = "Fake title"
		f.mu.Unlock()
		t.sessionUpdated()
	}
	t.finish("stop")
	t.status("busy")
	if strings.Contains(text, "lateinfo") {
		// The session.updated that follows the idle, made then but held
		// until the next prompt came (2 s at most).
		f.mu.Lock()
		prompted := s.promptedChan()
		doc := s.doc()
		f.mu.Unlock()
		select { // forget this turn's own prompt
		case <-prompted:
		default:
		}
		t.idle()
		select {
		case <-prompted:
		case <-time.After(2 * time.Second):
		}
		t.emit("session.updated", "info", doc)
		return
	}
	t.idle()
	t.sessionUpdated()
	if strings.Contains(text, "epilogue") { // an event the client sees after everything of the turn
		t.emit("todo.updated", "todos", []any{map[string]any{"content": "epilogue", "status": "completed", "priority": "low"}})
	}
}

// runTool plays a tool call that may need permission; it returns what the
// model says next, or "" if the turn ended.
func (t *fakeTurn) runTool(name, arg string) string {
	t.say("text", "I'll use "+name+" now.")
	call := t.callID()
	pid := t.f.newID("prt")
	t.tool(pid, name, call, map[string]any{"status": "pending", "input": map[string]any{}, "raw": ""})
	var input, md, done map[string]any
	var permission, pattern, output string
	var always []string
	start := map[string]any{"start": time.Now().UnixMilli()}
	switch name {
	case "bash":
		input = map[string]any{"command": arg, "description": "Run the requested command"}
		permission, pattern, md = "bash", arg, map[string]any{"command": arg}
		always = []string{strings.Fields(arg + " x")[0] + " *"}
		output = "ran " + arg + "\n"
		if echo, ok := strings.CutPrefix(arg, "echo "); ok {
			output = echo + "\n"
		}
		done = map[string]any{"output": output, "exit": 0, "truncated": false}
	case "write":
		abs := filepath.Join(t.dir, arg)
		input = map[string]any{"filePath": arg, "content": "written by fake model\n"}
		permission, pattern, always = "edit", arg, []string{"*"}
		md = map[string]any{"filepath": abs, "diff": "Index: " + abs + "\n===================================================================\n--- " + abs +
			"\n+++ " + abs + "\n@@ -0,0 +1,1 @@\n+written by fake model\n"}
		output = "Wrote file successfully."
		done = map[string]any{"diagnostics": map[string]any{}, "filepath": abs, "exists": false, "truncated": false}
	case "webfetch":
		input = map[string]any{"url": arg, "format": "markdown"}
		permission, pattern, always = "webfetch", arg, []string{"*"}
		md = map[string]any{"url": arg, "format": "markdown", "timeout": 30}
		output = "Fetched " + arg
		done = map[string]any{"truncated": false}
	}
	t.tool(pid, name, call, map[string]any{"status": "running", "input": input, "time": start})
	switch t.permission(permission, pattern, always, md, call) {
	case "":
		t.tool(pid, name, call, map[string]any{"status": "error", "input": input, "error": "Tool execution aborted", "time": start})
		t.abortEnd("", "")
		return ""
	case "reject":
		t.tool(pid, name, call, map[string]any{"status": "error", "input": input,
			"error": "The user rejected permission to use this specific tool call.", "time": start})
		t.finish("tool-calls")
		t.idle()
		return ""
	}
	if name == "bash" {
		t.tool(pid, name, call, map[string]any{"status": "running", "input": input, "metadata": map[string]any{"output": ""}, "time": start})
		t.tool(pid, name, call, map[string]any{"status": "running", "input": input, "metadata": map[string]any{"output": output}, "time": start})
	}
	if name == "write" {
		t.f.emit(t.dir, "file.edited", map[string]any{"file": md["filepath"]})
	}
	t.tool(pid, name, call, map[string]any{"status": "completed", "input": input, "output": output, "metadata": done, "title": arg,
		"time": map[string]any{"start": start["start"], "end": time.Now().UnixMilli()}})
	t.finish("tool-calls")
	t.status("busy")
	t.assistant()
	return "Tool finished. Output was: " + strings.TrimSpace(output)
}

// question asks which colour; it returns what the model says next, or ""
// if the turn ended.
func (t *fakeTurn) question() string {
	call := t.callID()
	pid := t.f.newID("prt")
	qs := []any{map[string]any{"question": "Pick a colour?", "header": "Colour", "options": []any{
		map[string]any{"label": "red", "description": "warm"}, map[string]any{"label": "blue", "description": "cool"}}}}
	t.tool(pid, "question", call, map[string]any{"status": "pending", "input": map[string]any{}, "raw": ""})
	id := t.f.newID("que")
	start := map[string]any{"start": time.Now().UnixMilli()}
	input := map[string]any{"questions": qs}
	t.tool(pid, "question", call, map[string]any{"status": "running", "input": input, "time": start})
	ans := t.ask("question.asked", id, "questions", qs, "tool", map[string]any{"messageID": t.asstID, "callID": call})
	switch {
	case ans == nil:
		t.tool(pid, "question", call, map[string]any{"status": "error", "input": input, "error": "Tool execution aborted", "time": start})
		t.abortEnd("", "")
		return ""
	case ans["rejected"] == true:
		t.emit("question.rejected", "requestID", id)
		t.tool(pid, "question", call, map[string]any{"status": "error", "input": input, "error": "The user dismissed this question", "time": start})
		t.finish("tool-calls")
		t.idle()
		return ""
	}
	t.emit("question.replied", "requestID", id, "answers", ans["answers"])
	picked := fmt.Sprint(ans["answers"])
	if a, ok := ans["answers"].([]any); ok && len(a) == 1 {
		if l, ok := a[0].([]any); ok && len(l) == 1 {
			picked = fmt.Sprint(l[0])
		}
	}
	t.tool(pid, "question", call, map[string]any{"status": "completed", "input": input,
		"output":   `User has answered your questions: "Pick a colour?"="` + picked + `". You can now continue with the user's answers in mind.`,
		"metadata": map[string]any{"answers": ans["answers"], "truncated": false}, "title": "Asked 1 question",
		"time": map[string]any{"start": start["start"], "end": time.Now().UnixMilli()}})
	t.finish("tool-calls")
	t.status("busy")
	t.assistant()
	return "You picked: " + picked
}

// todo writes a todo list.
func (t *fakeTurn) todo() string {
	call := t.callID()
	pid := t.f.newID("prt")
	todos := []any{map[string]any{"content": "first step", "status": "in_progress", "priority": "high"},
		map[string]any{"content": "second step", "status": "pending", "priority": "low"}}
	t.tool(pid, "todowrite", call, map[string]any{"status": "pending", "input": map[string]any{}, "raw": ""})
	t.emit("todo.updated", "todos", todos)
	t.tool(pid, "todowrite", call, map[string]any{"status": "running", "input": map[string]any{"todos": todos}})
	t.tool(pid, "todowrite", call, map[string]any{"status": "completed", "input": map[string]any{"todos": todos}, "output": "[]",
		"metadata": map[string]any{"todos": todos, "truncated": false}, "title": "2 todos"})
	t.finish("tool-calls")
	t.status("busy")
	t.assistant()
	return "Planned."
}

// slow streams ticks until aborted (a minute at most).
func (t *fakeTurn) slow() string {
	id := t.part(map[string]any{"type": "text", "text": "", "time": map[string]any{"start": time.Now().UnixMilli()}})
	var text strings.Builder
	for i := 0; i < 1200; i++ {
		d := fmt.Sprintf("tick %d ", i)
		text.WriteString(d)
		t.emit("message.part.delta", "messageID", t.asstID, "partID", id, "field", "text", "delta", d)
		select {
		case <-t.stop:
			t.abortEnd(id, text.String())
			return ""
		case <-time.After(50 * time.Millisecond):
		}
	}
	return "Done ticking."
}
