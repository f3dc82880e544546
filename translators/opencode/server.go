package opencode

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	sse "github.com/tmaxmax/go-sse"
)

// Timeouts of the server's start and of each HTTP call. A call's own
// timeout does not apply to the event stream, which lasts, nor to the
// first calls for a directory, which bootstrap its instance (seconds of
// CPU; much longer on a loaded machine): startTimeout bounds those. Both
// catch hangs; neither is meant to be reached.
const (
	startTimeout = 3 * time.Minute
	callTimeout  = 30 * time.Second
)

// authUser is the user name of the server's HTTP basic authentication;
// the password is OPENCODE_SERVER_PASSWORD, fresh for every server.
const authUser = "opencode"

// listening is the line `opencode serve` prints once it listens (compiled
// at its first use, not at every bridge's start).
var listening = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`opencode server listening on (http://\S+)`)
})

// server is a running `opencode serve` and what the bridge has open on it.
type server struct {
	l        agentkit.Link
	base     *url.URL
	password string
	client   *http.Client // calls; each has its own timeout
	stream   *http.Client // event streams: no timeout

	dispatch  func(dir string, ev Event) // every event of every stream, in order per stream
	broadcast func(dir string, ev Event) // an event for every session in dir
	log       *slog.Logger

	mu       sync.Mutex
	streams  map[string]*eventStream // by directory
	prepared map[string]bool         // directories whose providers OpenCode has loaded

	instMu    sync.Mutex              // held while an instance is entered or left
	instances map[string]*instanceUse // the directories the bridge uses, by directory
	linger    time.Duration           // how long an unused instance is kept (Backend.linger)
}

// ownServer is a server the bridge started: stopping it terminates it (a
// server ignores its stdin ending).
type ownServer struct{ *proc.Process }

func (o ownServer) Stop() { o.Terminate() }

// serveArgs are the arguments of `opencode serve` on loopback.
func serveArgs(extra []string) []string {
	return append([]string{"serve", "--port", "0", "--hostname", "127.0.0.1"}, extra...)
}

// startServer runs `opencode serve` on loopback with a fresh password and
// waits until it is healthy.
func startServer(ctx context.Context, path string, args, env []string) (agentkit.Link, *url.URL, string, error) {
	password, err := randomPassword()
	if err != nil {
		return nil, nil, "", err
	}
	p, err := proc.Start(proc.Spec{Path: path, Args: serveArgs(args), Env: append(env, passwordEnv+"="+password)})
	if err != nil {
		return nil, nil, "", fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, err)
	}
	base, err := listenURL(ctx, p)
	if err != nil {
		p.Stop()
		return nil, nil, "", err
	}
	return ownServer{p}, base, password, nil
}

// passwordEnv is where opencode serve takes its password from.
const passwordEnv = "OPENCODE_SERVER_PASSWORD"

