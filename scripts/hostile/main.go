// Command hostile measures acpbridge serve under a hostile local process
// (issue 36): it starts the binary on the mock agent and reads the serve
// process's descriptors, threads and RSS from /proc around three floods,
// each on a fresh server:
//
//   - stalled: connections without the token that send a request's
//     headers announcing a body (Content-Length, or chunked) and then
//     nothing; then whether an authenticated GET /v1/health is answered
//     within 5 s, and how many stalled connections the server still
//     holds after -wait;
//   - websockets: authenticated WebSockets that upgrade and then send
//     nothing and read nothing, and one stopped halfway through a frame
//     that announces 2^62 bytes; how many are still open after -wait;
//   - sessions: sessions made one after the other (a WebSocket each,
//     initialize and session/new, then closed); the descriptors then and
//     after -wait, when they are idle.
//
// Usage: go run ./scripts/hostile -bin bin/acpbridge [-stalled 1100] [-websockets 300] [-sessions 100] [-wait 75s]
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
	"github.com/coder/websocket"
)

func main() {
	bin := flag.String("bin", "bin/acpbridge", "the acpbridge binary")
	stalled := flag.Int("stalled", 1100, "stalled-body connections (0: skip)")
	sockets := flag.Int("websockets", 300, "silent WebSockets (0: skip)")
	sessions := flag.Int("sessions", 100, "sessions made, then left idle (0: skip)")
	wait := flag.Duration("wait", 75*time.Second, "how long to wait before counting again")
	flag.Parse()
	if err := run(*bin, *stalled, *sockets, *sessions, *wait); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
}

func run(bin string, stalled, sockets, sessions int, wait time.Duration) error {
	tmp, err := os.MkdirTemp("", "hostile")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	floods := []struct {
		n    int
		name string
		f    func(*server, int, time.Duration) error
	}{{stalled, "stalled", stalledBodies}, {sockets, "websockets", silentSockets}, {sessions, "sessions", idleSessions}}
	for i, fl := range floods {
		if fl.n == 0 {
			continue
		}
		s, err := startServe(bin, filepath.Join(tmp, strconv.Itoa(i)))
		if err != nil {
			return err
		}
		fmt.Printf("%s (%d):\n", fl.name, fl.n)
		s.report("  at start")
		err = fl.f(s, fl.n, wait)
		s.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", fl.name, err)
		}
	}
	return nil
}

// stalledBodies opens n connections that announce a body and send none,
// without the token.
func stalledBodies(s *server, n int, wait time.Duration) error {
	kinds := []string{
		"POST /v1/health HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n",
		"POST /v1/health HTTP/1.1\r\nHost: %s\r\nTransfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: %s\r\nContent-Length: 100000\r\n\r\n",
	}
	conns := make([]net.Conn, 0, n)
	defer func() { closeAll(conns) }()
	for i := range n {
		c, err := net.Dial("tcp", s.Addr)
		if err != nil {
			return err
		}
		conns = append(conns, c)
		fmt.Fprintf(c, kinds[i%len(kinds)], s.Addr)
	}
	time.Sleep(time.Second)
	s.report("  1 s after")
	s.health()
	time.Sleep(wait)
	s.report(fmt.Sprintf("  %v after", wait+time.Second))
	fmt.Printf("  still open after %v: %d of %d\n", wait+time.Second, stillOpen(conns), n)
	s.health()
	return nil
}

