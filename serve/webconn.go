package serve

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// The web edges (POST /api/chat, POST /ag-ui) are ACP clients of the core
// like any editor: a peer holds their in-process connections to the
// Connector, one per agent name (a connection's new sessions run its
// agent), made when first needed, and the sessions made, loaded or
// resumed on them. It answers no fs or terminal requests (it offers
// none); permission asks wait for the web client's answer.

// DefaultAskTimeout is how long a permission ask waits for a web client's
// answer before it is answered cancelled: a web client ends its request
// when it shows the ask, so no connection tells when it has gone.
const DefaultAskTimeout = 15 * time.Minute

// initTimeout bounds a connection's initialize.
const initTimeout = 30 * time.Second

var (
	// errClosed: the edge is shutting down.
	errClosed = errors.New("acpbridge is shutting down")
	// errNoAsk: no open permission ask has that id.
	errNoAsk = errors.New("no permission ask is waiting with that id")
	// errTurnRunning: the session already has a turn of this edge running.
	errTurnRunning = errors.New("a turn is running in this conversation")
)

// peer is one web edge's ACP client of the core.
type peer struct {
	connect    Connector
	log        *slog.Logger
	askTimeout time.Duration

	// ctx lives as long as the peer: Close cancels it, which ends every
	// connection and turn. It is kept because the peer outlives every
	// request that uses it.
	ctx    context.Context
	cancel context.CancelFunc
	tasks  sync.WaitGroup // the connections and the turns' prompts

	mu       sync.Mutex // protects the fields below
	conns    map[string]*pconn
	sessions map[string]*psession
	closed   bool
}

func newPeer(connect Connector, log *slog.Logger, askTimeout time.Duration) *peer {
	ctx, cancel := context.WithCancel(context.Background())
	if askTimeout <= 0 {
		askTimeout = DefaultAskTimeout
	}
	return &peer{connect: connect, log: log, askTimeout: askTimeout, ctx: ctx, cancel: cancel,
		conns: map[string]*pconn{}, sessions: map[string]*psession{}}
}

// pconn is one in-process ACP connection.
type pconn struct {
	agent string
	cs    *sdk.ClientSideConnection
	in    io.Closer     // the client's end of the connector's input
	ended chan struct{} // closed when the Connector has returned
	ready chan struct{} // closed when initialize has been answered
	err   error         // initialize's error; read after ready
}

// alive reports whether the connection is still served.
func (c *pconn) alive() bool {
	select {
	case <-c.ended:
		return false
	case <-c.cs.Done():
		return false
	default:
		return true
	}
}

// conn returns the live connection whose new sessions run agent, making
// and initializing it if there is none.
func (p *peer) conn(ctx context.Context, agent string) (*pconn, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, errClosed
	}
	c := p.conns[agent]
	if c == nil || (isReady(c) && (c.err != nil || !c.alive())) {
		c = p.dial(agent)
		p.conns[agent] = c
	}
	p.mu.Unlock()
	select {
	case <-c.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if c.err != nil {
		return nil, c.err
	}
	return c, nil
}

func isReady(c *pconn) bool {
	select {
	case <-c.ready:
		return true
	default:
		return false
	}
}

// dial starts a connection and its initialize; the caller holds p.mu.
func (p *peer) dial(agent string) *pconn {
	c2aR, c2aW := io.Pipe()
	a2cR, a2cW := io.Pipe()
	c := &pconn{agent: agent, in: c2aW, ended: make(chan struct{}), ready: make(chan struct{})}
	c.cs = sdk.NewClientSideConnection(client{p}, c2aW, a2cR)
	c.cs.SetLogger(slog.New(quietHandler{p.log.Handler()}))
	p.tasks.Go(func() {
		defer close(c.ended)
		err := p.connect(p.ctx, c2aR, a2cW, agent)
		a2cW.Close()
		c2aR.Close()
		if err != nil && p.ctx.Err() == nil {
			p.log.Warn("web edge: an in-process ACP connection ended", "agent", agent, "err", err)
		}
	})
	p.tasks.Go(func() {
		defer close(c.ready)
		ctx, cancel := context.WithTimeout(p.ctx, initTimeout)
		defer cancel()
		_, err := c.cs.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber,
			ClientInfo: &sdk.Implementation{Name: "acpbridge-web", Version: "1"}})
		if err != nil {
			c.err = fmt.Errorf("initializing the in-process ACP connection: %w", err)
		}
	})
	return c
}

