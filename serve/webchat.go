package serve

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

	sdk "github.com/coder/acp-go-sdk"
)

// What the two web edges share: their conversations (a chat of useChat, a
// thread of AG-UI) each bound to one bridge session, the map from the
// client's ids to the bridge's that survives a restart, and the pump that
// streams a turn through a protocol's translator into segments, each the
// body of one HTTP response: a turn that waits on a permission ask ends its
// segment with the ask, and the request that answers it streams the next.

// WebOptions configures the web edges (NewChatHandler, NewAGUIHandler).
// Every field may be left zero.
type WebOptions struct {
	// StateDir keeps the map from the web clients' chat and thread ids to
	// bridge sessions, so that a chat outlives a restart: one JSON file per
	// edge (webchats.json for /api/chat, agui-threads.json for /ag-ui),
	// mode 0600. "" keeps the map in memory only.
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
}

// withDefaults fills the zero fields it can.
func (o WebOptions) withDefaults() (WebOptions, error) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return o, fmt.Errorf("web edge: the default cwd: %w", err)
		}
		o.Cwd = wd
	}
	return o, nil
}

// Errors a web request may get, each mapped to an HTTP status by
// statusOf.
var (
	// errUnknownChat: no session for the chat id, and nothing to start one.
	errUnknownChat = errors.New("unknown chat")
	// errBadRequest: the request is not what the protocol sends.
	errBadRequest = errors.New("bad request")
)

// chatRecord is what the map keeps for a chat id.
type chatRecord struct {
	Session string `json:"session"`
	Agent   string `json:"agent,omitempty"`
	Cwd     string `json:"cwd"`
}

// chatStore is the map from a web client's chat ids to bridge sessions,
// kept in a file (if it has a path) rewritten whole on every change.
type chatStore struct {
	path string

	mu    sync.Mutex // protects chats and the file
	chats map[string]chatRecord
}

// storeFile is the file's shape.
type storeFile struct {
	Chats map[string]chatRecord `json:"chats"`
}

// openChatStore reads the map at path ("" for none kept).
func openChatStore(path string) (*chatStore, error) {
	st := &chatStore{path: path, chats: map[string]chatRecord{}}
	if path == "" {
		return st, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the web chats map: %w", err)
	}
	var f storeFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("reading the web chats map %s: %w", path, err)
	}
	if f.Chats != nil {
		st.chats = f.Chats
	}
	return st, nil
}

func (st *chatStore) get(id string) (chatRecord, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	r, ok := st.chats[id]
	return r, ok
}

// put records id's session and saves the map.
func (st *chatStore) put(id string, r chatRecord) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if old, ok := st.chats[id]; ok && old == r {
		return nil
	}
	st.chats[id] = r
	return st.save()
}

// drop forgets id and saves the map.
func (st *chatStore) drop(id string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.chats[id]; !ok {
		return nil
	}
	delete(st.chats, id)
	return st.save()
}

