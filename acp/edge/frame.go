package edge

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strings"
	"sync"

	"github.com/coder/acp-go-sdk"
)

// MaxLine is the longest message the bridge accepts, just under the SDK's
// 10 MiB scanner limit; a longer line would make the SDK drop the whole
// connection, so the guard refuses it alone.
const MaxLine = 10<<20 - 1

// headKeep is how much of an oversize line is kept to find its id.
const headKeep = 64 << 10

// input is the client's message stream as the SDK reads it. A goroutine
// copies the client's lines from stdin into it, answering on the output
// what the SDK would drop without a word (a line that is not JSON, a batch,
// a non-message) or choke on (a line over the limit) and going on.
//
// The SDK ends the connection at the first EOF, before it has answered
// the requests it read; so the end of stdin is held back (see Serve) until
// every forwarded request has its response on the output.
type input struct {
	pr    *io.PipeReader
	pw    *io.PipeWriter
	ended chan struct{} // closed when stdin has ended
	err   error         // why stdin ended (nil for EOF); set before ended is closed
	track *tracker
	order *arrivals
	reply *lockedWriter
	max   int
	log   *slog.Logger
	blobs *blobs

	initialized bool // an initialize request has gone through

	v2       bool          // the server serves ACP v2 too (Server.ServeV2)
	upgraded chan struct{} // closed when the client asked for v2; up is set then
	up       *upgrade
}

// upgrade is the guard's end when a client's first initialize asks for
// protocol 2 or later on a server that serves v2: the initialize line and
// the rest of stdin, for the v2 edge. Until then the guard did as it does
// for v1, so a v1 client sees no difference.
type upgrade struct {
	first []byte
	rest  io.Reader
}

func (u *upgrade) Error() string { return "the client asked for ACP v2" }

// guard starts copying r; out must be the writer the SDK writes to.
func guard(r io.Reader, out *lockedWriter, order *arrivals, bl *blobs, max int, log *slog.Logger) *input {
	return guardFor(r, out, order, bl, max, log, false)
}

// guardFor is guard; with v2, a first initialize asking for v2 ends it
// (see upgrade).
func guardFor(r io.Reader, out *lockedWriter, order *arrivals, bl *blobs, max int, log *slog.Logger, v2 bool) *input {
	in := &input{ended: make(chan struct{}), track: newTracker(), order: order, reply: out, max: max, log: log, blobs: bl,
		v2: v2, upgraded: make(chan struct{})}
	in.pr, in.pw = io.Pipe()
	out.track, out.order, out.blobs = in.track, order, bl
	go func() {
		err := in.copy(r)
		var up *upgrade
		if errors.As(err, &up) {
			in.up = up
			close(in.upgraded)
			return
		}
		in.err = err
		close(in.ended)
	}()
	return in
}

func (in *input) Read(p []byte) (int, error) { return in.pr.Read(p) }

// Close ends the stream the SDK reads: with why stdin ended, if it has;
// else the guard's next write fails and it stops at its next line.
func (in *input) Close() error {
	select {
	case <-in.ended:
		return in.pw.CloseWithError(in.err)
	default:
		return in.pw.Close()
	}
}

