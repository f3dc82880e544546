package edgev2

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// drain is the client's input as jrpc2 reads it. It holds the end of the
// input back until every request read has its response written and the
// turns have ended (cancelled at once), as the v1 edge does: jrpc2 stops
// at EOF and drops what it has not answered, and a script piped into the
// bridge is to get every reply.
//
// It also keeps the requests in the order they came: jrpc2 runs each
// message on a goroutine of its own, in no set order, so the drain passes
// the next message on only once the last request or known notification
// has taken its place (took: its handler began, or, for a prompt, the
// prompt holds its place in the session's queue) or been answered (an
// error jrpc2 wrote without a handler). The order of prompts and cancels
// is thus the order of the lines.
type drain struct {
	br      *bufio.Reader
	rest    []byte            // of the line being read
	atEOF   func()            // cancels the running turns and waits for them
	handle  func(string) bool // whether a notification's method has a handler (one to wait for)
	mu      sync.Mutex
	pending int
	idle    *sync.Cond
	gateID  string        // the message waited for, its id as jrpc2 spells it ("" for a notification)
	gate    chan struct{} // closed once it took its place; nil: nothing to wait for
}

func newDrain(r io.Reader, handle func(method string) bool, atEOF func()) *drain {
	d := &drain{br: bufio.NewReaderSize(r, 16<<10), atEOF: atEOF, handle: handle}
	d.idle = sync.NewCond(&d.mu)
	return d
}

// took says that the message id (as jrpc2 spells it; "" for a
// notification) took its place, so that the next may be read.
func (d *drain) took(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.gate != nil && d.gateID == id {
		close(d.gate)
		d.gate = nil
	}
}

// waitTurn waits until the last message passed on took its place.
func (d *drain) waitTurn() {
	d.mu.Lock()
	g := d.gate
	d.mu.Unlock()
	if g != nil {
		<-g
	}
}

// Read passes the lines on, counting the requests among them.
func (d *drain) Read(p []byte) (int, error) {
	if len(d.rest) == 0 {
		d.waitTurn()
		line, err := d.br.ReadBytes('\n')
		if len(line) == 0 {
			if err == io.EOF {
				d.atEOF()
				d.mu.Lock()
				for d.pending > 0 {
					d.idle.Wait()
				}
				d.mu.Unlock()
			}
			return 0, err
		}
		if e, ok := decodeEnvelope(line); ok && e.Method != nil {
			d.mu.Lock()
			if e.ID != nil {
				d.pending++
			}
			if e.ID != nil || d.handle(*e.Method) {
				d.gateID, d.gate = compactID(e.ID), make(chan struct{})
			}
			d.mu.Unlock()
		}
		d.rest = line
	}
	n := copy(p, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

// answered counts a response written to the request id.
func (d *drain) answered(id string) {
	d.took(id)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending > 0 {
		d.pending--
	}
	d.idle.Broadcast()
}

// output is the connection's output; it tells d of every response.
type output struct {
	w io.Writer
	d *drain
}

func (o output) Write(p []byte) (int, error) {
	n, err := o.w.Write(p)
	if e, ok := decodeEnvelope(p); ok && e.Method == nil && e.ID != nil && string(e.ID) != "null" {
		o.d.answered(compactID(e.ID))
	}
	return n, err
}

func (output) Close() error { return nil }

type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
}

// decodeEnvelope is a message's id and method; ok is false for what is
// not a JSON object.
func decodeEnvelope(line []byte) (e envelope, ok bool) {
	return e, json.Unmarshal(line, &e) == nil
}

// compactID is a message's id as jrpc2's Request.ID spells it: compact
// JSON; "" for none.
func compactID(id json.RawMessage) string {
	if id == nil {
		return ""
	}
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}
