package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/coder/acp-go-sdk"
)

// What the two web edges share: their conversations (a chat of useChat, a
// thread of AG-UI) each bound to one bridge session, the map from the
// client's ids to the bridge's that survives a restart, and the pump that
// streams a turn through a protocol's translator into segments, each the
// body of one HTTP response: a turn that waits on a permission ask ends its
// segment with the ask, and the request that answers it streams the next.

// Options configures the web edges (aisdk.NewHandler, agui.NewHandler).
// Every field may be left zero.
type Options struct {
	// StateDir keeps the map from the web clients' chat and thread ids to
	// bridge sessions, so that a chat outlives a restart: a directory per
	// edge (webchats/ for /api/chat, agui-threads/ for /ag-ui) with one
	// JSON file per chat, mode 0600. "" keeps the map in memory only.
	StateDir string
	// Cwd is the working directory of new sessions when the request names
	// none; "" is the process's.
	Cwd string
	// Agent runs new sessions when the request names none; "" is the
	// bridge's default.
	Agent string
	// Logger logs what the web clients can't be told; nil discards.
	Logger *slog.Logger
	// AskTimeout is how long a permission ask waits for the web client's
	// answer; 0 is DefaultAskTimeout.
	AskTimeout time.Duration
	// Registry, if set, makes the web edges' in-process connections Conns
	// of it, like every other client connection of the server: a session a
	// web chat takes over is then detached from the /acp connection that
	// had it, and the Registry's CloseAll ends them too. nil connects
	// straight to the Connector.
	Registry *core.Registry
}

// withDefaults fills the zero fields it can. A cwd that can't be had is
// the root (and logged): a request may still name its own.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			o.Logger.Error("web edge: no working directory for new sessions; using /", "err", err)
			wd = string(filepath.Separator)
		}
		o.Cwd = wd
	}
	return o
}

// Errors a web request may get, each mapped to an HTTP status by
// StatusOf.
var (
	// ErrUnknownChat: no session for the chat id, and nothing to start one.
	ErrUnknownChat = errors.New("unknown chat")
	// ErrBadRequest: the request is not what the protocol sends.
	ErrBadRequest = errors.New("bad request")
)

// Chats is one edge's conversations: the live ones by the client's id,
// the map that finds the others' sessions, and the peer they run on.
type Chats struct {
	p     *peer
	store *chatStore
	opts  Options
	pumps sync.WaitGroup // every turn's pump

	mu   sync.Mutex // protects live
	live map[string]*Chat
}

// NewChats makes an edge's chats, their map kept in o.StateDir/file/, a
// file per chat (moved from o.StateDir/file.json, the whole map, where it
// was kept before). A
// map that can't be read is logged, and the edge keeps its chats in memory
// only.
func NewChats(connect core.Connector, o Options, file string) *Chats {
	o = o.withDefaults()
	dir, legacy := "", ""
	if o.StateDir != "" {
		dir, legacy = filepath.Join(o.StateDir, file), filepath.Join(o.StateDir, file+".json")
	}
	st, err := openChatStore(dir, legacy, o.Logger)
	if err != nil {
		o.Logger.Error("web edge: chats will not outlive a restart", "err", err)
		st = &chatStore{chats: map[string]chatRecord{}}
	}
	dial := pipeDialer(connect)
	if o.Registry != nil {
		dial = registryDialer(o.Registry, connect)
	}
	return &Chats{p: newPeer(dial, o.Logger, o.AskTimeout), store: st, opts: o, live: map[string]*Chat{}}
}

// Close ends every turn's pump and connection.
func (cs *Chats) Close() {
	cs.p.Close()
	cs.pumps.Wait()
}

// Chat is one conversation of a web client.
type Chat struct {
	id string

	op   sync.Mutex // serializes the set-up of the chat's requests; protects the fields below
	rec  chatRecord
	sess *Session // nil until opened

	mu  sync.Mutex // protects run
	run *run
}

// Session is the session c is bound to, nil until opened. The caller
// holds c.op.
func (c *Chat) Session() *Session { return c.sess }

// LastUser is the id of the last user message a run prompted c's session
// with. The caller holds c.op.
func (c *Chat) LastUser() string { return c.rec.LastUser }

// Prompted records that c's session was prompted with user message id.
// The caller holds c.op.
func (cs *Chats) Prompted(c *Chat, id string) {
	c.rec.LastUser = id
	cs.keep(c.id, &c.rec)
}

// List is one page of the bridge's sessions (session/list, every agent).
func (cs *Chats) List(ctx context.Context, cwd, cursor string) (acp.ListSessionsResponse, error) {
	return cs.p.list(ctx, cwd, cursor)
}

// SessionOf is the session the chat with id is bound to, "" if none (for
// tests).
func (cs *Chats) SessionOf(id string) string { return cs.get(id).rec.Session }

// Count is how many chats are live (for tests).
func (cs *Chats) Count() int {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return len(cs.live)
}

// get returns the chat with id, live or new (not yet opened).
func (cs *Chats) get(id string) *Chat {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.live[id]
	if c == nil {
		c = &Chat{id: id}
		cs.live[id] = c
	}
	return c
}

// forget drops c from the live chats if it never opened; the caller holds
// c.op.
func (cs *Chats) forget(c *Chat) {
	if c.sess != nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.live[c.id] == c {
		delete(cs.live, c.id)
	}
}