// newServer is the bridge's client of the server on l, once healthy.
func newServer(ctx context.Context, l agentkit.Link, base *url.URL, password string, log *slog.Logger, dispatch, broadcast func(dir string, ev Event)) (*server, error) {
	s := &server{l: l, base: base, password: password, client: &http.Client{}, stream: &http.Client{},
		dispatch: dispatch, broadcast: broadcast, log: log, streams: map[string]*eventStream{}, prepared: map[string]bool{}, instances: map[string]*instanceUse{}}
	if err := s.healthy(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func randomPassword() (string, error) {
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("making the server's password: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// listenURL reads the server's stdout up to its "listening" line (--port 0
// does not pick a free port: the URL is the truth), then keeps draining
// it so that the server never blocks on a full pipe.
func listenURL(ctx context.Context, p *proc.Process) (*url.URL, error) {
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(p.Stdout)
		sc.Buffer(nil, 1<<20)
		sent := false
		for sc.Scan() {
			if m := listening().FindSubmatch(sc.Bytes()); m != nil && !sent {
				found <- string(m[1])
				sent = true
			}
		}
		io.Copy(io.Discard, p.Stdout)
	}()
	select {
	case u := <-found:
		return url.Parse(u)
	case <-p.Done():
		return nil, fmt.Errorf("opencode serve did not start: %w", p.Exited())
	case <-ctx.Done():
		return nil, fmt.Errorf("opencode serve did not say where it listens within %v", startTimeout)
	}
}

// healthy polls /global/health until the server says it is healthy: it
// listens before it is ready.
func (s *server) healthy(ctx context.Context) error {
	var last error
	for wait := 20 * time.Millisecond; ; wait = min(2*wait, 500*time.Millisecond) {
		var h struct {
			Healthy bool   `json:"healthy"`
			Version string `json:"version"`
		}
		last = s.call(ctx, http.MethodGet, "/global/health", "", nil, &h)
		if last == nil && h.Healthy {
			return nil
		}
		select {
		case <-s.l.Done():
			return fmt.Errorf("opencode serve did not start: %w", s.l.Exited())
		case <-ctx.Done():
			return fmt.Errorf("opencode serve was not healthy within %v: %v", startTimeout, last)
		case <-time.After(wait):
		}
	}
}

// call makes one HTTP call for directory dir ("" for none), with body
// encoded as JSON, and decodes the answer into out (if not nil).
func (s *server) call(ctx context.Context, method, path, dir string, body, out any) error {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	return s.callLong(ctx, method, path, dir, body, out)
}

// callLong is call without its time limit, for a call that answers when
// a turn is over (a command's).
func (s *server) callLong(ctx context.Context, method, path, dir string, body, out any) error {
	req, err := s.request(ctx, method, path, dir, body)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return s.failed(method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return s.failed(method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		return &statusError{method: method, path: path, code: resp.StatusCode, status: resp.Status, body: bytes.TrimSpace(data)}
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("opencode %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// statusError is a call the server answered with a status other than
// 2xx, and what it said.
type statusError struct {
	method, path string
	code         int
	status       string
	body         []byte
}

func (e *statusError) Error() string {
	return fmt.Sprintf("opencode %s %s: %s: %s", e.method, e.path, e.status, e.body)
}

// notFound reports whether err is the server's 404.
func notFound(err error) bool {
	var se *statusError
	return errors.As(err, &se) && se.code == http.StatusNotFound
}

// failed is a call's error; if the server died meanwhile, its exit
// (status and stderr) says more.
func (s *server) failed(method, path string, err error) error {
	select {
	case <-s.l.Done():
		return s.l.Exited()
	default:
	}
	return fmt.Errorf("opencode %s %s: %w", method, path, err)
}

// request makes an authenticated request for directory dir.
func (s *server) request(ctx context.Context, method, path, dir string, body any) (*http.Request, error) {
	u := s.base.JoinPath(path)
	if dir != "" {
		u.RawQuery = url.Values{"directory": {dir}}.Encode()
	}
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), r)
	if err != nil {
		return nil, err
	}
	req.SetBasicAuth(authUser, s.password)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

func (s *server) alive() bool {
	select {
	case <-s.l.Done():
		return false
	default:
		return true
	}
}

// Done is closed once the server has exited.
func (s *server) Done() <-chan struct{} { return s.l.Done() }

// Exited is how the server exited, with its stderr.
func (s *server) Exited() error { return s.l.Exited() }

// Stop closes the event streams and stops the server (its own) or lets
// it go (the shared one), disposing of the instances no other bridge
// uses.
func (s *server) Stop() {
	s.leaveAll()
	s.mu.Lock()
	streams := s.streams
	s.streams = map[string]*eventStream{}
	s.mu.Unlock()
	for _, es := range streams {
		es.close()
	}
	s.l.Stop()
}

// eventStream is the one SSE consumer of a directory's instance: it
// reconnects when the stream drops, as long as the server runs.
type eventStream struct {
	s    *server
	dir  string
	stop context.CancelFunc

	connected chan struct{} // closed at the first server.connected
	once      sync.Once
	done      chan struct{} // closed once run returns
}

// events returns the directory's event stream, connecting it if needed,
// and waits until it is connected, so that a prompt sent after it misses
// nothing.
func (s *server) events(ctx context.Context, dir string) error {
	s.mu.Lock()
	es := s.streams[dir]
	if es == nil {
		var sctx context.Context
		es = &eventStream{s: s, dir: dir, connected: make(chan struct{}), done: make(chan struct{})}
		sctx, es.stop = context.WithCancel(context.Background())
		s.streams[dir] = es
		go es.run(sctx)
	}
	s.mu.Unlock()
	select {
	case <-es.connected:
		return nil
	case <-s.l.Done():
		return s.l.Exited()
	case <-ctx.Done():
		return fmt.Errorf("opencode's event stream for %s did not connect: %w", dir, ctx.Err())
	}
}

// close stops the stream and waits until it is no longer connected.
func (es *eventStream) close() {
	es.stop()
	<-es.done
}

// prepare has OpenCode load its providers for dir (GET /config/providers),
// once per directory, before a session there prompts. OpenCode (1.18)
// loads them lazily at a directory's first prompt and keeps the outcome:
// a first prompt cancelled while they load leaves every later prompt in
// that directory failing ("All fibers interrupted") until it restarts.
// The call also bootstraps the directory's instance when it is the first
// for dir, which takes seconds on a loaded machine: ctx bounds it (the
// session's start), not callTimeout.
func (s *server) prepare(ctx context.Context, dir string) error {
	s.mu.Lock()
	done := s.prepared[dir]
	s.mu.Unlock()
	if done {
		return nil
	}
	var providers json.RawMessage
	if err := s.callLong(ctx, http.MethodGet, "/config/providers", dir, nil, &providers); err != nil {
		return fmt.Errorf("loading opencode's providers for %s: %w", dir, err)
	}
	s.loaded(dir)
	return nil
}

// loaded notes that OpenCode has loaded its providers for dir.
func (s *server) loaded(dir string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prepared[dir] = true
}

// run reads the stream, reconnecting after a drop until stopped or the
// server is gone.
func (es *eventStream) run(ctx context.Context) {
	defer close(es.done)
	for wait := 50 * time.Millisecond; ctx.Err() == nil && es.s.alive(); wait = min(2*wait, 2*time.Second) {
		if err := es.read(ctx); err != nil && ctx.Err() == nil && es.s.alive() {
			es.s.log.Debug("opencode event stream dropped; reconnecting", "dir", es.dir, "err", err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// maxEvent bounds one event: a tool part carries its whole output.
const maxEvent = 64 << 20

func (es *eventStream) read(ctx context.Context) error {
	req, err := es.s.request(ctx, http.MethodGet, "/event", es.dir, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := es.s.stream.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /event: %s", resp.Status)
	}
	for e, err := range sse.Read(resp.Body, &sse.ReadConfig{MaxEventSize: maxEvent}) {
		if err != nil {
			return err
		}
		if !es.s.alive() {
			// What a dead server's stream still holds would reach a turn
			// that its death already ended, or the next one.
			return errors.New("the server exited")
		}
		var ev Event
		if json.Unmarshal([]byte(e.Data), &ev) != nil {
			es.s.log.Warn("opencode sent an event that is not JSON; skipping it", "data", agentkit.Truncate([]byte(e.Data), 200))
			continue
		}
		if ev.Type == "server.connected" {
			first := false
			es.once.Do(func() { close(es.connected); first = true })
			if !first { // tell the sessions: events may have been lost
				es.s.broadcast(es.dir, Event{Type: reconnectedEvent})
			}
		}
		es.s.dispatch(es.dir, ev)
	}
	return errors.New("the event stream ended")
}