func (in *input) copy(r io.Reader) error {
	br := bufio.NewReaderSize(r, 16<<10)
	for {
		line, size, err := readLine(br, in.max)
		if size > 0 {
			if werr := in.pass(line, size); werr != nil {
				var up *upgrade
				if errors.As(werr, &up) {
					up.rest = br
				}
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading stdin: %w", err)
		}
	}
}

// readLine reads one line without its newline, into memory of its own
// (the guard may keep parts of it; see blobs). If the line is longer than
// max, only its first headKeep bytes are returned; size is its full
// length. A long line is gathered in pieces and joined once, so that it
// takes its own size and not the up to three times that growing one
// buffer by doubling would.
func readLine(br *bufio.Reader, max int) (line []byte, size int, err error) {
	var pieces [][]byte
	kept := 0
	for {
		frag, ferr := br.ReadSlice('\n')
		size += len(frag)
		if kept+len(frag) <= max || kept < headKeep {
			pieces = append(pieces, bytes.Clone(frag))
			kept += len(frag)
		}
		if ferr != bufio.ErrBufferFull {
			line = join(pieces, kept)
			line = bytes.TrimSuffix(line, []byte("\n"))
			if ferr == nil {
				size--
			}
			return line, size, ferr
		}
	}
}

func join(pieces [][]byte, n int) []byte {
	if len(pieces) == 1 {
		return pieces[0]
	}
	line := make([]byte, 0, n)
	for i, p := range pieces {
		line = append(line, p...)
		pieces[i] = nil
	}
	if n >= bigLine {
		// The pieces are garbage the size of the line; collected now, their
		// memory serves what the line's message allocates next (its
		// transcript entry) instead of the process growing by as much.
		runtime.GC()
	}
	return line
}

// bigLine is the size from which a line's pieces are collected at once.
const bigLine = 1 << 20

// pass forwards a good line and answers a bad one.
func (in *input) pass(line []byte, size int) error {
	if size > in.max {
		in.refuse(idOf(line), codeInvalidRequest, "Invalid request",
			fmt.Sprintf("message of %d bytes is over the %d-byte limit", size, in.max))
		return nil
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return nil
	}
	env, err := checkMessage(trimmed)
	if err == nil && in.v2 && !in.initialized {
		err = asksV2(env, trimmed)
		if up, ok := err.(*upgrade); ok {
			return up
		}
	}
	if err == nil {
		err = in.checkOrder(env)
	}
	if err != nil {
		var fe *frameError
		errors.As(err, &fe)
		in.refuse(fe.id, fe.code, fe.message, fe.detail)
		return nil
	}
	if env.Method != nil && env.ID != nil {
		in.track.add(env.ID)
	}
	if len(trimmed) >= blobMin && string(env.Method) == `"session/prompt"` && env.ID != nil {
		trimmed = in.blobs.extract(env.ID, trimmed)
	}
	trimmed = in.order.seen(env, trimmed)
	if env.ID == nil && isExtension(env.Method) {
		trimmed = asNotification(trimmed)
	}
	if in.log.Enabled(context.Background(), slog.LevelDebug) {
		if env.Method != nil {
			in.log.Debug("received", "method", strings.Trim(string(env.Method), `"`), "id", string(env.ID), "bytes", size)
		} else {
			in.log.Debug("received a response", "id", string(env.ID), "bytes", size)
		}
	}
	if _, err := in.pw.Write(trimmed); err != nil { // not append(trimmed, '\n'): a 10 MB line would be copied
		return err
	}
	_, err = in.pw.Write([]byte{'\n'})
	return err
}

// checkOrder refuses a request before initialize: ACP says clients MUST
// initialize the connection before they use sessions. Notifications and
// responses pass.
func (in *input) checkOrder(env envelope) error {
	if env.Method == nil || env.ID == nil {
		return nil
	}
	var method string
	json.Unmarshal(env.Method, &method)
	switch {
	case method == acp.AgentMethodInitialize:
		in.initialized = true
		in.reply.initializing(env.ID)
	case !in.initialized && method != acp.AgentMethodAuthenticate:
		return &frameError{id: env.ID, code: codeInvalidRequest, message: "Invalid request",
			detail: method + " before initialize: call initialize first"}
	}
	return nil
}

// asksV2 returns an *upgrade for an initialize request that asks for
// protocol 2 or later, as the TS SDK's AgentProtocolRouter picks v2: an
// integer protocolVersion of at least 2. A v2 initialize needs a string or
// integer id (a *frameError otherwise, with a null id, as the router
// answers). Anything else is nil: v1's, as before v2.
func asksV2(env envelope, line []byte) error {
	if string(env.Method) != `"initialize"` || env.ID == nil {
		return nil
	}
	var p struct {
		Params struct {
			ProtocolVersion json.Number `json:"protocolVersion"`
		} `json:"params"`
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if dec.Decode(&p) != nil {
		return nil
	}
	v, err := p.Params.ProtocolVersion.Int64()
	if err != nil || v < 2 || v > 0xffff {
		return nil
	}
	var id json.Number
	if env.ID[0] != '"' && (json.Unmarshal(env.ID, &id) != nil || strings.ContainsAny(string(id), ".eE")) {
		return &frameError{code: codeInvalidRequest, message: "Invalid request", detail: "ACP v2 request IDs must be strings or integers"}
	}
	return &upgrade{first: bytes.Clone(line)}
}

// frameError is a message the guard answers instead of forwarding.
type frameError struct {
	id      json.RawMessage
	code    int
	message string
	detail  string
}

func (e *frameError) Error() string { return e.message + ": " + e.detail }

// envelope is just enough of a JSON-RPC message to check its shape.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method json.RawMessage `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// checkMessage accepts a JSON object that is a request, a notification or
// a response.
func checkMessage(b []byte) (envelope, error) {
	var env envelope
	switch {
	case b[0] == '[':
		return env, &frameError{code: codeInvalidRequest, message: "Invalid request", detail: "batches are not supported"}
	case !json.Valid(b):
		return env, &frameError{code: -32700, message: "Parse error", detail: "the line is not valid JSON"}
	case b[0] != '{':
		return env, &frameError{code: codeInvalidRequest, message: "Invalid request", detail: "a message must be a JSON object"}
	}
	if err := json.Unmarshal(b, &env); err != nil {
		return env, &frameError{code: codeInvalidRequest, message: "Invalid request", detail: err.Error()}
	}
	var method string
	if env.Method != nil && json.Unmarshal(env.Method, &method) != nil {
		return env, &frameError{id: env.ID, code: codeInvalidRequest, message: "Invalid request", detail: "method must be a string"}
	}
	if env.Method == nil && (env.ID == nil || (env.Result == nil && env.Error == nil)) {
		return env, &frameError{id: env.ID, code: codeInvalidRequest, message: "Invalid request", detail: "a message needs a method, or an id with a result or error"}
	}
	if env.Method != nil && string(env.ID) == "null" {
		return env, &frameError{id: env.ID, code: codeInvalidRequest, message: "Invalid request",
			detail: "a request's id must be a string or a number, not null (without an id it is a notification)"}
	}
	return env, nil
}

// idOf finds the top-level "id" of a (possibly truncated) JSON object.
func idOf(head []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil
		}
		if key == "id" {
			return v
		}
	}
	return nil
}

