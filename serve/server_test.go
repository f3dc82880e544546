package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/internal/testkit/syncbuf"
	"github.com/acpbridge/acpbridge/serve/sandbox"
)

// running is a Server under test, serving.
type running struct {
	*Server
	stderr *syncbuf.Buffer
	stop   func() error // cancels Run's ctx and returns what Run did
}

// newServer makes a Server on a free loopback port; tests mount routes
// on it before start.
func newServer(t *testing.T, o Options) (*Server, *syncbuf.Buffer) {
	t.Helper()
	if o.Listen == "" {
		o.Listen = "127.0.0.1:0"
	}
	stderr := &syncbuf.Buffer{}
	o.Stderr = stderr
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s, stderr
}

// start runs s until the test ends (or stop), and waits for its serving
// line.
func start(t *testing.T, s *Server, stderr *syncbuf.Buffer) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	var err error
	stop := func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { stop() })
	for deadline := time.Now().Add(time.Minute); !strings.Contains(stderr.String(), "acpbridge: serving on "); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no serving line after a minute; stderr: %q", stderr.String())
		}
	}
	return &running{Server: s, stderr: stderr, stop: stop}
}

// ok is a route that answers 200 "ok".
var ok = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })

// get sends method to the server's path with the headers (Host too), and
// returns the response, its body read.
func (r *running) do(t *testing.T, method, path string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(method, r.URL()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

func (r *running) bearer() string { return "Bearer " + r.Token() }

func TestServer_announcesAndCleansUp(t *testing.T) {
	state := t.TempDir()
	s, stderr := newServer(t, Options{StateDir: state})
	r := start(t, s, stderr)
	lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
	want := []string{"acpbridge: token " + r.Token() + " (saved in " + filepath.Join(state, TokenFile) + ")",
		"acpbridge: the chat page: " + r.URL() + "/#token=" + r.Token(), "acpbridge: serving on " + r.URL()}
	if fmt.Sprint(lines) != fmt.Sprint(want) {
		t.Errorf("stderr lines %q, want %q", lines, want)
	}
	if len(r.Token()) != 64 {
		t.Errorf("token %q: want 32 random bytes in hex", r.Token())
	}
	var in info
	data := private(t, filepath.Join(state, InfoFile))
	if err := json.Unmarshal(data, &in); err != nil || in.URL != r.URL() || in.PID != os.Getpid() {
		t.Errorf("serve.json %s: %+v, %v", data, in, err)
	}
	if got := string(private(t, filepath.Join(state, TokenFile))); got != r.Token() {
		t.Errorf("serve.token %q, want the token %q", got, r.Token())
	}
	if err := r.stop(); err != nil {
		t.Errorf("Run: %v", err)
	}
	if ents, _ := os.ReadDir(state); len(ents) != 0 {
		t.Errorf("left in the state directory after Run: %v", ents)
	}
}

// private reads a file that must be mode 0600.
func private(t *testing.T, path string) []byte {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("%s: mode %v, want 0600", path, fi.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	return data
}

// A token given is used as is, neither saved nor printed.
func TestServer_givenToken(t *testing.T) {
	state := t.TempDir()
	s, stderr := newServer(t, Options{StateDir: state, Token: "s3cret-token-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
	r := start(t, s, stderr)
	want := "acpbridge: the chat page: " + r.URL() + "/ (it asks for the token)\nacpbridge: serving on " + r.URL() + "\n"
	if strings.Contains(stderr.String(), "s3cret") || stderr.String() != want {
		t.Errorf("stderr %q: want the page's line, without the token, and the serving line: %q", stderr.String(), want)
	}
	if _, err := os.Stat(filepath.Join(state, TokenFile)); err == nil {
		t.Errorf("a given token was saved")
	}
	if resp, _ := r.do(t, "GET", "/nowhere", map[string]string{"Authorization": "Bearer s3cret-token-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}); resp.StatusCode != 404 {
		t.Errorf("the given token: %s", resp.Status)
	}
}

func TestServer_auth(t *testing.T) {
	s, stderr := newServer(t, Options{})
	s.mount("/stub", ok, nil)
	r := start(t, s, stderr)
	for _, tc := range []struct {
		name, path, auth string
		status           int
		challenge, ctype string
	}{
		{"no token", "/stub", "", 401, `Bearer realm="acpbridge"`, "text/plain"},
		{"wrong token", "/stub", "Bearer " + strings.Repeat("0", 64), 401, `Bearer realm="acpbridge", error="invalid_token"`, "text/plain"},
		{"token as Basic", "/stub", "Basic " + r.Token(), 401, `Bearer realm="acpbridge"`, "text/plain"},
		{"token's prefix", "/stub", "Bearer " + r.Token()[:63], 401, `Bearer realm="acpbridge", error="invalid_token"`, "text/plain"},
		{"no token under /v1", "/v1/health", "", 401, `Bearer realm="acpbridge"`, "application/problem+json"},
		{"the token", "/stub", r.bearer(), 200, "", "text/plain"},
		{"the token, lowercase scheme", "/stub", "bearer " + r.Token(), 200, "", "text/plain"},
		{"the token, no route", "/elsewhere", r.bearer(), 404, "", "text/plain"},
		{"the token, no route under /v1", "/v1/nothing", r.bearer(), 404, "", "application/problem+json"},
	} {
		resp, body := r.do(t, "GET", tc.path, map[string]string{"Authorization": tc.auth})
		if resp.StatusCode != tc.status || resp.Header.Get("WWW-Authenticate") != tc.challenge || !strings.HasPrefix(resp.Header.Get("Content-Type"), tc.ctype) {
			t.Errorf("%s: %s, WWW-Authenticate %q, Content-Type %q; want %d, %q, %q", tc.name, resp.Status,
				resp.Header.Get("WWW-Authenticate"), resp.Header.Get("Content-Type"), tc.status, tc.challenge, tc.ctype)
		}
		if tc.ctype == "application/problem+json" {
			var p sandbox.Problem
			if err := json.Unmarshal([]byte(body), &p); err != nil || p.Status != tc.status || !strings.HasPrefix(p.Type, "urn:sandbox-agent:error:") || p.Title == "" || p.Detail == "" {
				t.Errorf("%s: problem %s (%v)", tc.name, body, err)
			}
		}
	}
}

func TestServer_hostAndOrigin(t *testing.T) {
	s, stderr := newServer(t, Options{AllowHosts: []string{"box.example", "acp.example:8443", "[fd00::1]"},
		AllowOrigins: []string{"https://App.Example/"}})
	s.mount("/stub", ok, nil)
	r := start(t, s, stderr)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(r.URL(), "http://"))
	for _, tc := range []struct {
		host, origin string
		status       int
		cors         bool
	}{
		{"evil.example:" + port, "", 403, false},
		{"evil.example", "", 403, false},
		{"localhost:1", "", 403, false},
		{"acp.example:8444", "", 403, false},
		{"127.0.0.1:" + port, "", 200, false},
		{"localhost:" + port, "", 200, false},
		{"LOCALHOST:" + port, "", 200, false},
		{"[::1]:" + port, "", 200, false},
		{"box.example", "", 200, false},
		{"box.example:9000", "", 200, false},
		{"acp.example:8443", "", 200, false},
		{"[fd00::1]:2468", "", 200, false},
		{"127.0.0.1:" + port, "https://evil.example", 403, false},
		{"127.0.0.1:" + port, "null", 403, false},
		{"127.0.0.1:" + port, "http://localhost:" + port, 403, false},
		{"127.0.0.1:" + port, "http://127.0.0.1:" + port, 200, true},
		{"localhost:" + port, "http://localhost:" + port, 200, true},
		{"127.0.0.1:" + port, "https://app.example", 200, true},
	} {
		resp, _ := r.do(t, "GET", "/stub", map[string]string{"Host": tc.host, "Origin": tc.origin, "Authorization": r.bearer()})
		cors := resp.Header.Get("Access-Control-Allow-Origin")
		if resp.StatusCode != tc.status || (cors != "") != tc.cors || tc.cors && (cors != tc.origin ||
			!strings.Contains(resp.Header.Get("Access-Control-Expose-Headers"), "Acp-Connection-Id, Acp-Session-Id")) {
			t.Errorf("Host %q, Origin %q: %s, CORS %q; want %d, CORS %v", tc.host, tc.origin, resp.Status, cors, tc.status, tc.cors)
		}
	}
}

// A preflight from an allowed origin is answered before auth (browsers
// send no Authorization with one); one from another origin is refused.
func TestServer_preflight(t *testing.T) {
	s, stderr := newServer(t, Options{AllowOrigins: []string{"https://app.example"}})
	r := start(t, s, stderr)
	pre := map[string]string{"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
		"Access-Control-Request-Headers": "authorization, content-type, acp-connection-id"}
	resp, _ := r.do(t, "OPTIONS", "/acp", pre)
	h := resp.Header
	if resp.StatusCode != 204 || h.Get("Access-Control-Allow-Origin") != "https://app.example" || h.Get("Access-Control-Allow-Credentials") != "true" ||
		!strings.Contains(h.Get("Access-Control-Allow-Methods"), "DELETE") || h.Get("Access-Control-Allow-Headers") != pre["Access-Control-Request-Headers"] {
		t.Errorf("preflight: %s %v", resp.Status, h)
	}
	pre["Origin"] = "https://evil.example"
	if resp, _ := r.do(t, "OPTIONS", "/acp", pre); resp.StatusCode != 403 || resp.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from another origin: %s %v", resp.Status, resp.Header)
	}
	if resp, _ := r.do(t, "OPTIONS", "/acp", nil); resp.StatusCode != 401 {
		t.Errorf("OPTIONS without an origin: %s, want 401 (no preflight: it goes through auth)", resp.Status)
	}
}

func TestNew_refusals(t *testing.T) {
	for _, tc := range []struct {
		o    Options
		want string
	}{
		{Options{Listen: "0.0.0.0:0", NoToken: true}, "--no-token: 0.0.0.0:0 is not a loopback address"},
		{Options{Listen: ":0", NoToken: true}, "not a loopback address"},
		{Options{Listen: "127.0.0.1:0", NoToken: true, Token: "abc"}, "choose one"},
		{Options{Listen: "127.0.0.1:0", Token: "two words"}, "may hold only"},
		{Options{Listen: "127.0.0.1"}, "want HOST:PORT"},
		{Options{Listen: "127.0.0.1:0", AllowHosts: []string{"::1"}}, "in brackets"},
		{Options{Listen: "127.0.0.1:0", AllowHosts: []string{"http://x"}}, "--allow-host"},
		{Options{Listen: "127.0.0.1:0", AllowOrigins: []string{"app.example"}}, "--allow-origin"},
		{Options{Listen: "127.0.0.1:0", AllowOrigins: []string{"https://app.example/path"}}, "--allow-origin"},
	} {
		s, err := New(tc.o)
		if err == nil {
			s.ln.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v) = %v; want an error with %q", tc.o, err, tc.want)
		}
	}
	for _, listen := range []string{"127.0.0.1:0", "localhost:0", "[::1]:0"} {
		s, err := New(Options{Listen: listen, NoToken: true})
		if err != nil {
			if listen == "[::1]:0" && strings.Contains(err.Error(), "cannot assign") {
				continue // no IPv6 here
			}
			t.Errorf("--no-token on %s: %v", listen, err)
			continue
		}
		s.ln.Close()
	}
}

func TestServer_noTokenOnLoopback(t *testing.T) {
	s, stderr := newServer(t, Options{NoToken: true, StateDir: t.TempDir()})
	s.mount("/stub", ok, nil)
	r := start(t, s, stderr)
	if resp, body := r.do(t, "GET", "/stub", nil); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("--no-token: %s %q", resp.Status, body)
	}
	if resp, _ := r.do(t, "GET", "/stub", map[string]string{"Host": "evil.example"}); resp.StatusCode != 403 {
		t.Errorf("--no-token, a foreign Host: %s", resp.Status)
	}
	if strings.Contains(stderr.String(), "token") {
		t.Errorf("stderr %q mentions a token", stderr.String())
	}
}

// At shutdown every client connection is closed (the edges' closeAll),
// and a handler that still holds on is cut off after ShutdownTimeout.
//
// Whether shutdown waited for ShutdownTimeout is told by its log line,
// not by the clock: on a loaded machine a prompt shutdown can take longer.
func TestServer_shutdown(t *testing.T) {
	const cutOff = "requests still running at shutdown"
	log := &syncbuf.Buffer{}
	s, stderr := newServer(t, Options{Logger: slog.New(slog.NewTextHandler(log, nil))})
	closed := make(chan struct{})
	s.mount("/stream", stream(closed), func() { close(closed) })
	stuck := make(chan struct{})
	defer close(stuck)
	s.mount("/stuck", stream(stuck), nil)
	r := start(t, s, stderr)

	streamBody := open(t, r, "/stream")
	r.stop()
	if strings.Contains(log.String(), cutOff) {
		t.Errorf("shutdown with a stream its closeAll ends waited for ShutdownTimeout: %s", log.String())
	}
	if _, err := io.ReadAll(streamBody); err != nil {
		t.Errorf("the stream after shutdown: %v", err)
	}

	log = &syncbuf.Buffer{}
	s, stderr = newServer(t, Options{Logger: slog.New(slog.NewTextHandler(log, nil))})
	s.mount("/stuck", stream(stuck), nil)
	r = start(t, s, stderr)
	stuckBody := open(t, r, "/stuck")
	began := time.Now()
	r.stop()
	if took := time.Since(began); took < ShutdownTimeout || !strings.Contains(log.String(), cutOff) {
		t.Errorf("shutdown with a handler that holds on took %v and logged %q; want ShutdownTimeout (%v), then the connections closed", took, log.String(), ShutdownTimeout)
	}
	io.ReadAll(stuckBody) // its connection closed: the read ends
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(r.URL(), "http://"), time.Second); err == nil {
		t.Errorf("the listener still accepts after Run returned")
	}
}

// stream is a route that streams until end is closed.
func stream(end <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-end
	})
}

// open GETs path and returns the streaming body.
func open(t *testing.T, r *running, path string) io.ReadCloser {
	t.Helper()
	req, _ := http.NewRequest("GET", r.URL()+path, nil)
	req.Header.Set("Authorization", r.bearer())
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %v %v", path, resp, err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp.Body
}