// Close ends every connection and waits for them and the turns' prompts.
func (p *peer) Close() {
	p.mu.Lock()
	p.closed = true
	conns := p.conns
	p.conns = map[string]*pconn{}
	p.mu.Unlock()
	p.cancel()
	for _, c := range conns {
		c.in.Close()
	}
	p.tasks.Wait()
	for _, c := range conns {
		<-c.cs.Done()
	}
}

// session returns the session registered under id, or nil.
func (p *peer) session(id string) *psession {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[id]
}

// register records s under its id, replacing any earlier session object.
func (p *peer) register(s *psession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sessions[s.id] = s
}

// newSession starts a session in cwd on agent's connection.
func (p *peer) newSession(ctx context.Context, agent, cwd string) (*psession, error) {
	c, err := p.conn(ctx, agent)
	if err != nil {
		return nil, err
	}
	resp, err := c.cs.NewSession(ctx, sdk.NewSessionRequest{Cwd: cwd, McpServers: []sdk.McpServer{}})
	if err != nil {
		return nil, fmt.Errorf("session/new: %w", err)
	}
	s := newPSession(p, c, string(resp.SessionId), cwd)
	p.register(s)
	return s, nil
}

// resume reopens session id (session/resume) on agent's connection, taking
// it over from any other client; it returns the session already open here
// if there is one.
func (p *peer) resume(ctx context.Context, agent, id, cwd string) (*psession, error) {
	if s := p.session(id); s != nil && s.conn.alive() {
		return s, nil
	}
	c, err := p.conn(ctx, agent)
	if err != nil {
		return nil, err
	}
	s := newPSession(p, c, id, cwd)
	if _, err := c.cs.ResumeSession(ctx, sdk.ResumeSessionRequest{SessionId: sdk.SessionId(id), Cwd: cwd, McpServers: []sdk.McpServer{}}); err != nil {
		return nil, fmt.Errorf("session/resume %s: %w", id, err)
	}
	p.register(s)
	return s, nil
}

// load reopens session id with session/load on agent's connection (or the
// one it is open on) and returns the conversation it replayed.
func (p *peer) load(ctx context.Context, agent, id, cwd string) (*psession, []sdk.SessionUpdate, error) {
	s := p.session(id)
	if s == nil || !s.conn.alive() {
		c, err := p.conn(ctx, agent)
		if err != nil {
			return nil, nil, err
		}
		s = newPSession(p, c, id, cwd)
	}
	if err := s.collect(); err != nil {
		return nil, nil, err
	}
	p.register(s)
	_, err := s.conn.cs.LoadSession(ctx, sdk.LoadSessionRequest{SessionId: sdk.SessionId(id), Cwd: s.cwd, McpServers: []sdk.McpServer{}})
	replay := s.collected()
	if err != nil {
		return nil, nil, fmt.Errorf("session/load %s: %w", id, err)
	}
	return s, replay, nil
}

// list is one page of the bridge's sessions (session/list, every agent).
func (p *peer) list(ctx context.Context, cwd, cursor string) (sdk.ListSessionsResponse, error) {
	c, err := p.conn(ctx, "")
	if err != nil {
		return sdk.ListSessionsResponse{}, err
	}
	req := sdk.ListSessionsRequest{}
	if cwd != "" {
		req.Cwd = &cwd
	}
	if cursor != "" {
		req.Cursor = &cursor
	}
	resp, err := c.cs.ListSessions(ctx, req)
	if err != nil {
		return resp, fmt.Errorf("session/list: %w", err)
	}
	return resp, nil
}

// maxListPages bounds how far findSession looks through session/list.
const maxListPages = 50