// refuse writes an error response; a response to a notification has a
// null id, as JSON-RPC says when the id can't be known.
func (in *input) refuse(id json.RawMessage, code int, message, detail string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	in.log.Warn("refusing client message", "code", code, "detail", detail)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": code, "message": message, "data": map[string]any{"error": detail}}})
	in.reply.Write(append(b, '\n'))
}

// lockedWriter makes whole-line writes from the SDK and the guard atomic
// and tells the tracker about every response.
type lockedWriter struct {
	mu    sync.Mutex
	w     io.Writer
	track *tracker  // set before the first write
	order *arrivals // likewise
	blobs *blobs    // likewise

	broken     chan struct{} // closed when a write failed: the client is gone
	breakOnce  sync.Once
	writeError error // the first failed write's error; set before broken closes

	initID    string         // idKey of the last initialize request read; under mu
	afterInit func()         // runs once that request's answer is written; under mu
	after     sync.WaitGroup // afterInit's runs, started under mu; see endAfter
	ended     bool           // endAfter was called: nothing more starts; under mu
}

func newLockedWriter(w io.Writer) *lockedWriter {
	return &lockedWriter{w: w, broken: make(chan struct{})}
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	n, err := l.w.Write(p)
	l.mu.Unlock()
	if err != nil {
		l.breakOnce.Do(func() {
			l.writeError = err
			close(l.broken)
		})
	}
	if l.track != nil {
		if id, ok := responseID(p); ok {
			l.track.done(id)
			l.order.answered(id)
			l.blobs.forget(idKey(id))
			if err == nil {
				l.initAnswered(id)
			}
		}
	}
	return n, err
}

// initializing notes the id of an initialize request the guard is
// passing on.
func (l *lockedWriter) initializing(id json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.initID, l.afterInit = idKey(id), nil
}

// afterInitialize has f run once the answer to the initialize request
// being handled has been written, on a goroutine of its own (the SDK
// writes under a lock, which f must not hold up), so that what the first
// answer does not need waits until it is out. The connection's end waits
// for it (endAfter).
func (l *lockedWriter) afterInitialize(f func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.afterInit = f
}

// initAnswered starts, once, what was to run after the answer with id if
// id is initialize's: on a goroutine of its own, as the SDK writes under
// its lock.
func (l *lockedWriter) initAnswered(id json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended || l.afterInit == nil || idKey(id) != l.initID {
		return
	}
	l.after.Go(l.afterInit)
	l.afterInit = nil
}

// endAfter has nothing more start after initialize's answer, and waits
// for what did.
func (l *lockedWriter) endAfter() {
	l.mu.Lock()
	l.ended = true
	l.mu.Unlock()
	l.after.Wait()
}

// tracker counts the client's requests that have no response yet.
type tracker struct {
	mu      sync.Mutex
	pending map[string]int // by compacted id
	idle    chan struct{}  // closed and replaced... see wait
}

func newTracker() *tracker { return &tracker{pending: make(map[string]int)} }

func idKey(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

func (t *tracker) add(id json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pending[idKey(id)]++
}

func (t *tracker) done(id json.RawMessage) {
	t.mu.Lock()
	defer t.mu.Unlock()
	k := idKey(id)
	if t.pending[k] > 1 {
		t.pending[k]--
		return
	}
	delete(t.pending, k)
	if len(t.pending) == 0 && t.idle != nil {
		close(t.idle)
		t.idle = nil
	}
}

// wait returns a channel closed once no request is pending.
func (t *tracker) wait() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := make(chan struct{})
	if len(t.pending) == 0 {
		close(ch)
		return ch
	}
	t.idle = ch
	return ch
}

// responseID reads the id of an outgoing response from the first keys of
// the line, without decoding the rest (most lines are long updates).
func responseID(line []byte) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var id json.RawMessage
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false
		}
		switch key {
		case "method":
			return nil, false
		case "result", "error":
			return id, id != nil
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		if key == "id" {
			id = v
		}
	}
	return nil, false
}
