package bridge

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
	"golang.org/x/sync/errgroup"
)

// PersistMode says which sessions keep a transcript on disk.
type PersistMode string

const (
	// PersistAuto records every session's header (for session/list and to
	// resume the native session) and its full transcript unless the
	// agent's own resume returns the history (its Native's
	// agent.SessionCaps.History).
	PersistAuto PersistMode = "auto"
	// PersistAlways records every session's full transcript.
	PersistAlways PersistMode = "always"
	// PersistNever writes nothing; session/list and session/load see only
	// the sessions of this process.
	PersistNever PersistMode = "never"
)

// Client is the editor's side of one connection, as the engine uses it.
// An edge implements it; the ACP edge's wraps the SDK's connection.
type Client interface {
	SessionUpdate(ctx context.Context, n acp.SessionNotification) error
	RequestPermission(ctx context.Context, r acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error)
	// Peer is the rest of an ACP client, or nil for a client that takes
	// only updates and permission asks (a test's, say). Without it,
	// session/load's replay decodes each stored update to send it, and an
	// agent's fs, terminal and extension calls answer method-not-found.
	Peer() Peer
}

// Config configures a Manager.
type Config struct {
	// Backends are the agents this bridge can run, in the order the agent
	// config option lists them. Default names the one new sessions use.
	Backends []agent.Backend
	Default  string
	// Store holds transcripts; it must be nil with PersistNever and set
	// otherwise.
	Store   *persist.Store
	Persist PersistMode
	Logger  *slog.Logger
	// CancelGrace is how long a cancelled turn may take to stop before the
	// bridge closes the agent and ends the turn anyway. Zero means 10s.
	CancelGrace time.Duration
	// Checkpoint is how soon what a running turn streamed is written to its
	// transcript as a draft (complete messages and tool calls are written
	// at once), so that a bridge killed mid-turn loses at most that much.
	// Zero means 1s.
	Checkpoint time.Duration
	// IdleTimeout stops a session's agent after that long without a turn
	// (0: never); MaxAgents caps the sessions whose agents run, stopping
	// the least recently used idle ones (0: no cap). A stopped agent starts
	// again, resuming its session, at the session's next prompt; a running
	// turn is never touched.
	IdleTimeout time.Duration
	MaxAgents   int
	// FilesIdle lets a session's transcript and its lock go (two
	// descriptors) once it has had no turn for that long; its next write
	// takes them again, if no other process has written the transcript
	// meanwhile (persist.Writer.Release). Zero means DefaultFilesIdle;
	// negative, never.
	FilesIdle time.Duration
	// Cwd is the bridge's working directory, where the default agent warms
	// up a session ahead of need (see agent.Caps.Warm); "" warms none.
	Cwd string
}

// Manager owns all sessions of one ACP connection.
type Manager struct {
	cfg      Config
	backends map[string]agent.Backend
	log      *slog.Logger

	// ctx lives until Shutdown. Turns and sends to the client derive from
	// it rather than from a request's ctx: the SDK cancels a prompt's ctx
	// on session/cancel before the bridge hears of it, and a notification
	// sent with a cancelled ctx is dropped, yet a cancelled prompt must
	// still deliver its final updates, before it answers "cancelled".
	ctx  context.Context
	stop context.CancelFunc
	// reaping is the goroutine that stops idle agents (see reap), and
	// endReaping ends it; Shutdown waits for it before closing anything.
	reaping    sync.WaitGroup
	endReaping context.CancelFunc

	// def is the Manager's own connection (Default), which SetClient sets
	// the client of.
	def *Conn

	mu        sync.Mutex // protects the fields below
	sessions  map[string]*Session
	opening   map[string]chan struct{} // ids being loaded or resumed; closed when done
	cancelled map[string]Order         // cancels of sessions being opened, applied once open
}