// save writes the map: a temporary file renamed over the old one. The
// caller holds st.mu.
func (st *chatStore) save() error {
	if st.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(storeFile{Chats: st.chats}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(st.path), 0o700); err != nil {
		return fmt.Errorf("saving the web chats map: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(st.path), filepath.Base(st.path)+".tmp*")
	if err != nil {
		return fmt.Errorf("saving the web chats map: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), st.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("saving the web chats map: %w", err)
	}
	return nil
}

// chats is one edge's conversations: the live ones by the client's id,
// the map that finds the others' sessions, and the peer they run on.
type chats struct {
	p     *peer
	store *chatStore
	opts  WebOptions
	pumps sync.WaitGroup // every turn's pump

	mu   sync.Mutex // protects live
	live map[string]*chat
}

func newChats(connect Connector, o WebOptions, file string) (*chats, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	path := ""
	if o.StateDir != "" {
		path = filepath.Join(o.StateDir, file)
	}
	st, err := openChatStore(path)
	if err != nil {
		return nil, err
	}
	return &chats{p: newPeer(connect, o.Logger, o.AskTimeout), store: st, opts: o, live: map[string]*chat{}}, nil
}

// Close ends every turn's pump and connection.
func (cs *chats) Close() {
	cs.p.Close()
	cs.pumps.Wait()
}

// chat is one conversation of a web client.
type chat struct {
	id string

	op       sync.Mutex // serializes the set-up of the chat's requests; protects the fields below
	rec      chatRecord
	sess     *psession // nil until opened
	lastUser string    // the last user message a run prompted (AG-UI sends them all every run)

	mu  sync.Mutex // protects run
	run *run
}

// get returns the chat with id, live or new (not yet opened).
func (cs *chats) get(id string) *chat {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	c := cs.live[id]
	if c == nil {
		c = &chat{id: id}
		cs.live[id] = c
	}
	return c
}

// forget drops c from the live chats if it never opened; the caller holds
// c.op.
func (cs *chats) forget(c *chat) {
	if c.sess != nil {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.live[c.id] == c {
		delete(cs.live, c.id)
	}
}

// open binds c to its session if it is not yet: the one the map names,
// else the session whose id is the chat id (a chat a page reopened from
// GET /v1/sessions). With replay, the session is loaded and the
// conversation it replayed returned; reopened says whether the session was
// opened now (a chat already open is left as it is). errUnknownChat when the bridge has no session for c. The
// caller holds c.op.
func (cs *chats) open(ctx context.Context, c *chat, replay bool) (history []sdk.SessionUpdate, reopened bool, err error) {
	if c.sess != nil && c.sess.conn.alive() {
		return nil, false, nil
	}
	rec, ok := cs.store.get(c.id)
	if !ok {
		if c.sess != nil {
			rec = c.rec
		} else if rec, ok, err = cs.asSession(ctx, c.id); err != nil || !ok {
			return nil, false, errors.Join(err, errUnknownChat)
		}
	}
	var s *psession
	if replay {
		s, history, err = cs.p.load(ctx, rec.Agent, rec.Session, rec.Cwd)
	} else {
		s, err = cs.p.resume(ctx, rec.Agent, rec.Session, rec.Cwd)
	}
	if isNotFound(err) {
		cs.store.drop(c.id)
		return nil, false, errors.Join(err, errUnknownChat)
	}
	if err != nil {
		return nil, false, err
	}
	c.rec, c.sess = rec, s
	return history, true, cs.store.put(c.id, rec)
}

// asSession is the record of a chat whose id is a session id the bridge
// lists, with that session's cwd.
func (cs *chats) asSession(ctx context.Context, id string) (chatRecord, bool, error) {
	info, err := cs.p.findSession(ctx, id)
	if err != nil || info == nil {
		return chatRecord{}, false, err
	}
	return chatRecord{Session: id, Cwd: info.Cwd}, true, nil
}

// newChat says how to start a chat's session.
type newChat struct {
	agent, cwd, mode, model string
}

// create starts a session for c. The caller holds c.op.
func (cs *chats) create(ctx context.Context, c *chat, n newChat) error {
	if n.agent == "" {
		n.agent = cs.opts.Agent
	}
	if n.cwd == "" {
		n.cwd = cs.opts.Cwd
	}
	s, err := cs.p.newSession(ctx, n.agent, n.cwd)
	if err != nil {
		return err
	}
	for _, o := range [][2]string{{"mode", n.mode}, {"model", n.model}} {
		if o[1] == "" {
			continue
		}
		if err := cs.p.setOption(ctx, s, o[0], o[1]); err != nil {
			return fmt.Errorf("%w: %w", errBadRequest, err)
		}
	}
	c.rec, c.sess = chatRecord{Session: s.id, Agent: n.agent, Cwd: n.cwd}, s
	return cs.store.put(c.id, c.rec)
}

// translator turns one turn's ACP events into a web protocol's events. It
// is not safe for concurrent use: the turn's pump owns it.
type translator interface {
	// open is what begins a segment; info is the segment's.
	open(info any) []any
	// update is what one session update adds.
	update(u sdk.SessionUpdate) []any
	// ask is a permission ask, which ends the segment.
	ask(a *ask) []any
	// end is the turn's end, which ends the last segment.
	end(e turnEnd) []any
}

// run is a turn's stream: the pump that translates it and the segments it
// writes.
type run struct {
	tr   translator
	turn *turn
	next chan *segment // 1-buffered: the segment that continues after an ask
	done chan struct{} // closed when the pump has returned

	// Under the chat's mu:
	seg     *segment // being written, or the last one while waiting
	waiting bool     // seg ended on an ask; the next segment continues

	abandoned chan struct{} // closed once cancelled because its client went away
	abandon   sync.Once
}

// current is c's run, or nil.
func (c *chat) current() *run {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.run
}

// start prompts c's session and pumps the turn into segments through tr;
// the first segment, begun with info, is returned. The caller holds c.op.
func (cs *chats) start(c *chat, blocks []sdk.ContentBlock, tr translator, info any) (*segment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run != nil {
		return nil, errTurnRunning
	}
	t, err := c.sess.prompt(blocks)
	if err != nil {
		return nil, err
	}
	seg := newSegment(info)
	r := &run{tr: tr, turn: t, next: make(chan *segment, 1), done: make(chan struct{}), seg: seg, abandoned: make(chan struct{})}
	c.run = r
	cs.pumps.Go(func() { cs.pump(c, r, seg) })
	return seg, nil
}

// resume continues c's turn that waits on an ask, in a new segment begun
// with info; answer answers the asks (with c.mu held, so that the pump can
// neither end nor begin a segment meanwhile). The caller holds c.op.
func (cs *chats) resume(c *chat, info any, answer func(*psession) error) (*segment, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.run
	if r == nil || !r.waiting {
		return nil, fmt.Errorf("%w: no turn of this chat waits for an answer", errNoAsk)
	}
	if err := answer(c.sess); err != nil {
		return nil, err
	}
	seg := newSegment(info)
	r.seg, r.waiting = seg, false
	r.next <- seg
	return seg, nil
}

// settleTimeout bounds how long a new prompt waits for the turn before it
// to end once cancelled; busyGrace how long it waits for a streaming turn
// whose client may be going away (a stop in a web client is a closed
// request, which the server sees a moment later) to be cancelled.
const (
	settleTimeout = 10 * time.Second
	busyGrace     = 2 * time.Second
)

// settle makes way for a new prompt: a turn of c that waits on an ask is
// cancelled (its asks answered cancelled), and one cancelled so or by its
// client's going away is waited for; a turn that still streams after
// busyGrace is errTurnRunning. The caller holds c.op.
func (cs *chats) settle(ctx context.Context, c *chat) error {
	c.mu.Lock()
	r := c.run
	waiting := r != nil && r.waiting
	c.mu.Unlock()
	if r == nil {
		return nil
	}
	if waiting {
		c.sess.cancel()
	} else if err := waitFor(ctx, r.abandoned, r.done, busyGrace); err != nil {
		return errTurnRunning
	}
	if err := waitFor(ctx, r.done, nil, settleTimeout); err != nil {
		return fmt.Errorf("%w: it was cancelled and has not ended: %w", errTurnRunning, err)
	}
	return nil
}

// waitFor waits until a or b (if not nil) is closed, for at most d.
func waitFor(ctx context.Context, a, b <-chan struct{}, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-a:
		return nil
	case <-b:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-timer.C:
		return fmt.Errorf("still running after %v", d)
	}
}

// abandon cancels c's turn, whose client went away mid-stream.
func (cs *chats) abandon(c *chat, s *psession) {
	c.mu.Lock()
	if r := c.run; r != nil {
		r.abandon.Do(func() { close(r.abandoned) })
	}
	c.mu.Unlock()
	s.cancel()
}

// pump translates r's turn into segments until the turn ends: seg first,
// then those that continue it after each ask.
func (cs *chats) pump(c *chat, r *run, seg *segment) {
	defer close(r.done)
	defer c.finish(r)
	seg.add(r.tr.open(seg.info)...)
	for {
		it, ok := c.sess.events.next(cs.p.ctx)
		if !ok {
			seg.add(r.tr.end(turnEnd{err: errClosed})...)
			seg.close()
			return
		}
		switch {
		case it.update != nil:
			seg.add(r.tr.update(*it.update)...)
		case it.ask != nil && it.ask.open():
			c.setWaiting(r)
			seg.add(r.tr.ask(it.ask)...)
			seg.close()
			if seg = cs.await(c, r); seg == nil {
				return
			}
			seg.add(r.tr.open(seg.info)...)
		case it.end != nil:
			seg.add(r.tr.end(*it.end)...)
			seg.close()
			return
		}
	}
}

// setWaiting marks r as waiting for the segment that continues it. It is
// set before the ask is written, so that the answer can't come first.
func (c *chat) setWaiting(r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r.waiting = true
}

// await waits for the segment that continues r after an ask. If the turn
// ends first (its ask timed out, or was cancelled), the rest of it is left
// to the transcript and await returns nil.
func (cs *chats) await(c *chat, r *run) *segment {
	select {
	case seg := <-r.next:
		return seg
	case <-r.turn.done:
	case <-cs.p.ctx.Done():
	}
	c.mu.Lock()
	if !r.waiting {
		c.mu.Unlock()
		return <-r.next // resume handed one over meanwhile
	}
	r.waiting = false
	c.mu.Unlock()
	for {
		it, ok := c.sess.events.next(cs.p.ctx)
		if !ok || it.end != nil {
			return nil
		}
	}
}

// finish clears c's run once its pump is done.
func (c *chat) finish(r *run) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.run == r {
		c.run = nil
	}
}

// segment is the events of one HTTP response of a turn, SSE-encoded, kept
// whole so that a reader may join late (GET /api/chat/{id}/stream).
type segment struct {
	info any // what the request that opened it tells the translator

	mu     sync.Mutex // protects the fields below
	frames [][]byte
	closed bool
	wake   chan struct{} // closed and replaced at every add and close
}

func newSegment(info any) *segment { return &segment{info: info, wake: make(chan struct{})} }

// add encodes events and appends them.
func (s *segment) add(events ...any) {
	if len(events) == 0 {
		return
	}
	frames := make([][]byte, 0, len(events))
	for _, e := range events {
		frames = append(frames, sseFrame(e))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.frames = append(s.frames, frames...)
	close(s.wake)
	s.wake = make(chan struct{})
}

func (s *segment) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	close(s.wake)
	s.wake = make(chan struct{})
}

// from returns the frames from the i-th on, whether the segment is closed,
// and a channel closed at the next change.
func (s *segment) from(i int) ([][]byte, bool, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames[i:], s.closed, s.wake
}

// sseDone is the AI SDK stream's last frame, data: [DONE].
type sseDone struct{}

// sseFrame is one event as an SSE frame: data: JSON, then a blank line.
func sseFrame(e any) []byte {
	if _, ok := e.(sseDone); ok {
		return []byte("data: [DONE]\n\n")
	}
	b, err := json.Marshal(e)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "errorText": "encoding an event: " + err.Error()})
	}
	frame := make([]byte, 0, len(b)+8)
	frame = append(frame, "data: "...)
	frame = append(frame, b...)
	return append(frame, '\n', '\n')
}

