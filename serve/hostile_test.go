package serve

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// 1,000 hostile requests — half-open connections that send part of a
// request and wait, bad tokens, headers past the limit — leave the
// server's goroutines and descriptors where they were, and a normal
// request answers during the flood and after it.
func TestServer_hostileRequestsLeaveNothing(t *testing.T) {
	s, stderr := newServer(t, Options{})
	s.http.ReadHeaderTimeout = 500 * time.Millisecond // 10 s in use
	s.guard.guesses.every = time.Microsecond          // guessEvery in use: the normal requests get through
	s.mount("/stub", ok, nil)
	r := start(t, s, stderr)
	addr := strings.TrimPrefix(r.URL(), "http://")
	normal(t, r)
	goroutines, fds := servetest.Settled(0, 0, time.Second)

	half := halfOpen(t, addr, 334)
	normal(t, r) // while they hang
	refusals(t, r, addr, 666)
	for i, c := range half {
		c.SetReadDeadline(time.Now().Add(time.Minute))
		_, err := c.Read(make([]byte, 512))
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("half-open connection %d still open a minute after ReadHeaderTimeout", i)
		}
		c.Close()
	}
	g, f := servetest.Settled(goroutines, fds, time.Minute)
	t.Logf("goroutines %d → %d, descriptors %d → %d", goroutines, g, fds, f)
	if g > goroutines+2 || f > fds+2 {
		t.Errorf("after 1,000 hostile requests: %d goroutines (%d before), %d descriptors (%d before)", g, goroutines, f, fds)
	}
	normal(t, r)
}

// normal sends a request as a client should, and wants it answered.
func normal(t *testing.T, r *running) {
	t.Helper()
	if resp, body := r.do(t, "GET", "/stub", map[string]string{"Authorization": r.bearer()}); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("a normal request: %s %q", resp.Status, body)
	}
	http.DefaultClient.CloseIdleConnections()
}

// halfOpen opens n connections that each send part of a request (the
// request line, or headers without their end) and then nothing.
func halfOpen(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	parts := []string{"GET /stub HTT", "GET /stub HTTP/1.1\r\nHost: " + addr + "\r\nX-Slow: 1\r\n", "P"}
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range n {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("half-open connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte(parts[i%len(parts)])); err != nil {
			t.Fatalf("half-open connection %d: %v", i, err)
		}
	}
	return conns
}

// refusals sends n requests, 16 at a time, each on a connection of its
// own: bad tokens (401, or 429 once they come too fast) and headers past
// the limit (431).
func refusals(t *testing.T, r *running, addr string, n int) {
	t.Helper()
	big := strings.Repeat("a", maxHeaderBytes+8<<10)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	errs := make(chan error, n)
	for i := range n {
		req, want := fmt.Sprintf("GET /stub HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer bad%d\r\n\r\n", addr, i), 401
		if i%2 == 1 {
			req, want = fmt.Sprintf("GET /stub HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nX-Big: %s\r\n\r\n", addr, r.bearer(), big), 431
		}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs <- exchange(addr, req, want, http.StatusTooManyRequests)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

// exchange sends req on a connection of its own and wants status back
// (or another status of or).
func exchange(addr, req string, want int, or ...int) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	go c.Write([]byte(req)) // the server may answer before it has read it all
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return fmt.Errorf("a request wanting %d: %v", want, err)
	}
	resp.Body.Close()
	if resp.StatusCode != want && !slices.Contains(or, resp.StatusCode) {
		return fmt.Errorf("a request wanting %d: %s", want, resp.Status)
	}
	return nil
}