// NewManager returns a Manager; call SetClient before serving requests.
func NewManager(cfg Config) (*Manager, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.CancelGrace == 0 {
		cfg.CancelGrace = 10 * time.Second
	}
	if cfg.Checkpoint == 0 {
		cfg.Checkpoint = time.Second
	}
	if cfg.FilesIdle == 0 {
		cfg.FilesIdle = DefaultFilesIdle
	}
	if (cfg.Persist == PersistNever) != (cfg.Store == nil) {
		return nil, errors.New("a store is needed exactly when persisting")
	}
	m := &Manager{cfg: cfg, backends: make(map[string]agent.Backend), log: cfg.Logger,
		sessions: make(map[string]*Session), opening: make(map[string]chan struct{}), cancelled: make(map[string]Order)}
	for _, b := range cfg.Backends {
		m.backends[b.Info().Name] = b
	}
	if m.backends[cfg.Default] == nil {
		return nil, fmt.Errorf("%w: %q", agent.ErrAgentUnavailable, cfg.Default)
	}
	m.ctx, m.stop = context.WithCancel(context.Background())
	m.def = m.newConn(cfg.Default)
	reapCtx, endReaping := context.WithCancel(context.Background())
	m.endReaping = endReaping
	if cfg.IdleTimeout > 0 || cfg.MaxAgents > 0 || cfg.FilesIdle > 0 && cfg.Store != nil {
		m.reaping.Go(func() { m.reap(reapCtx) })
	}
	return m, nil
}

// SetClient sets where the updates and permission asks of the Manager's
// own connection (Default) go.
func (m *Manager) SetClient(c Client) { m.def.SetClient(c) }

// DefaultInfo describes the backend that new sessions use.
func (m *Manager) DefaultInfo() agent.Info { return m.def.Info() }

// Warm lets the default backend start what its sessions share, and what
// the first session in the bridge's directory needs, in the background,
// so that the first session/new and its first turn find them ready.
func (m *Manager) Warm() { m.def.Warm() }

// Logins lists the agents this bridge can run that have a login of their
// own to run (agent.Caps.LoginCmd), the default agent first, each with what
// can be seen of its credentials now (agent.Caps.Login).
func (m *Manager) Logins() []AgentLogin {
	var out []AgentLogin
	for _, b := range m.cfg.Backends {
		info := b.Info()
		if info.Caps.LoginCmd == nil {
			continue
		}
		l := AgentLogin{Agent: info.Name, Title: info.Title}
		if info.Caps.Login != nil {
			l.Login = info.Caps.Login()
		}
		if info.Name == m.cfg.Default {
			out = append([]AgentLogin{l}, out...)
		} else {
			out = append(out, l)
		}
	}
	return out
}

// CanLogout reports whether the default agent has a logout (see Logout).
func (m *Manager) CanLogout() bool {
	return m.backends[m.cfg.Default].Info().Caps.LogoutCmd != nil
}

// logoutTimeout bounds an agent's logout command.
const logoutTimeout = 30 * time.Second

// Logout runs the default agent's own logout, with no terminal, and says
// what it printed if it fails. Its sessions go on as they are; the agent's
// next start finds no credentials.
func (m *Manager) Logout(ctx context.Context) error {
	b := m.backends[m.cfg.Default]
	logout := b.Info().Caps.LogoutCmd
	if logout == nil {
		return fmt.Errorf("%w: %s has no logout acpbridge can run", agent.ErrInvalidParams, b.Info().Title)
	}
	cmd, err := logout()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, logoutTimeout)
	defer cancel()
	run := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	run.Env, run.Dir = cmd.Env, cmd.Dir
	if out, err := run.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, strings.TrimSpace(string(out)))
	}
	m.log.Info("logged out", "agent", b.Info().Name)
	return nil
}

// AgentLogin is an agent's login as the bridge offers it to clients.
type AgentLogin struct {
	Agent, Title string
	Login        agent.Login
}

// Agents lists the backends this bridge can run, in order.
func (m *Manager) Agents() []agent.Info {
	infos := make([]agent.Info, len(m.cfg.Backends))
	for i, b := range m.cfg.Backends {
		infos[i] = b.Info()
	}
	return infos
}

// New starts a session on the default backend.
func (m *Manager) New(ctx context.Context, st Setup) (*Session, error) {
	return m.newSession(ctx, m.def, st)
}