// streamSegment writes seg to w as it grows, flushing after every batch, until
// seg is closed (true) or ctx is done or the client has gone (false).
func streamSegment(ctx context.Context, w http.ResponseWriter, seg *segment) bool {
	rc := http.NewResponseController(w)
	for i := 0; ; {
		frames, closed, wake := seg.from(i)
		for _, f := range frames {
			if _, err := w.Write(f); err != nil {
				return false
			}
		}
		i += len(frames)
		if len(frames) > 0 {
			if err := rc.Flush(); err != nil {
				return false
			}
		}
		if closed && len(frames) == 0 {
			return true
		}
		if len(frames) > 0 {
			continue
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		}
	}
}

// sseHeaders sets the headers of an SSE response; extra are name, value
// pairs.
func sseHeaders(w http.ResponseWriter, extra ...string) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	for i := 0; i+1 < len(extra); i += 2 {
		h.Set(extra[i], extra[i+1])
	}
	w.WriteHeader(http.StatusOK)
}

// webError answers a request that can't be served with status and a JSON
// body {"error": msg}.
func webError(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// statusOf is the HTTP status for an error of a web request.
func statusOf(err error) int {
	switch {
	case errors.Is(err, errBadRequest):
		return http.StatusBadRequest
	case errors.Is(err, errUnknownChat):
		return http.StatusNotFound
	case errors.Is(err, errNoAsk), errors.Is(err, errTurnRunning), isBusy(err), isNotAttached(err):
		return http.StatusConflict
	case errors.Is(err, errClosed):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	var re *sdk.RequestError
	if errors.As(err, &re) && re.Code == -32602 {
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	json.NewEncoder(w).Encode(v)
}

// maxBody bounds a web request's body.
const maxBody = 8 << 20

// decodeBody decodes r's JSON body into v; errBadRequest when it is not
// JSON of v's shape.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) error {
	body := http.MaxBytesReader(w, r.Body, maxBody)
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("%w: the body is not a JSON request of this endpoint: %v", errBadRequest, err)
	}
	return nil
}

// deref is *p, or "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// segmentOf is the current segment of the chat with id's running turn, or
// nil when none runs.
func (cs *chats) segmentOf(id string) *segment {
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

// replay loads session id (session/load) and returns its conversation. Its
// cwd is cwd if given, else the one it is open in here, else the one
// session/list gives.
func (cs *chats) replay(ctx context.Context, id, cwd string) ([]sdk.SessionUpdate, error) {
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
			return nil, fmt.Errorf("%w: the bridge lists no such session", errUnknownChat)
		}
		cwd = info.Cwd
	}
	_, history, err := cs.p.load(ctx, agent, id, cwd)
	if isNotFound(err) {
		return nil, errors.Join(err, errUnknownChat)
	}
	return history, err
}
