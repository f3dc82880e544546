package serve

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/acp/edge"
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
	sessions map[string]*psession
	closed   bool
}

func newPeer(dial dialer, log *slog.Logger, askTimeout time.Duration) *peer {
	ctx, cancel := context.WithCancel(context.Background())
	if askTimeout <= 0 {
		askTimeout = DefaultAskTimeout
	}
	return &peer{dial: dial, log: log, askTimeout: askTimeout, ctx: ctx, cancel: cancel,
		conns: map[string]*pconn{}, sessions: map[string]*psession{}}
}

// pconn is one in-process ACP connection.
type pconn struct {
	agent string
	cs    *sdk.ClientSideConnection
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
		return nil, errClosed
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
		c.cs = sdk.NewClientSideConnection(client{p}, l.w, l.r)
		c.cs.SetLogger(edge.QuietSDK(p.log))
		p.tasks.Go(func() { // a client that has stopped reading must not block the agent side's writes
			<-c.cs.Done()
			l.r.Close()
		})
		ctx, cancel := context.WithTimeout(p.ctx, initTimeout)
		defer cancel()
		_, err = c.cs.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber,
			ClientInfo: &sdk.Implementation{Name: "acpbridge-web", Version: "1"}, ClientCapabilities: webCapabilities})
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

func (client) CreateElicitation(context.Context, sdk.CreateElicitationRequest) (sdk.CreateElicitationResponse, error) {
	return sdk.CreateElicitationResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodElicitationCreate)
}

func (client) CompleteElicitation(context.Context, sdk.CompleteElicitationNotification) error {
	return nil
}