// newSession starts a session on c's agent, attached to c.
func (m *Manager) newSession(ctx context.Context, c *Conn, st Setup) (*Session, error) {
	if err := st.check(); err != nil {
		return nil, err
	}
	b := m.backends[c.agent]
	now := time.Now().UTC()
	h := persist.Header{ID: newID(), Agent: b.Info().Name, Cwd: st.Cwd, CreatedAt: now, UpdatedAt: now}
	s := newSession(m, c, b, h, 0)
	if err := s.open(st.options(nil)); err != nil {
		s.end()
		return nil, err
	}
	if err := s.startRecord(m.cfg.Store, nil); err != nil {
		s.discard()
		return nil, err
	}
	m.mu.Lock()
	m.sessions[h.ID] = s
	m.mu.Unlock()
	return s, nil
}

// Load opens a stored session (or a live one) and replays its conversation
// to the client before returning.
func (m *Manager) Load(ctx context.Context, id string, st Setup) (*Session, error) {
	return m.attach(ctx, m.def, id, st, true)
}

// Resume opens a stored session (or a live one) without replay.
func (m *Manager) Resume(ctx context.Context, id string, st Setup) (*Session, error) {
	return m.attach(ctx, m.def, id, st, false)
}

// attach opens session id for c, or has c take it over if it is live.
func (m *Manager) attach(ctx context.Context, c *Conn, id string, st Setup, replay bool) (*Session, error) {
	if err := m.restricted(id, "load or resume"); err != nil {
		return nil, err
	}
	if !persist.ValidID(id) {
		return nil, fmt.Errorf("%w: malformed session id %q", agent.ErrInvalidParams, id)
	}
	if err := st.check(); err != nil {
		return nil, err
	}
	s, err := m.claim(id)
	if err != nil {
		return nil, err
	}
	if s != nil {
		return s, s.reattach(ctx, c, st, replay)
	}
	s, err = m.reopen(ctx, c, id, st, replay)
	m.unclaim(id, s)
	return s, err
}

// claim returns the live session with id, or marks id as being opened.
func (m *Manager) claim(id string) (*Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[id]; s != nil {
		return s, nil
	}
	if m.opening[id] != nil {
		return nil, fmt.Errorf("%w: session %s is being opened", ErrBusy, id)
	}
	if m.cfg.Store == nil {
		return nil, fmt.Errorf("%w: %s (nothing is persisted with --persist never)", ErrSessionNotFound, id)
	}
	m.opening[id] = make(chan struct{})
	return nil, nil
}

// unclaim ends the opening of id, with s the session opened (nil if it
// failed); requests that waited for it go on, and a cancel that came
// meanwhile applies.
func (m *Manager) unclaim(id string, s *Session) {
	m.mu.Lock()
	if s != nil {
		m.sessions[id] = s
	}
	close(m.opening[id])
	delete(m.opening, id)
	at, cancelled := m.cancelled[id]
	delete(m.cancelled, id)
	m.mu.Unlock()
	if s != nil && cancelled {
		s.Cancel(at)
	}
}

// reopen locks a stored session's transcript, opens its native session
// with the recorded native id, and replays it if asked.
func (m *Manager) reopen(ctx context.Context, c *Conn, id string, st Setup, replay bool) (*Session, error) {
	w, tr, err := m.cfg.Store.OpenWriter(id)
	if errors.Is(err, persist.ErrNotFound) {
		return nil, fmt.Errorf("%w: %s", ErrSessionNotFound, id)
	}
	if err != nil && replay && unwritable(err) {
		return m.readOnly(ctx, c, id, st.Cwd, err)
	}
	if err != nil {
		return nil, err
	}
	h := tr.Header
	b := m.backends[h.Agent]
	if b == nil {
		w.Close()
		return nil, fmt.Errorf("%w: session %s belongs to agent %q, which this bridge does not run", agent.ErrAgentUnavailable, id, h.Agent)
	}
	h.Cwd = st.Cwd
	s := newSession(m, c, b, h, MaxSeq(tr.Entries)+1)
	s.learnChildren(tr.Entries)
	s.prompted = len(tr.Entries) > 0 || h.NativeID != ""
	opts := st.options(recordedPrompt(h))
	opts.NativeID, opts.Config = h.NativeID, h.ConfigValues()
	reopenFork(s, &opts)
	if err := s.open(opts); err != nil {
		w.Close()
		s.end()
		return nil, err
	}
	if err := s.startRecord(nil, w); err != nil {
		s.discard()
		return nil, err
	}
	if replay {
		if err := s.replay(ctx, tr.Entries); err != nil {
			s.close()
			return nil, err
		}
	}
	return s, nil
}

