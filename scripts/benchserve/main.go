// Command benchserve measures acpbridge serve against acpbridge on stdio,
// with the built-in mock agent, and prints a table:
//
//   - the time per streamed update (a turn's time over the updates it
//     streamed, p50 and p99 over the turns) on stdio, over Streamable HTTP
//     (SSE) and over WebSocket, and the overhead of each over stdio;
//   - N concurrent sessions on one serve process (one connection each,
//     half SSE, half WebSocket, every session prompting at once): the time
//     to the first update and per update, p50 and p99, and the serve
//     process's peak RSS (VmHWM).
//
// Usage: go run ./scripts/benchserve -bin ./bin/acpbridge [-turns 200] [-words 100] [-sessions 200]
// (scripts/bench-serve.sh builds the binary and runs it.)
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

func main() {
	bin := flag.String("bin", "bin/acpbridge", "the acpbridge binary")
	turns := flag.Int("turns", 200, "turns per transport for the per-update numbers")
	words := flag.Int("words", 100, "words per prompt (the mock streams one update per word)")
	sessions := flag.Int("sessions", 200, "concurrent sessions on one serve process")
	flag.Parse()
	if err := run(*bin, *turns, *words, *sessions); err != nil {
		fmt.Fprintln(os.Stderr, "benchserve:", err)
		os.Exit(1)
	}
}

func run(bin string, turns, words, sessions int) error {
	tmp, err := os.MkdirTemp("", "benchserve")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	prompt := strings.TrimSpace(strings.Repeat("word ", words))

	st, err := dialStdio(bin, filepath.Join(tmp, "stdio"))
	if err != nil {
		return err
	}
	stdioTimes, err := perUpdate(st, nil, tmp, prompt, turns)
	st.close()
	if err != nil {
		return fmt.Errorf("stdio: %w", err)
	}

	srv, err := startServe(bin, filepath.Join(tmp, "serve"))
	if err != nil {
		return err
	}
	defer srv.stop()
	s, init, err := dialSSE(srv.web, initialize(0))
	if err != nil {
		return err
	}
	_ = init
	sseTimes, err := perUpdate(s, s, tmp, prompt, turns)
	s.close()
	if err != nil {
		return fmt.Errorf("sse: %w", err)
	}
	w, err := dialWS(srv.web)
	if err != nil {
		return err
	}
	if err := w.send(initialize(0)); err != nil {
		return err
	}
	if _, _, err := await(w, 0, nil); err != nil {
		return err
	}
	wsTimes, err := perUpdate(w, nil, tmp, prompt, turns)
	w.close()
	if err != nil {
		return fmt.Errorf("websocket: %w", err)
	}

	fmt.Printf("time per streamed update, mock agent, %d turns of %d updates each\n\n", turns, words+2)
	fmt.Println("| transport | p50 | p99 | overhead over stdio, p50 |")
	fmt.Println("|---|---|---|---|")
	base := pct(stdioTimes, 50)
	for _, row := range []struct {
		name  string
		times []time.Duration
	}{{"stdio", stdioTimes}, {"Streamable HTTP (SSE)", sseTimes}, {"WebSocket", wsTimes}} {
		fmt.Printf("| %s | %s | %s | %s |\n", row.name, us(pct(row.times, 50)), us(pct(row.times, 99)), us(pct(row.times, 50)-base))
	}

	first, each, err := concurrent(srv, tmp, prompt, sessions)
	if err != nil {
		return fmt.Errorf("%d sessions: %w", sessions, err)
	}
	rss, err := peakRSS(srv.Cmd.Process.Pid)
	if err != nil {
		return err
	}
	fmt.Printf("\n%d concurrent sessions on one acpbridge serve (mock agent; half SSE, half WebSocket; all prompting at once)\n\n", sessions)
	fmt.Println("| | p50 | p99 |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| prompt → first update | %s | %s |\n", ms(pct(first, 50)), ms(pct(first, 99)))
	fmt.Printf("| per update | %s | %s |\n", us(pct(each, 50)), us(pct(each, 99)))
	fmt.Printf("\npeak RSS of the serve process: %.1f MB\n", float64(rss)/1e6)
	return nil
}

