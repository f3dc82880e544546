package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/coder/acp-go-sdk"
)

// A Conn is one client connection of a Manager. The stdio edge has one, the
// Manager's own (Default); acpbridge serve has one per HTTP or WebSocket
// client, all sharing the Manager's sessions, agents and transcripts.
//
// A session is attached to one connection at a time: the one that made,
// loaded or resumed it last. Its updates, permission asks, questions and
// editor calls go to that connection's Client, and only that connection
// may prompt it, change its options or call its agent's extensions;
// another gets ErrNotAttached until it loads or resumes the session,
// which takes it over. When a connection ends (Disconnect) its sessions
// go on unattached: a running turn runs to its end and is recorded, with
// the asks it had open answered "cancelled", and any connection may load,
// resume, close or delete them.
type Conn struct {
	m     *Manager
	agent string // the agent of the sessions it makes
	// ctx ends at Disconnect; the asks sent through the connection end
	// with it.
	ctx context.Context
	end context.CancelFunc

	mu     sync.Mutex // protects the fields below
	client Client
	caps   acp.ClientCapabilities
}

// ErrNotAttached is the error for a request about a session that is
// attached to another connection, or to none.
var ErrNotAttached = errors.New("session not attached to this connection")

// Connect adds a client connection whose new sessions run agentName (""
// for the Manager's default agent); SetClient says where its messages go.
func (m *Manager) Connect(agentName string) (*Conn, error) {
	if agentName == "" {
		agentName = m.cfg.Default
	}
	if m.backends[agentName] == nil {
		return nil, fmt.Errorf("%w: %q (this bridge runs %s)", agent.ErrAgentUnavailable, agentName, m.agentNames())
	}
	return m.newConn(agentName), nil
}

func (m *Manager) newConn(agentName string) *Conn {
	conn := &Conn{m: m, agent: agentName}
	conn.ctx, conn.end = context.WithCancel(m.ctx)
	return conn
}

// SetClient sets where the updates and asks of the connection's sessions
// go.
func (c *Conn) SetClient(cl Client) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.client = cl
}

// Default is the Manager's own connection, the one SetClient sets the
// client of: the stdio edge's. The Manager's session methods (New, Load,
// Get …) act for it.
func (m *Manager) Default() *Conn { return m.def }

// SetCapabilities records what the client offers (from its initialize)
// and tells the backends that want to know (agent.Caps.ClientCapabilities):
// with several connections, the last to initialize.
func (c *Conn) SetCapabilities(caps acp.ClientCapabilities) {
	c.mu.Lock()
	c.caps = caps
	c.mu.Unlock()
	for _, b := range c.m.cfg.Backends {
		if tell := b.Info().Caps.ClientCapabilities; tell != nil {
			tell(caps)
		}
	}
}