// findSession looks id up in session/list: its entry, or nil when the
// bridge lists no such session.
func (p *peer) findSession(ctx context.Context, id string) (*sdk.SessionInfo, error) {
	cursor := ""
	for range maxListPages {
		page, err := p.list(ctx, "", cursor)
		if err != nil {
			return nil, err
		}
		for i := range page.Sessions {
			if string(page.Sessions[i].SessionId) == id {
				return &page.Sessions[i], nil
			}
		}
		if page.NextCursor == nil || *page.NextCursor == "" {
			return nil, nil
		}
		cursor = *page.NextCursor
	}
	return nil, nil
}

// setOption sets one of a session's config options (mode, model).
func (p *peer) setOption(ctx context.Context, s *psession, id, value string) error {
	_, err := s.conn.cs.SetSessionConfigOption(ctx, sdk.SetSessionConfigOptionRequest{ValueId: &sdk.SetSessionConfigOptionValueId{
		SessionId: sdk.SessionId(s.id), ConfigId: sdk.SessionConfigId(id), Value: sdk.SessionConfigValueId(value)}})
	if err != nil {
		return fmt.Errorf("setting %s to %q: %w", id, value, err)
	}
	return nil
}

// psession is a session open on one of the peer's connections.
type psession struct {
	p    *peer
	conn *pconn
	id   string
	cwd  string

	events queue // the running turn's updates, asks and end, in order

	mu      sync.Mutex // protects the fields below
	asks    map[string]*ask
	turn    *turn
	replay  []sdk.SessionUpdate // a load's replay, while collecting
	loading bool
}

func newPSession(p *peer, c *pconn, id, cwd string) *psession {
	return &psession{p: p, conn: c, id: id, cwd: cwd, events: newQueue(), asks: map[string]*ask{}}
}

// item is one thing a turn brings, in order: an update, a permission ask,
// or the turn's end.
type item struct {
	update *sdk.SessionUpdate
	ask    *ask
	end    *turnEnd
}

// turnEnd is how a turn ended: the prompt's response, or its error.
type turnEnd struct {
	resp sdk.PromptResponse
	err  error
}

// turn is a prompt running.
type turn struct {
	done chan struct{} // closed once its end is queued
}

// deliver takes an update for the session: into a load's replay, or the
// running turn's events; one that belongs to neither (a turn another
// client ran) is left to the transcript.
func (s *psession) deliver(u sdk.SessionUpdate) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.loading:
		s.replay = append(s.replay, u)
	case s.turn != nil:
		s.events.push(item{update: &u})
	}
}

// collect starts gathering a load's replay.
func (s *psession) collect() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil {
		return fmt.Errorf("session/load %s: %w", s.id, errTurnRunning)
	}
	s.loading, s.replay = true, nil
	return nil
}

// collected ends the gathering and returns the replay.
func (s *psession) collected() []sdk.SessionUpdate {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.replay
	s.loading, s.replay = false, nil
	return r
}

// running is the turn running, or nil.
func (s *psession) running() *turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.turn
}

// prompt starts a turn; its updates, asks and end come through s.events.
func (s *psession) prompt(blocks []sdk.ContentBlock) (*turn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil || s.loading {
		return nil, errTurnRunning
	}
	t := &turn{done: make(chan struct{})}
	s.turn = t
	s.p.tasks.Go(func() { s.runPrompt(t, blocks) })
	return t, nil
}

// runPrompt sends the prompt, taking the session over once if another
// client had it, and queues the turn's end.
func (s *psession) runPrompt(t *turn, blocks []sdk.ContentBlock) {
	req := sdk.PromptRequest{SessionId: sdk.SessionId(s.id), Prompt: blocks}
	resp, err := s.conn.cs.Prompt(s.p.ctx, req)
	if isNotAttached(err) {
		_, rerr := s.conn.cs.ResumeSession(s.p.ctx, sdk.ResumeSessionRequest{SessionId: req.SessionId, Cwd: s.cwd, McpServers: []sdk.McpServer{}})
		if rerr == nil {
			resp, err = s.conn.cs.Prompt(s.p.ctx, req)
		}
	}
	if err != nil {
		err = fmt.Errorf("session/prompt: %w", err)
	}
	s.mu.Lock()
	s.events.push(item{end: &turnEnd{resp: resp, err: err}})
	s.turn = nil
	s.mu.Unlock()
	close(t.done)
}