// 1,100 connections without the token that send a request's headers
// announcing a body, and then nothing, hold no connection slot: each is
// answered and closed without its body being read, and a normal request
// is answered (the minute is only there to catch a hang).
func TestServer_stalledBodiesHoldNoSlot(t *testing.T) {
	s, stderr := newServer(t, Options{})
	s.mount("/stub", ok, nil)
	r := start(t, s, stderr)
	addr := strings.TrimPrefix(r.URL(), "http://")
	g0, f0 := servetest.Settled(0, 0, time.Second)
	kinds := []string{
		"POST /v1/health HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n",
		"POST /stub HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n",
	}
	conns := make([]net.Conn, 0, 1100)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := range cap(conns) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("stalled connection %d: %v", i, err)
		}
		conns = append(conns, c)
		if _, err := fmt.Fprintf(c, kinds[i%len(kinds)], addr); err != nil {
			t.Fatalf("stalled connection %d: %v", i, err)
		}
	}
	g1, f1 := servetest.Settled(0, 0, time.Second)
	t.Logf("goroutines %d → %d, descriptors %d → %d with 1,100 stalled bodies (the test's own among them)", g0, g1, f0, f1)
	if err := answered(t, r, "GET", "/stub", ""); err != nil {
		t.Fatalf("a normal request among 1,100 stalled bodies: %v", err)
	}
	for i, c := range conns {
		if err := servetest.ClosedWithin(c, time.Minute); err != nil {
			t.Fatalf("stalled connection %d (%q): %v", i, kinds[i%len(kinds)], err)
		}
	}
}

// A body that stops coming, on a request with the token, is given up on
// after the body's deadline, whether its handler reads it or not.
func TestServer_stalledBodyWithTokenTimesOut(t *testing.T) {
	s, stderr := newServer(t, Options{})
	s.guard.bodyTimeout = 200 * time.Millisecond // DefaultBodyTimeout in use
	s.mount("/stub", ok, nil)
	s.mount("/read", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
		}
	}), nil)
	r := start(t, s, stderr)
	addr := strings.TrimPrefix(r.URL(), "http://")
	for _, path := range []string{"/stub", "/read", "/acp", "/v1/acp/x", "/api/chat"} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: %s\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{", path, addr, r.bearer())
		if err := servetest.ClosedWithin(c, time.Minute); err != nil {
			t.Errorf("POST %s with a stalled body: %v", path, err)
		}
	}
	if err := answered(t, r, "POST", "/read", "a whole body"); err != nil {
		t.Fatalf("a normal POST: %v", err)
	}
}

// answered sends an authenticated request on a connection of its own,
// and wants 200 within a minute.
func answered(t *testing.T, r *running, method, path, body string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, r.URL()+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", r.bearer())
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	return nil
}

// A token shorter than the ones the server makes is refused, saying the
// length it must have.
func TestServer_weakTokenRefused(t *testing.T) {
	for _, token := range []string{"1234", strings.Repeat("a", MinTokenLength-1)} {
		_, err := New(Options{Listen: "127.0.0.1:0", Token: token})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("at least %d", MinTokenLength)) {
			t.Errorf("New with a %d-character token: %v; want it refused, saying at least %d", len(token), err, MinTokenLength)
		}
	}
	s, err := New(Options{Listen: "127.0.0.1:0", Token: strings.Repeat("a", MinTokenLength)})
	if err != nil {
		t.Fatalf("New with a %d-character token: %v", MinTokenLength, err)
	}
	s.ln.Close()
}

// Wrong tokens from one address are answered 429 once they pass the
// burst, the right one's too, without the token being checked; the
// address may try again as its allowance comes back.
func TestServer_tokenGuessesCapped(t *testing.T) {
	s, stderr := newServer(t, Options{})
	s.guard.guesses.every = time.Hour // guessEvery in use: nothing comes back during the test
	s.mount("/stub", ok, nil)
	r := start(t, s, stderr)
	for i := range guessBurst {
		if resp, _ := r.do(t, "GET", "/stub", map[string]string{"Authorization": fmt.Sprintf("Bearer guess%d", i)}); resp.StatusCode != 401 {
			t.Fatalf("wrong token %d: %s, want 401", i, resp.Status)
		}
	}
	for _, auth := range []string{"Bearer guess", r.bearer()} {
		resp, _ := r.do(t, "GET", "/stub", map[string]string{"Authorization": auth})
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("%q after %d wrong tokens: %s, Retry-After %q; want 429 with one", auth, guessBurst, resp.Status, resp.Header.Get("Retry-After"))
		}
	}
	th := s.guard.guesses
	th.mu.Lock()
	th.by["127.0.0.1"].at = time.Now().Add(-th.every) // as if an hour had gone by: one more try
	th.mu.Unlock()
	normal(t, r)
}
