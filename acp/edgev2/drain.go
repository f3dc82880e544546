package edgev2

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"
)

// drain holds the end of the client's input back until every request read
// has its response written and the turns have ended (cancelled at once),
// as the v1 edge does: jrpc2 stops at EOF and drops what it has not
// answered, and a script piped into the bridge is to get every reply.
type drain struct {
	br      *bufio.Reader
	rest    []byte               // of the line being read
	atEOF   func()               // cancels the running turns and waits for them
	keep    func(id string) bool // whether a response the client sent is passed on
	ended   atomic.Bool          // the input has ended (set before atEOF runs)
	mu      sync.Mutex
	pending int
	idle    *sync.Cond
}

func newDrain(r io.Reader, atEOF func(), keep func(id string) bool) *drain {
	d := &drain{br: bufio.NewReaderSize(r, 16<<10), atEOF: atEOF, keep: keep}
	d.idle = sync.NewCond(&d.mu)
	return d
}

// Read passes the lines on, counting the requests among them.
func (d *drain) Read(p []byte) (int, error) {
	for len(d.rest) == 0 {
		line, err := d.br.ReadBytes('\n')
		if len(line) == 0 {
			if err == io.EOF {
				d.ended.Store(true)
				d.atEOF()
				d.mu.Lock()
				for d.pending > 0 {
					d.idle.Wait()
				}
				d.mu.Unlock()
			}
			return 0, err
		}
		switch e := decodeEnvelope(line); {
		case e.isRequest():
			d.mu.Lock()
			d.pending++
			d.mu.Unlock()
		case e.isResponse() && !d.keep(compactID(e.ID)):
			continue
		}
		d.rest = line
	}
	n := copy(p, d.rest)
	d.rest = d.rest[n:]
	return n, nil
}

// answered counts a response written.
func (d *drain) answered() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending > 0 {
		d.pending--
	}
	d.idle.Broadcast()
}

// output is the connection's output; it tells d of every response, and
// sent of every line, before it is written.
type output struct {
	w    io.Writer
	d    *drain
	sent func([]byte)
}

func (o output) Write(p []byte) (int, error) {
	o.sent(p)
	n, err := o.w.Write(p)
	if isResponse(p) {
		o.d.answered()
	}
	return n, err
}

func (output) Close() error { return nil }

type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
}

// decodeEnvelope is a line's id and method; a line that is not a JSON
// object has neither.
func decodeEnvelope(line []byte) envelope {
	var e envelope
	if json.Unmarshal(line, &e) != nil {
		return envelope{}
	}
	return e
}

func (e envelope) isRequest() bool { return e.Method != nil && e.ID != nil }

func (e envelope) isResponse() bool {
	return e.Method == nil && e.ID != nil && string(e.ID) != "null"
}

func isResponse(line []byte) bool { return decodeEnvelope(line).isResponse() }