// Open binds c to its session if it is not yet: the one the map names,
// else the session whose id is the chat id (a chat a page reopened from
// GET /v1/sessions). With replay, the session is loaded and the
// conversation it replayed returned; reopened says whether the session was
// opened now (a chat already open is left as it is). ErrUnknownChat when the bridge has no session for c. The
// caller holds c.op.
func (cs *Chats) Open(ctx context.Context, c *Chat, replay bool) (history []Update, reopened bool, err error) {
	if c.sess != nil && c.sess.conn.alive() {
		return nil, false, nil
	}
	rec, ok := cs.store.get(c.id)
	switch {
	case ok:
	case c.sess != nil:
		rec = c.rec
	default:
		if rec, ok, err = cs.asSession(ctx, c.id); err != nil {
			return nil, false, err
		}
		if !ok {
			return nil, false, ErrUnknownChat
		}
	}
	var s *Session
	if replay {
		s, history, err = cs.p.load(ctx, rec.Agent, rec.Session, rec.Cwd)
	} else {
		s, err = cs.p.resume(ctx, rec.Agent, rec.Session, rec.Cwd)
	}
	if isNotFound(err) {
		cs.keep(c.id, nil)
		return nil, false, errors.Join(err, ErrUnknownChat)
	}
	if err != nil {
		return nil, false, err
	}
	c.rec, c.sess = rec, s
	cs.keep(c.id, &rec)
	return history, true, nil
}

// keep records the chat's session in the map (or, for nil, forgets the
// chat). A map that can't be saved is logged, not the request's failure:
// the chat goes on, and only a restart would lose it.
func (cs *Chats) keep(id string, r *chatRecord) {
	var err error
	if r == nil {
		err = cs.store.drop(id)
	} else {
		err = cs.store.put(id, *r)
	}
	if err != nil {
		cs.opts.Logger.Warn("web edge: the chats map", "chat", id, "err", err)
	}
}

// asSession is the record of a chat whose id is a session id the bridge
// lists, with that session's cwd.
func (cs *Chats) asSession(ctx context.Context, id string) (chatRecord, bool, error) {
	info, err := cs.p.findSession(ctx, id)
	if err != nil || info == nil {
		return chatRecord{}, false, err
	}
	return chatRecord{Session: id, Cwd: info.Cwd}, true, nil
}

// NewChat says how to start a chat's session.
type NewChat struct {
	Agent, Cwd, Mode, Model string
}

// Create starts a session for c. The caller holds c.op.
func (cs *Chats) Create(ctx context.Context, c *Chat, n NewChat) error {
	if n.Agent == "" {
		n.Agent = cs.opts.Agent
	}
	if n.Cwd == "" {
		n.Cwd = cs.opts.Cwd
	}
	s, err := cs.p.newSession(ctx, n.Agent, n.Cwd)
	if err != nil {
		return err
	}
	for _, o := range [][2]string{{"mode", n.Mode}, {"model", n.Model}} {
		if o[1] == "" {
			continue
		}
		if err := cs.p.setOption(ctx, s, o[0], o[1]); err != nil {
			s.conn.cs.CloseSession(ctx, acp.CloseSessionRequest{SessionId: acp.SessionId(s.ID)})
			return fmt.Errorf("%w: %w", ErrBadRequest, err)
		}
	}
	c.rec, c.sess = chatRecord{Session: s.ID, Agent: n.Agent, Cwd: n.Cwd}, s
	cs.keep(c.id, &c.rec)
	return nil
}

// SegmentOf is the current segment of the chat with id's running turn, or
// nil when none runs.
func (cs *Chats) SegmentOf(id string) *Segment {
	cs.mu.Lock()
	c := cs.live[id]
	cs.mu.Unlock()
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run == nil {
		return nil
	}
	return c.run.seg
}

// Replay loads session id (session/load) and returns its conversation. Its
// cwd is cwd if given, else the one it is open in here, else the one
// session/list gives.
func (cs *Chats) Replay(ctx context.Context, id, cwd string) ([]Update, error) {
	agent := ""
	if s := cs.p.session(id); s != nil {
		agent = s.conn.agent
		if cwd == "" {
			cwd = s.cwd
		}
	}
	if cwd == "" {
		info, err := cs.p.findSession(ctx, id)
		if err != nil {
			return nil, err
		}
		if info == nil {
			return nil, fmt.Errorf("%w: the bridge lists no such session", ErrUnknownChat)
		}
		cwd = info.Cwd
	}
	_, history, err := cs.p.load(ctx, agent, id, cwd)
	if isNotFound(err) {
		return nil, errors.Join(err, ErrUnknownChat)
	}
	return history, err
}

// WriteError answers a request that can't be served with status and a JSON
// body {"error": msg}.
func WriteError(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// StatusOf is the HTTP status for an error of a web request.
func StatusOf(err error) int {
	switch {
	case errors.Is(err, ErrBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, ErrUnknownChat):
		return http.StatusNotFound
	case errors.Is(err, ErrNoAsk), errors.Is(err, ErrTurnRunning), isBusy(err), isNotAttached(err):
		return http.StatusConflict
	case errors.Is(err, ErrClosed):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	var re *acp.RequestError
	if errors.As(err, &re) && re.Code == -32602 {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// WriteJSON answers v as JSON.
func WriteJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// maxBody bounds a web request's body.
const maxBody = 8 << 20

// DecodeBody decodes r's JSON body into v; ErrBadRequest when it is not
// JSON of v's shape.
func DecodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, maxBody)
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("%w: the body is not a JSON request of this endpoint: %v", ErrBadRequest, err)
	}
	return nil
}

// Deref is *p, or "" for nil.
func Deref[S ~string](p *S) string {
	if p == nil {
		return ""
	}
	return string(*p)
}