// silentSockets opens n WebSockets that never send or read a frame, and
// one more stopped halfway through a frame of 2^62 bytes.
func silentSockets(s *server, n int, wait time.Duration) error {
	conns := make([]net.Conn, 0, n+1)
	defer func() { closeAll(conns) }()
	for range n + 1 {
		c, err := s.upgrade()
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	half := conns[n] // FIN, text; masked, 64-bit length 2^62; the mask; no payload
	hdr := []byte{0x81, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}
	binary.BigEndian.PutUint64(hdr[2:10], 1<<62)
	half.Write(hdr)
	time.Sleep(time.Second)
	s.report("  1 s after")
	time.Sleep(wait)
	s.report(fmt.Sprintf("  %v after", wait+time.Second))
	fmt.Printf("  still open after %v: %d of %d silent, half frame %d of 1\n",
		wait+time.Second, stillOpen(conns[:n]), n, stillOpen(conns[n:]))
	return nil
}

// idleSessions makes n sessions, each on a WebSocket closed after it.
func idleSessions(s *server, n int, wait time.Duration) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	for i := range n {
		if err := s.newSession(cwd); err != nil {
			return fmt.Errorf("session %d: %w", i, err)
		}
	}
	s.report("  made")
	time.Sleep(wait)
	s.report(fmt.Sprintf("  %v after", wait))
	return nil
}

// server is acpbridge serve running for the measurement.
type server struct {
	*benchkit.Serve
	initialized string
}

func startServe(bin, state string) (*server, error) {
	srv, err := benchkit.StartServe(bin, state)
	if err != nil {
		return nil, err
	}
	return &server{Serve: srv}, nil
}

// stop stops the server and says how long it took to exit.
func (s *server) stop() {
	fmt.Printf("  exit after SIGINT: %v\n", s.Stop().Round(10*time.Millisecond))
}

// report prints the serve process's descriptors, threads and RSS.
func (s *server) report(when string) {
	pid := s.Cmd.Process.Pid
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	status, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	field := func(name string) string {
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, name+":"); ok {
				return strings.Join(strings.Fields(v), " ")
			}
		}
		return "?"
	}
	fmt.Printf("%s: fds %d, threads %s, RSS %s\n", when, len(fds), field("Threads"), field("VmRSS"))
}

// health sends an authenticated GET /v1/health and says how it went.
func (s *server) health() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/v1/health", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	t0 := time.Now()
	resp, err := (&http.Client{Transport: &http.Transport{DisableKeepAlives: true}}).Do(req)
	if err != nil {
		fmt.Printf("  authenticated GET /v1/health: %v after %v\n", err, time.Since(t0).Round(time.Millisecond))
		return
	}
	resp.Body.Close()
	fmt.Printf("  authenticated GET /v1/health: %s in %v\n", resp.Status, time.Since(t0).Round(time.Millisecond))
}

// upgrade opens a WebSocket to /acp by hand and reads its 101; the
// connection is then left alone.
func (s *server) upgrade() (net.Conn, error) {
	c, err := net.Dial("tcp", s.Addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET /acp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", s.Addr, s.Token)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err == nil && resp.StatusCode != http.StatusSwitchingProtocols {
		err = errors.New(resp.Status)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("upgrading: %w", err)
	}
	c.SetReadDeadline(time.Time{})
	return c, nil
}

// newSession makes one session on a WebSocket of its own, then closes it.
func (s *server) newSession(cwd string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+s.Addr+"/acp", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + s.Token}}})
	if err != nil {
		return err
	}
	defer ws.CloseNow()
	msgs := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":` + strconv.Quote(cwd) + `,"mcpServers":[]}}`,
	}
	for i, m := range msgs {
		if err := ws.Write(ctx, websocket.MessageText, []byte(m)); err != nil {
			return err
		}
		for want := fmt.Sprintf(`"id":%d,`, i+1); ; {
			_, b, err := ws.Read(ctx)
			if err != nil {
				return err
			}
			if strings.Contains(string(b), `"error"`) {
				return fmt.Errorf("%s", b)
			}
			if strings.Contains(string(b), want) && strings.Contains(string(b), `"result"`) {
				break
			}
		}
	}
	return ws.Close(websocket.StatusNormalClosure, "")
}

// stillOpen counts the connections the server has not closed: reading
// one gets neither EOF nor a reset within a moment.
func stillOpen(conns []net.Conn) int {
	n := 0
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			n++
		}
	}
	return n
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		c.Close()
	}
}