// isNotAttached tells the bridge's answer to a request about a session that
// another client took over (-32600, "not attached").
func isNotAttached(err error) bool {
	var re *sdk.RequestError
	return errors.As(err, &re) && re.Code == -32600 && strings.Contains(re.Message, "not attached")
}

// isNotFound tells the bridge's answer about a session it does not have.
func isNotFound(err error) bool {
	var re *sdk.RequestError
	return errors.As(err, &re) && re.Code == -32002
}

// isBusy tells the bridge's answer to a load or resume while a turn runs.
func isBusy(err error) bool {
	var re *sdk.RequestError
	return errors.Is(err, errTurnRunning) || errors.As(err, &re) && re.Code == -32600 && strings.Contains(re.Message, "busy")
}

// cancel answers the open asks cancelled and cancels the running turn
// (session/cancel).
func (s *psession) cancel() {
	s.mu.Lock()
	asks := s.asks
	s.asks = map[string]*ask{}
	s.mu.Unlock()
	for _, a := range asks {
		a.give(sdk.NewRequestPermissionOutcomeCancelled())
	}
	if err := s.conn.cs.Cancel(s.p.ctx, sdk.CancelNotification{SessionId: sdk.SessionId(s.id)}); err != nil {
		s.p.log.Debug("web edge: session/cancel", "session", s.id, "err", err)
	}
}

// ask is a permission request waiting for the web client.
type ask struct {
	id     string
	req    sdk.RequestPermissionRequest
	answer chan sdk.RequestPermissionOutcome // 1-buffered; sent to once
	over   chan struct{}                     // closed when answered, cancelled or timed out

	mu      sync.Mutex                    // protects outcome
	outcome *sdk.RequestPermissionOutcome // the web client's answer, once given
}

// give sends the ask its answer; the caller has taken it out of the
// session's open asks, so it is given once.
func (a *ask) give(out sdk.RequestPermissionOutcome) {
	a.mu.Lock()
	a.outcome = &out
	a.mu.Unlock()
	a.answer <- out
}

// open reports whether the ask still waits.
func (a *ask) open() bool {
	select {
	case <-a.over:
		return false
	default:
		return true
	}
}

// option is the ask's option with id, or nil.
func (a *ask) option(id string) *sdk.PermissionOption {
	for i := range a.req.Options {
		if string(a.req.Options[i].OptionId) == id {
			return &a.req.Options[i]
		}
	}
	return nil
}

// optionOf is the first of the ask's options of one of kinds, in that
// order, or nil.
func (a *ask) optionOf(kinds ...sdk.PermissionOptionKind) *sdk.PermissionOption {
	for _, k := range kinds {
		for i := range a.req.Options {
			if a.req.Options[i].Kind == k {
				return &a.req.Options[i]
			}
		}
	}
	return nil
}

// request queues a permission ask for the running turn and waits for its
// answer, its cancellation (ctx: the bridge withdrew it), the peer's end,
// or the ask timeout; all but an answer are the cancelled outcome.
func (s *psession) request(ctx context.Context, req sdk.RequestPermissionRequest) sdk.RequestPermissionOutcome {
	a := &ask{id: "ask_" + randomID(), req: req, answer: make(chan sdk.RequestPermissionOutcome, 1), over: make(chan struct{})}
	s.mu.Lock()
	if s.turn == nil {
		s.mu.Unlock()
		return sdk.NewRequestPermissionOutcomeCancelled()
	}
	s.asks[a.id] = a
	s.events.push(item{ask: a})
	s.mu.Unlock()
	defer close(a.over)
	timer := time.NewTimer(s.p.askTimeout)
	defer timer.Stop()
	select {
	case out := <-a.answer:
		return out
	case <-ctx.Done():
	case <-s.p.ctx.Done():
	case <-timer.C:
		s.p.log.Info("web edge: a permission ask went unanswered; cancelling it", "session", s.id, "timeout", s.p.askTimeout)
	}
	s.mu.Lock()
	delete(s.asks, a.id)
	s.mu.Unlock()
	return sdk.NewRequestPermissionOutcomeCancelled()
}