func initialize(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`, id)
}

// attacher is a transport whose session's messages come on a stream of
// their own (SSE).
type attacher interface{ attach(id string) error }

// newSession makes a session and returns its id; the next request id is 2.
func newSession(t transport, a attacher, cwd string) (string, error) {
	if err := t.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, cwd)); err != nil {
		return "", err
	}
	res, _, err := await(t, 1, nil)
	if err != nil {
		return "", err
	}
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &r); err != nil || r.SessionID == "" {
		return "", fmt.Errorf("session/new answered %s", res)
	}
	if a != nil {
		return r.SessionID, a.attach(r.SessionID)
	}
	return r.SessionID, nil
}

func promptMsg(id int, session, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, id, session, text)
}

// perUpdate runs turns on one new session and returns each turn's time
// over the updates it streamed.
func perUpdate(t transport, a attacher, cwd, prompt string, turns int) ([]time.Duration, error) {
	if _, ok := t.(*stdio); ok {
		if err := t.send(initialize(0)); err != nil {
			return nil, err
		}
		if _, _, err := await(t, 0, nil); err != nil {
			return nil, err
		}
	}
	session, err := newSession(t, a, cwd)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	for i := range turns + 5 {
		id := 2 + i
		start := time.Now()
		if err := t.send(promptMsg(id, session, prompt)); err != nil {
			return nil, err
		}
		_, n, err := await(t, id, nil)
		if err != nil {
			return nil, err
		}
		if i >= 5 && n > 0 { // the first turns warm up
			out = append(out, time.Since(start)/time.Duration(n))
		}
	}
	return out, nil
}

// concurrent runs n sessions on n connections, each prompting once at the
// same moment, and returns the times to each turn's first update and per
// update.
func concurrent(srv *served, cwd, prompt string, n int) (first, each []time.Duration, err error) {
	type client struct {
		t       transport
		session string
	}
	clients := make([]client, n)
	for i := range clients {
		var t transport
		var a attacher
		if i%2 == 0 {
			s, _, err := dialSSE(srv.web, initialize(0))
			if err != nil {
				return nil, nil, err
			}
			t, a = s, s
		} else {
			w, err := dialWS(srv.web)
			if err == nil {
				err = w.send(initialize(0))
			}
			if err == nil {
				_, _, err = await(w, 0, nil)
			}
			if err != nil {
				return nil, nil, err
			}
			t = w
		}
		defer t.close()
		session, err := newSession(t, a, cwd)
		if err != nil {
			return nil, nil, err
		}
		clients[i] = client{t, session}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i, c := range clients {
		wg.Go(func() {
			<-start
			began := time.Now()
			var firstAt time.Duration
			if errs[i] = c.t.send(promptMsg(2, c.session, prompt)); errs[i] != nil {
				return
			}
			_, updates, err := await(c.t, 2, func() {
				if firstAt == 0 {
					firstAt = time.Since(began)
				}
			})
			if errs[i] = err; err != nil || updates == 0 {
				return
			}
			mu.Lock()
			first = append(first, firstAt)
			each = append(each, time.Since(began)/time.Duration(updates))
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return first, each, errors.Join(errs...)
}

// served is acpbridge serve running for the benchmark.
type served struct {
	web
	*benchkit.Serve
}

func startServe(bin, state string) (*served, error) {
	srv, err := benchkit.StartServe(bin, state)
	if err != nil {
		return nil, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	return &served{web: web{url: srv.URL, token: srv.Token, client: client}, Serve: srv}, nil
}

func (s *served) stop() { s.Stop() }

// peakRSS is a process's VmHWM, in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb * 1024, nil
		}
	}
	return 0, errors.New("no VmHWM in /proc/PID/status")
}

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func us(d time.Duration) string { return fmt.Sprintf("%.3f ms", float64(d)/1e6) }
func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
