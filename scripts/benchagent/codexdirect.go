package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

// directSession drives a run on the app-server's own protocol:
// initialize (answered with the server's userAgent), the initialized
// notification, thread/start {cwd} (answered with the thread's id), then
// per prompt turn/start {threadId, input} and the turn's notifications up
// to its turn/completed.
type directSession struct {
	rc       *rpcClient
	threadID string
}

// Initialize sends initialize and returns the app-server's userAgent.
func (d *directSession) Initialize(ctx context.Context) (string, error) {
	var ir struct {
		UserAgent string `json:"userAgent"`
	}
	err := d.rc.call(ctx, "initialize", map[string]any{
		"clientInfo":   map[string]any{"name": "benchcodex", "title": "benchcodex", "version": "0"},
		"capabilities": map[string]any{"experimentalApi": false},
	}, &ir)
	if err != nil {
		return "", fmt.Errorf("initialize: %w", err)
	}
	return ir.UserAgent, nil
}

// Done is closed once the client has stopped reading the app-server's
// stdout.
func (d *directSession) Done() <-chan struct{} { return d.rc.gone }

// Initialized sends the initialized notification.
func (d *directSession) Initialized() error {
	if err := d.rc.notify("initialized", nil); err != nil {
		return fmt.Errorf("initialized: %w", err)
	}
	return nil
}

// NewSession sends thread/start.
func (d *directSession) NewSession(ctx context.Context, cwd string) error {
	var tr struct {
		Thread struct {
			ID string `json:"id"`
		} `json:"thread"`
	}
	if err := d.rc.call(ctx, "thread/start", map[string]any{"cwd": cwd}, &tr); err != nil {
		return fmt.Errorf("thread/start: %w", err)
	}
	if tr.Thread.ID == "" {
		return errors.New("thread/start: no thread id in the result")
	}
	d.threadID = tr.Thread.ID
	return nil
}

// Turn sends turn/start and waits for the turn's turn/completed.
func (d *directSession) Turn(ctx context.Context, prompt string) error {
	d.rc.text.Reset()
	var sr struct {
		Turn struct {
			ID string `json:"id"`
		} `json:"turn"`
	}
	err := d.rc.call(ctx, "turn/start", map[string]any{"threadId": d.threadID,
		"input": []any{map[string]any{"type": "text", "text": prompt, "text_elements": []any{}}}}, &sr)
	if err != nil {
		return fmt.Errorf("turn/start %q: %w", prompt, err)
	}
	status, err := d.rc.waitTurn(ctx, sr.Turn.ID)
	if err != nil {
		return fmt.Errorf("turn %q: %w", prompt, err)
	}
	if status != "completed" {
		return fmt.Errorf("turn %q: status %q, want completed", prompt, status)
	}
	if err := codexCheckAnswer(prompt, d.rc.text.String()); err != nil {
		return fmt.Errorf("turn %q: %w", prompt, err)
	}
	return nil
}

// rpcClient is a minimal client of codex app-server's JSON-RPC, one
// object per line: the server omits "jsonrpc":"2.0" (and does not need it
// from the client); its own requests (approvals), numbered by a counter of
// its own from 0, get "accept"; notifications feed the turn's text and
// turn/completed.
type rpcClient struct {
	w   io.Writer
	wmu sync.Mutex

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]chan rpcMessage
	readErr  error               // why the reader stopped
	gone     chan struct{}       // closed when the reader stops
	text     benchkit.TextBuffer // the agent message text of the turn
	complete chan turnEnd        // turn/completed, in order
}

// rpcMessage is any JSON-RPC message of the app-server.
type rpcMessage struct {
	ID     json.RawMessage `json:"id,omitempty"`
	Method string          `json:"method,omitempty"`
	Params json.RawMessage `json:"params,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

// turnEnd is a turn/completed notification.
type turnEnd struct{ id, status string }

// newRPCClient talks to the app-server on w (its stdin) and r (its
// stdout), which it reads until it ends.
func newRPCClient(w io.Writer, r io.Reader) *rpcClient {
	c := &rpcClient{w: w, pending: map[int64]chan rpcMessage{}, gone: make(chan struct{}), complete: make(chan turnEnd, 64)}
	go c.read(r)
	return c
}

// send writes v as one JSON line.
func (c *rpcClient) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(append(b, '\n'))
	return err
}

// call sends a request and decodes its response's result into result
// (unless nil).
func (c *rpcClient) call(ctx context.Context, method string, params, result any) error {
	id, ch := c.expect()
	defer c.forget(id)
	if err := c.send(map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return err
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("error %d: %s", m.Error.Code, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-c.gone:
		return fmt.Errorf("the server closed its stdout: %v", c.readErr)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// expect is the id of a new request, and where its response will come.
func (c *rpcClient) expect() (int64, chan rpcMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextID++
	ch := make(chan rpcMessage, 1)
	c.pending[c.nextID] = ch
	return c.nextID, ch
}

// forget stops waiting for the response to request id.
func (c *rpcClient) forget(id int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, id)
}

// notify sends a notification.
func (c *rpcClient) notify(method string, params any) error {
	m := map[string]any{"method": method}
	if params != nil {
		m["params"] = params
	}
	return c.send(m)
}

// read handles the app-server's stdout line by line until it ends.
func (c *rpcClient) read(r io.Reader) {
	defer close(c.gone)
	br := bufio.NewReaderSize(r, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			c.handle(line)
		}
		if err != nil {
			c.readErr = err
			return
		}
	}
}

// handle acts on one line from the app-server: it hands a response to
// its call, accepts a request (an approval), and keeps the agent's text
// and the turn/completed notifications.
func (c *rpcClient) handle(line []byte) {
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return
	}
	switch {
	case m.Method == "" && len(m.ID) > 0: // a response
		c.deliver(m)
	case len(m.ID) > 0: // a server request: an approval
		_ = c.send(map[string]any{"id": m.ID, "result": map[string]any{"decision": "accept"}})
	case m.Method == "item/agentMessage/delta":
		c.delta(m.Params)
	case m.Method == "turn/completed":
		c.completed(m.Params)
	}
}

// deliver hands response m to the call waiting for it, if any.
func (c *rpcClient) deliver(m rpcMessage) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return
	}
	c.mu.Lock()
	ch := c.pending[id]
	c.mu.Unlock()
	if ch != nil {
		ch <- m
	}
}

// delta keeps the text of an item/agentMessage/delta notification.
func (c *rpcClient) delta(params json.RawMessage) {
	var p struct {
		Delta string `json:"delta"`
	}
	if json.Unmarshal(params, &p) == nil {
		c.text.WriteString(p.Delta)
	}
}

// completed passes on a turn/completed notification.
func (c *rpcClient) completed(params json.RawMessage) {
	var p struct {
		Turn struct {
			ID     string `json:"id"`
			Status string `json:"status"`
		} `json:"turn"`
	}
	if json.Unmarshal(params, &p) == nil {
		c.complete <- turnEnd{p.Turn.ID, p.Turn.Status}
	}
}

// waitTurn waits for turn/completed of turn id and returns its status.
func (c *rpcClient) waitTurn(ctx context.Context, id string) (string, error) {
	for {
		select {
		case e := <-c.complete:
			if e.id == id {
				return e.status, nil
			}
		case <-c.gone:
			return "", fmt.Errorf("the server closed its stdout before turn/completed: %v", c.readErr)
		case <-ctx.Done():
			return "", fmt.Errorf("no turn/completed: %w", ctx.Err())
		}
	}
}