// reopenFork has a fork reopened before its first turn begin as the
// parent's conversation again: its agent forks the parent's native session
// once more (it had not named the fork's), or its first prompt tells it the
// conversation, as the fork's would have.
func reopenFork(s *Session, opts *agent.OpenOptions) {
	h := s.header
	if h.NativeID == "" && h.ForkFrom != "" {
		opts.ForkOf = h.ForkFrom
	}
	if h.Retell && h.ForkOf != "" {
		s.carry = &carried{since: -1, fork: h.ForkOf}
	}
}

// unwritable tells a state directory the bridge may read but not write.
func unwritable(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// readOnly serves session/load from a state directory the bridge can't
// write: the conversation is replayed, and the session says it can't go
// on here (its prompts are refused, saying why).
func (m *Manager) readOnly(ctx context.Context, c *Conn, id, cwd string, why error) (*Session, error) {
	tr, err := m.cfg.Store.Read(id)
	if err != nil {
		return nil, why
	}
	h := tr.Header
	b := m.backends[h.Agent]
	if b == nil {
		b = m.backends[m.cfg.Default]
	}
	h.Cwd = cwd
	s := newSession(m, c, b, h, MaxSeq(tr.Entries)+1)
	s.learnChildren(tr.Entries)
	s.readOnly = fmt.Errorf("%w: session %s can be read but not continued here: its state directory can't be written (%v)", ErrNotRecorded, id, why)
	if err := s.replay(ctx, tr.Entries); err != nil {
		s.end()
		return nil, err
	}
	m.log.Warn("session opened read-only", "session", id, "err", why)
	return s, nil
}

// Get returns a live session. A session being loaded or resumed is waited
// for, until ctx is done.
func (m *Manager) Get(ctx context.Context, id string) (*Session, error) {
	for {
		s, opening, err := m.lookup(id)
		if opening == nil {
			return s, err
		}
		select {
		case <-opening:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w: %s is still being opened: %w", ErrSessionNotFound, id, context.Cause(ctx))
		}
	}
}

// Cancel cancels the prompts of session id that arrived before at (see
// Session.Cancel); for a session being loaded or resumed, once it is
// open. It returns at once.
func (m *Manager) Cancel(id string, at Order) {
	if m.cancelChild(nil, id) {
		return
	}
	s, opening, _ := m.lookup(id)
	if s != nil {
		s.Cancel(at)
		return
	}
	if opening != nil {
		m.mu.Lock()
		if _, ok := m.opening[id]; ok && (at == 0 || at > m.cancelled[id]) {
			m.cancelled[id] = at
		}
		m.mu.Unlock()
	}
}

// CancelPrompt cancels one prompt of session id, the one that arrived at
// at, whether its turn runs or it waits in the queue (see
// Session.CancelPrompt). It returns at once.
func (m *Manager) CancelPrompt(id string, at Order) {
	if s, _, _ := m.lookup(id); s != nil {
		s.CancelPrompt(at)
	}
}

// Extension passes an extension method the client sent to the session its
// params name ("sessionId"), for its agent: a request (notify false),
// answered with the agent's result, or a notification. A method no open
// session's agent takes is not found.
func (m *Manager) Extension(ctx context.Context, method string, params json.RawMessage, notify bool) (json.RawMessage, error) {
	var p struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal(params, &p)
	s, _, _ := m.lookup(p.SessionID)
	if s == nil {
		return nil, acp.NewMethodNotFound(method)
	}
	s.mu.Lock()
	n := s.native
	s.mu.Unlock()
	ext := capsOf(n).Extension
	if ext == nil {
		return nil, acp.NewMethodNotFound(method)
	}
	return ext(ctx, method, params, notify)
}

// lookup returns the live session id, or, while it is being opened, what
// to wait on.
// A child session's id is refused (ErrRestricted): what is looked up is to
// be asked of the session.
func (m *Manager) lookup(id string) (*Session, <-chan struct{}, error) {
	if err := m.restricted(id, "prompt, change of mode, model or options, close or extension"); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.sessions[id]; s != nil {
		return s, nil, nil
	}
	if ch := m.opening[id]; ch != nil {
		return nil, ch, nil
	}
	if !persist.ValidID(id) {
		return nil, nil, fmt.Errorf("%w: malformed session id %q", agent.ErrInvalidParams, id)
	}
	return nil, nil, fmt.Errorf("%w: %s is not open (session/load or session/resume it first)", ErrSessionNotFound, id)
}

// Close cancels a session's turn and releases it; its transcript stays.
// A session being loaded or resumed is waited for.
func (m *Manager) Close(ctx context.Context, id string) error {
	s, err := m.Get(ctx, id)
	if err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.sessions, id)
	m.mu.Unlock()
	return s.close()
}