// answerAsk answers the open ask with id.
func (s *psession) answerAsk(id string, out sdk.RequestPermissionOutcome) error {
	s.mu.Lock()
	a := s.asks[id]
	delete(s.asks, id)
	s.mu.Unlock()
	if a == nil {
		return fmt.Errorf("%w: %q", errNoAsk, id)
	}
	a.give(out)
	return nil
}

// openAsk returns the open ask with id, or nil.
func (s *psession) openAsk(id string) *ask {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asks[id]
}

// client is the peer's sdk.Client: it routes each session's updates and
// asks to its psession.
type client struct{ p *peer }

var _ sdk.Client = client{}

func (c client) SessionUpdate(_ context.Context, n sdk.SessionNotification) error {
	if s := c.p.session(string(n.SessionId)); s != nil {
		s.deliver(n.Update)
	}
	return nil
}

func (c client) RequestPermission(ctx context.Context, req sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	s := c.p.session(string(req.SessionId))
	if s == nil {
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return sdk.RequestPermissionResponse{Outcome: s.request(ctx, req)}, nil
}

// The web edges offer no fs or terminal: the bridge never asks.

func (client) ReadTextFile(context.Context, sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
}

func (client) WriteTextFile(context.Context, sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
}

func (client) CreateTerminal(context.Context, sdk.CreateTerminalRequest) (sdk.CreateTerminalResponse, error) {
	return sdk.CreateTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalCreate)
}

func (client) KillTerminal(context.Context, sdk.KillTerminalRequest) (sdk.KillTerminalResponse, error) {
	return sdk.KillTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalKill)
}

func (client) TerminalOutput(context.Context, sdk.TerminalOutputRequest) (sdk.TerminalOutputResponse, error) {
	return sdk.TerminalOutputResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalOutput)
}

func (client) ReleaseTerminal(context.Context, sdk.ReleaseTerminalRequest) (sdk.ReleaseTerminalResponse, error) {
	return sdk.ReleaseTerminalResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalRelease)
}

func (client) WaitForTerminalExit(context.Context, sdk.WaitForTerminalExitRequest) (sdk.WaitForTerminalExitResponse, error) {
	return sdk.WaitForTerminalExitResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodTerminalWaitForExit)
}

// queue is an unbounded FIFO of items with one reader: the updates of a
// turn must never block the connection that delivers every session's.
type queue struct {
	mu    sync.Mutex
	items []item
	ready chan struct{} // 1-buffered: something was pushed
}

func newQueue() queue { return queue{ready: make(chan struct{}, 1)} }

func (q *queue) push(it item) {
	q.mu.Lock()
	q.items = append(q.items, it)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// next waits for the next item; false when ctx is done first.
func (q *queue) next(ctx context.Context) (item, bool) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			it := q.items[0]
			q.items[0] = item{}
			q.items = q.items[1:]
			q.mu.Unlock()
			return it, true
		}
		q.mu.Unlock()
		select {
		case <-q.ready:
		case <-ctx.Done():
			return item{}, false
		}
	}
}

// randomID is 12 random bytes in hex.
func randomID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// quietHandler passes the SDK's warnings and errors on, and its chatter
// (a "connection closed" at every end) only at debug level.
type quietHandler struct{ slog.Handler }

func (q quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn {
		r.Level = slog.LevelDebug
	}
	if !q.Handler.Enabled(ctx, r.Level) {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

func (q quietHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return q.Handler.Enabled(ctx, min(l, slog.LevelDebug)) || q.Handler.Enabled(ctx, l)
}

func (q quietHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return quietHandler{q.Handler.WithAttrs(as)}
}
func (q quietHandler) WithGroup(g string) slog.Handler { return quietHandler{q.Handler.WithGroup(g)} }