// Capabilities is what the client offered at initialize.
func (c *Conn) Capabilities() acp.ClientCapabilities {
	if c == nil {
		return acp.ClientCapabilities{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.caps
}

func (c *Conn) getClient() Client {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.client
}

// peer is the client's Peer, or nil.
func (c *Conn) peer() Peer {
	if cl := c.getClient(); cl != nil {
		return cl.Peer()
	}
	return nil
}

// Info describes the agent that the connection's new sessions run.
func (c *Conn) Info() agent.Info { return c.m.backends[c.agent].Info() }

// Warm lets the connection's agent start, in the background, what its
// sessions share (see Manager.Warm).
func (c *Conn) Warm() {
	if warm := c.Info().Caps.Warm; warm != nil {
		warm(c.m.cfg.Cwd)
	}
}

// Disconnect ends the connection: the asks it has open end cancelled and
// its sessions go on unattached (see Conn). It returns at once.
func (c *Conn) Disconnect() {
	c.end()
	c.m.mu.Lock()
	ss := make([]*Session, 0, len(c.m.sessions))
	for _, s := range c.m.sessions {
		ss = append(ss, s)
	}
	c.m.mu.Unlock()
	for _, s := range ss {
		if s.conn.CompareAndSwap(c, nil) {
			c.m.log.Debug("session unattached: its connection ended", "session", s.id)
		}
	}
}

// New starts a session on the connection's agent, attached to it.
func (c *Conn) New(ctx context.Context, st Setup) (*Session, error) {
	return c.m.newSession(ctx, c, st)
}

// Load opens a stored session, or takes over a live one, and replays its
// conversation to the client before returning (see Manager.Load).
func (c *Conn) Load(ctx context.Context, id string, st Setup) (*Session, error) {
	return c.m.attach(ctx, c, id, st, true)
}

// Resume opens a stored session, or takes over a live one, without replay.
func (c *Conn) Resume(ctx context.Context, id string, st Setup) (*Session, error) {
	return c.m.attach(ctx, c, id, st, false)
}

// Fork starts a session that begins as a copy of another (see
// Manager.Fork), attached to the connection.
func (c *Conn) Fork(ctx context.Context, id string, st Setup) (*Session, error) {
	return c.m.fork(ctx, c, id, st)
}

// Get returns a live session attached to the connection (see Manager.Get).
func (c *Conn) Get(ctx context.Context, id string) (*Session, error) {
	s, err := c.m.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	return s, c.owns(s)
}

// owns says why the connection may not act on s, if it may not.
func (c *Conn) owns(s *Session) error {
	if s.conn.Load() == c {
		return nil
	}
	return fmt.Errorf("%w: %s is attached to another connection or to none (session/load or session/resume it to take it over)", ErrNotAttached, s.id)
}

// Cancel cancels a session's prompts that arrived before at (see
// Manager.Cancel); a session attached elsewhere is left alone.
func (c *Conn) Cancel(id string, at Order) {
	if c.m.cancelChild(c, id) {
		return
	}
	if s, _, _ := c.m.lookup(id); s != nil && c.owns(s) != nil {
		c.m.log.Debug("ignoring a cancel from a connection the session is not attached to", "session", id)
		return
	}
	c.m.Cancel(id, at)
}

// CancelPrompt cancels one prompt (see Manager.CancelPrompt).
func (c *Conn) CancelPrompt(id string, at Order) {
	if s, _, _ := c.m.lookup(id); s != nil && c.owns(s) == nil {
		s.CancelPrompt(at)
	}
}

// Close closes a session attached to the connection, or to none (see
// Manager.Close).
func (c *Conn) Close(ctx context.Context, id string) error {
	if err := c.mayEnd(ctx, id); err != nil {
		return err
	}
	return c.m.Close(ctx, id)
}

// Delete deletes a session that is not attached to another connection
// (see Manager.Delete).
func (c *Conn) Delete(ctx context.Context, id string) error {
	if err := c.mayEnd(ctx, id); err != nil {
		return err
	}
	return c.m.Delete(ctx, id)
}

// mayEnd says why the connection may not close or delete session id:
// only when it is live and attached to another that has not ended (a
// session loaded for a connection as it ended stays attached to it).
func (c *Conn) mayEnd(ctx context.Context, id string) error {
	s, err := c.m.Get(ctx, id)
	if err != nil {
		return nil // Close and Delete say what is wrong
	}
	if owner := s.conn.Load(); owner != nil && owner != c && owner.ctx.Err() == nil {
		return c.owns(s)
	}
	return nil
}

// Extension passes an extension method to the agent of the session its
// params name, if attached to the connection (see Manager.Extension).
func (c *Conn) Extension(ctx context.Context, method string, params json.RawMessage, notify bool) (json.RawMessage, error) {
	if s, _, _ := c.m.lookup(sessionOf(params)); s != nil {
		if err := c.owns(s); err != nil {
			return nil, err
		}
	}
	return c.m.Extension(ctx, method, params, notify)
}

// sessionOf is the "sessionId" of an extension method's params.
func sessionOf(params json.RawMessage) string {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(params, &p)
	return p.SessionID
}

// asks returns a context for an ask sent to the connection's client on
// behalf of a turn whose context is ctx: it ends with either.
func (c *Conn) asks(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(c.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}