// Delete closes a session if it is open and removes its transcript.
// Deleting an unknown session succeeds, as the protocol asks.
func (m *Manager) Delete(ctx context.Context, id string) error {
	if err := m.restricted(id, "delete"); err != nil {
		return err
	}
	if !persist.ValidID(id) {
		return fmt.Errorf("%w: malformed session id %q", agent.ErrInvalidParams, id)
	}
	_, err := m.Get(ctx, id)
	live := err == nil
	if live {
		if err := m.Close(ctx, id); err != nil {
			return err
		}
	}
	if m.cfg.Store == nil {
		if !live {
			return fmt.Errorf("%w: %s", ErrSessionNotFound, id)
		}
		return nil
	}
	err = m.cfg.Store.Delete(id)
	if errors.Is(err, persist.ErrNotFound) {
		if live {
			return nil // a session that had recorded nothing yet
		}
		return fmt.Errorf("%w: %s", ErrSessionNotFound, id)
	}
	return err
}

// CancelAll cancels every running turn, as if the client had sent
// session/cancel for each session.
func (m *Manager) CancelAll() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sessions {
		s.Cancel(0)
	}
}

// Shutdown cancels every turn, closes every session (syncing its
// transcript) and stops the backends.
func (m *Manager) Shutdown() error {
	m.endReaping()
	m.reaping.Wait() // it may be closing a session's agent
	m.mu.Lock()
	ss := make([]*Session, 0, len(m.sessions))
	for id, s := range m.sessions {
		ss = append(ss, s)
		delete(m.sessions, id)
	}
	m.mu.Unlock()
	var g errgroup.Group
	for _, s := range ss {
		g.Go(s.close)
	}
	err := g.Wait()
	m.stop()
	for _, b := range m.cfg.Backends {
		err = errors.Join(err, b.Close())
	}
	return err
}

func checkCwd(cwd string) error {
	if !filepath.IsAbs(cwd) {
		return fmt.Errorf("%w: cwd %q %s", agent.ErrInvalidParams, cwd, notAbs(cwd, runtime.GOOS))
	}
	return nil
}

// notAbs says what is wrong with cwd, which is not absolute on goos: a
// path of the other family (C:\work on Unix, /work on Windows) is not
// translated, since the client and the agents must agree on it.
func notAbs(cwd, goos string) string {
	windows := len(cwd) >= 2 && cwd[1] == ':' && ('a' <= cwd[0]|0x20 && cwd[0]|0x20 <= 'z') ||
		strings.HasPrefix(cwd, `\\`)
	switch {
	case goos != "windows" && windows:
		return "is a Windows path; this acpbridge runs on " + goos
	case goos == "windows" && strings.HasPrefix(cwd, "/"):
		return "is a POSIX path; this acpbridge runs on windows"
	}
	return "is not an absolute path"
}

// NewMessageID returns a new message id, as the bridge makes them (for
// Arrival.MessageID).
func NewMessageID() string { return newID() }

// newID returns a random (version 4) UUID: session and message ids.
func newID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
