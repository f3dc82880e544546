package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"sync"

	"github.com/coder/websocket"
)

// transport is one ACP client connection to acpbridge, as the benchmark
// drives it: it sends a JSON-RPC message and receives the bridge's, one at
// a time, whatever carries them.
type transport interface {
	send(msg string) error
	recv() ([]byte, error)
	close()
}

// stdio is acpbridge run as an editor runs it.
type stdio struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func dialStdio(bin, state string) (*stdio, error) {
	cmd := exec.Command(bin, "--agent", "mock", "--state-dir", state, "--log-level", "error")
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &stdio{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}, nil
}

func (s *stdio) send(msg string) error {
	_, err := io.WriteString(s.in, msg+"\n")
	return err
}

func (s *stdio) recv() ([]byte, error) { return s.out.ReadBytes('\n') }

func (s *stdio) close() {
	s.in.Close()
	s.cmd.Wait()
}

// web is a client connection to acpbridge serve: its base URL and token.
type web struct {
	url, token string
	client     *http.Client
}

func (w web) request(ctx context.Context, method, body string, headers map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, w.url+"/acp", strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return w.client.Do(req)
}

// sse is a Streamable HTTP connection: messages POSTed, the bridge's read
// from the connection's SSE stream and, once a session is made, from the
// session's.
type sse struct {
	web
	conn    string
	session string
	cancel  context.CancelFunc
	msgs    chan []byte
	errs    chan error
	wg      sync.WaitGroup
}

func dialSSE(w web, init string) (*sse, []byte, error) {
	resp, err := w.request(context.Background(), http.MethodPost, init, nil)
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("initialize: %d %s %v", resp.StatusCode, body, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &sse{web: w, conn: resp.Header.Get("Acp-Connection-Id"), cancel: cancel, msgs: make(chan []byte, 4096), errs: make(chan error, 4)}
	if err := s.open(ctx, ""); err != nil {
		cancel()
		return nil, nil, err
	}
	return s, body, nil
}

// open opens the connection's stream, or session's.
func (s *sse) open(ctx context.Context, session string) error {
	h := map[string]string{"Accept": "text/event-stream", "Acp-Connection-Id": s.conn}
	if session != "" {
		h["Acp-Session-Id"] = session
	}
	resp, err := s.request(ctx, http.MethodGet, "", h)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return fmt.Errorf("GET stream: %d", resp.StatusCode)
	}
	s.wg.Go(func() { s.read(resp.Body) })
	return nil
}

func (s *sse) read(body io.ReadCloser) {
	defer body.Close()
	r := bufio.NewReaderSize(body, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			s.errs <- err
			return
		}
		if data, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
			s.msgs <- bytes.TrimRight(data, "\r\n")
		}
	}
}

func (s *sse) send(msg string) error {
	h := map[string]string{"Acp-Connection-Id": s.conn}
	if s.session != "" && strings.Contains(msg, `"sessionId"`) {
		h["Acp-Session-Id"] = s.session
	}
	resp, err := s.request(context.Background(), http.MethodPost, msg, h)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		return fmt.Errorf("POST: %d", resp.StatusCode)
	}
	return nil
}

// attach opens session id's stream, where its updates and answers come.
func (s *sse) attach(id string) error {
	s.session = id
	ctx, cancel := context.WithCancel(context.Background())
	prev := s.cancel
	s.cancel = func() { cancel(); prev() }
	return s.open(ctx, id)
}

func (s *sse) recv() ([]byte, error) {
	select {
	case m := <-s.msgs:
		return m, nil
	case err := <-s.errs:
		return nil, err
	}
}

func (s *sse) close() {
	resp, err := s.request(context.Background(), http.MethodDelete, "", map[string]string{"Acp-Connection-Id": s.conn})
	if err == nil {
		resp.Body.Close()
	}
	s.cancel()
	s.wg.Wait()
}

// ws is a WebSocket connection: one message per text frame each way.
type ws struct{ c *websocket.Conn }

func dialWS(w web) (*ws, error) {
	h := http.Header{"Authorization": {"Bearer " + w.token}}
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(w.url, "http")+"/acp",
		&websocket.DialOptions{HTTPHeader: h, HTTPClient: w.client})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(16 << 20)
	return &ws{c}, nil
}

func (w *ws) send(msg string) error {
	return w.c.Write(context.Background(), websocket.MessageText, []byte(msg))
}

func (w *ws) recv() ([]byte, error) {
	_, b, err := w.c.Read(context.Background())
	return b, err
}

func (w *ws) close() { w.c.Close(websocket.StatusNormalClosure, "") }

// message is what the benchmark reads of a bridge's message.
type message struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// await reads until the answer to request id, counting the session
// updates on the way and calling each(arrival index) for each.
func await(t transport, id int, each func()) (json.RawMessage, int, error) {
	updates := 0
	for {
		b, err := t.recv()
		if err != nil {
			return nil, updates, err
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, updates, fmt.Errorf("%w: %s", err, b)
		}
		switch {
		case m.Method == "session/update":
			updates++
			if each != nil {
				each()
			}
		case m.ID != nil && *m.ID == id && m.Method == "":
			if m.Error != nil {
				return nil, updates, fmt.Errorf("request %d: %s", id, m.Error)
			}
			return m.Result, updates, nil
		}
	}
}
