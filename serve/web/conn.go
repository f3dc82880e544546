package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/coder/acp-go-sdk"
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
	// ErrClosed: the edge is shutting down.
	ErrClosed = errors.New("acpbridge is shutting down")
	// ErrNoAsk: no open permission ask has that id.
	ErrNoAsk = errors.New("no permission ask is waiting with that id")
	// ErrTurnRunning: the session already has a turn of this edge running.
	ErrTurnRunning = errors.New("a turn is running in this conversation")
)

// peer is one web edge's ACP client of the core.
type peer struct {
	dial       dialer
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
	sessions map[string]*Session
	parents  map[string]string // a subagent's session id → its parent's, once announced
	closed   bool
}

func newPeer(dial dialer, log *slog.Logger, askTimeout time.Duration) *peer {
	ctx, cancel := context.WithCancel(context.Background())
	if askTimeout <= 0 {
		askTimeout = DefaultAskTimeout
	}
	return &peer{dial: dial, log: log, askTimeout: askTimeout, ctx: ctx, cancel: cancel,
		conns: map[string]*pconn{}, sessions: map[string]*Session{}, parents: map[string]string{}}
}

// pconn is one in-process ACP connection.
type pconn struct {
	agent string
	cs    *acp.ClientSideConnection
	link  *link
	ready chan struct{} // closed when initialize has been answered
	err   error         // initialize's error (or the dial's); read after ready
}

// alive reports whether the connection is still served.
func (c *pconn) alive() bool {
	if c.link == nil {
		return false
	}
	select {
	case <-c.link.ended:
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
		return nil, ErrClosed
	}
	c := p.conns[agent]
	if c == nil || (isReady(c) && (c.err != nil || !c.alive())) {
		c = p.connect(agent)
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

// connect starts a connection and its initialize; the caller holds p.mu.
func (p *peer) connect(agent string) *pconn {
	c := &pconn{agent: agent, ready: make(chan struct{})}
	p.tasks.Go(func() {
		defer close(c.ready)
		l, err := p.dial(p.ctx, agent, &p.tasks)
		if err != nil {
			c.err = fmt.Errorf("connecting the web edge to the bridge: %w", err)
			return
		}
		c.link = l
		c.cs = acp.NewClientSideConnection(client{p}, l.w, l.r)
		c.cs.SetLogger(edge.QuietSDK(p.log))
		p.tasks.Go(func() { // a client that has stopped reading must not block the agent side's writes
			<-c.cs.Done()
			l.r.Close()
		})
		ctx, cancel := context.WithTimeout(p.ctx, initTimeout)
		defer cancel()
		_, err = c.cs.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber,
			ClientInfo: &acp.Implementation{Name: "acpbridge-web", Version: "1"}, ClientCapabilities: webCapabilities})
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
		<-c.ready
		if c.link != nil {
			c.link.w.Close()
		}
	}
	p.tasks.Wait()
}

// Session returns the session registered under id, or nil.
func (p *peer) session(id string) *Session {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sessions[id]
}

// adopt records that child is a subagent session of parent.
func (p *peer) adopt(child, parent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.parents[child] = parent
}

// route is the session an update or ask for session id goes to, and the
// subagent's id ("" for the session's own); nil for a session not here.
func (p *peer) route(id string) (*Session, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s := p.sessions[id]; s != nil {
		return s, ""
	}
	if parent, ok := p.parents[id]; ok && p.sessions[parent] != nil {
		return p.sessions[parent], id
	}
	return nil, ""
}

// register records s under its id, replacing any earlier session object.
func (p *peer) register(s *Session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sessions[s.ID] = s
}

// newSession starts a session in cwd on agent's connection.
func (p *peer) newSession(ctx context.Context, agent, cwd string) (*Session, error) {
	c, err := p.conn(ctx, agent)
	if err != nil {
		return nil, err
	}
	resp, err := c.cs.NewSession(ctx, acp.NewSessionRequest{Cwd: cwd, McpServers: []acp.McpServer{}})
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
func (p *peer) resume(ctx context.Context, agent, id, cwd string) (*Session, error) {
	if s := p.session(id); s != nil && s.conn.alive() {
		return s, nil
	}
	c, err := p.conn(ctx, agent)
	if err != nil {
		return nil, err
	}
	s := newPSession(p, c, id, cwd)
	if _, err := c.cs.ResumeSession(ctx, acp.ResumeSessionRequest{SessionId: acp.SessionId(id), Cwd: cwd, McpServers: []acp.McpServer{}}); err != nil {
		return nil, fmt.Errorf("session/resume %s: %w", id, err)
	}
	p.register(s)
	return s, nil
}

// load reopens session id with session/load on agent's connection (or the
// one it is open on) and returns the conversation it replayed.
func (p *peer) load(ctx context.Context, agent, id, cwd string) (*Session, []Update, error) {
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
	_, err := s.conn.cs.LoadSession(ctx, acp.LoadSessionRequest{SessionId: acp.SessionId(id), Cwd: s.cwd, McpServers: []acp.McpServer{}})
	replay := s.collected()
	if err != nil {
		return nil, nil, fmt.Errorf("session/load %s: %w", id, err)
	}
	return s, replay, nil
}

// list is one page of the bridge's sessions (session/list, every agent).
func (p *peer) list(ctx context.Context, cwd, cursor string) (acp.ListSessionsResponse, error) {
	c, err := p.conn(ctx, "")
	if err != nil {
		return acp.ListSessionsResponse{}, err
	}
	req := acp.ListSessionsRequest{}
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
func (p *peer) findSession(ctx context.Context, id string) (*acp.SessionInfo, error) {
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
func (p *peer) setOption(ctx context.Context, s *Session, id, value string) error {
	_, err := s.conn.cs.SetSessionConfigOption(ctx, acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: acp.SessionId(s.ID), ConfigId: acp.SessionConfigId(id), Value: acp.SessionConfigValueId(value)}})
	if err != nil {
		return fmt.Errorf("setting %s to %q: %w", id, value, err)
	}
	return nil
}

// client is the peer's sdk.Client: it routes each session's updates and
// asks to its Session, and a subagent's to its parent's (the subagent
// announced by a subagent_update on the parent first, as ACP says).
type client struct{ p *peer }

var _ acp.Client = client{}

func (c client) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	s, child := c.p.route(string(n.SessionId))
	if s == nil {
		return nil
	}
	if su := n.Update.SubagentUpdate; su != nil && child == "" {
		c.p.adopt(string(su.SessionId), s.ID)
	}
	s.deliver(child, n.Update)
	return nil
}

func (c client) RequestPermission(ctx context.Context, req acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	s, child := c.p.route(string(req.SessionId))
	if s == nil {
		return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
	}
	return acp.RequestPermissionResponse{Outcome: s.request(ctx, child, req)}, nil
}

// The web edges offer no fs or terminal: the bridge never asks.

func (client) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (client) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (client) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (client) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (client) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (client) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (client) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

func (client) CreateElicitation(context.Context, acp.CreateElicitationRequest) (acp.CreateElicitationResponse, error) {
	return acp.CreateElicitationResponse{}, acp.NewMethodNotFound(acp.ClientMethodElicitationCreate)
}

func (client) CompleteElicitation(context.Context, acp.CompleteElicitationNotification) error {
	return nil
}
