package edge

import (
	"encoding/json"
	"strconv"
	"sync"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/coder/acp-go-sdk"
)

// arrivals remembers in which order the client's prompts and cancels came
// in. The SDK runs each request in its own goroutine but queues
// notifications, so a session/cancel read before a session/prompt can be
// handled after the turn has begun, and one read after it before the turn
// exists; and two prompts read one after the other can reach the session
// in either order. The guard numbers the lines as it reads them
// (bridge.Order): it stamps each prompt with its own number, which the
// prompt's handler takes back (arrival), and keeps each cancel's for the
// cancel's handler, so that prompts run in the order they were sent and a
// cancel stops exactly the prompts read before it. A prompt's turn also
// waits until the client has the responses of the session's prompts read
// before it (awaitEarlier): the bridge ends a turn, and could begin the
// next, before the SDK writes the ended turn's response (it does once the
// handler returns), so that response could come after the next turn's
// updates, or even after its response.
type arrivals struct {
	mu      sync.Mutex
	line    uint64
	cancels map[string][]bridge.Order // by session id, oldest first
	// prompts are those read and not yet answered, by request id key;
	// moved is signalled when one is queued in its session or answered.
	prompts map[string]*promptRef
	moved   *sync.Cond
	closed  bool
	// cancelPrompt cancels one prompt, running or queued, for a
	// $/cancel_request that names it. It must not block.
	cancelPrompt func(sid string, at bridge.Order)
	hooks        *testHooks
}

// testHooks stop the edge, in a test, where only the goroutine scheduler
// would otherwise order a session's prompts; nil outside tests. awaiting
// is called with the arrivals' lock held and must not block.
type testHooks struct {
	// answering: the turn of the prompt read at at has ended, and its
	// response is not yet written.
	answering func(at bridge.Order)
	// awaiting: the turn of the prompt read at at waits for the responses
	// of the session's earlier prompts.
	awaiting func(at bridge.Order)
}

// promptRef is a prompt read and not yet answered.
type promptRef struct {
	sid    string
	at     bridge.Order
	queued bool // it holds its place in its session's queue
}

func newArrivals() *arrivals {
	a := &arrivals{cancels: make(map[string][]bridge.Order), prompts: make(map[string]*promptRef)}
	a.moved = sync.NewCond(&a.mu)
	return a
}

// arrivalKey is where the guard stamps a prompt's arrival: a key of its
// params' _meta, which the handler removes before anything else sees it.
const arrivalKey = "acpbridge.dev/arrival"

// sessionParams is the part of a prompt or cancel the guard reads.
type sessionParams struct {
	Params struct {
		SessionID string `json:"sessionId"`
	} `json:"params"`
}

// seen numbers a line the guard is forwarding, notes a prompt or a
// cancel, and returns the line to forward: a prompt's, stamped with its
// arrival. A $/cancel_request naming a prompt cancels that prompt's turn
// (the SDK only cancels the request's context, which the turn does not
// follow: the SDK also cancels it when the session's next prompt comes).
func (a *arrivals) seen(env envelope, line []byte) []byte {
	a.mu.Lock()
	a.line++
	at := bridge.Order(a.line)
	method := string(env.Method)
	if env.ID == nil && method == `"$/cancel_request"` {
		ref, ok := a.requested(line)
		cancel := a.cancelPrompt
		a.mu.Unlock()
		if ok && cancel != nil {
			cancel(ref.sid, ref.at)
		}
		return line
	}
	defer a.mu.Unlock()
	if method != `"session/prompt"` && method != `"session/cancel"` {
		return line
	}
	var p sessionParams
	if json.Unmarshal(line, &p) != nil || p.Params.SessionID == "" {
		return line
	}
	sid := p.Params.SessionID
	switch {
	case env.ID != nil && method == `"session/prompt"`:
		a.prompts[idKey(env.ID)] = &promptRef{sid: sid, at: at}
		return stamped(line, at)
	case env.ID == nil && method == `"session/cancel"`:
		a.cancels[sid] = append(a.cancels[sid], at)
	}
	return line
}

// enter waits until every prompt of session sid read before at is in the
// session's queue (or answered), so that the prompt read at at takes its
// place behind them. It returns what to call once it has (bridge.Arrival).
func (a *arrivals) enter(sid string, at bridge.Order) bridge.Arrival {
	a.mu.Lock()
	defer a.mu.Unlock()
	for !a.closed && at != 0 && a.earlierUnqueued(sid, at) {
		a.moved.Wait()
	}
	if at == 0 {
		return bridge.Arrival{}
	}
	return bridge.Arrival{At: at,
		Queued:       func() { a.markQueued(sid, at) },
		AwaitEarlier: func() { a.awaitEarlier(sid, at) }}
}

// awaitEarlier waits until every prompt of session sid read before at has
// its response written.
func (a *arrivals) awaitEarlier(sid string, at bridge.Order) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for !a.closed && a.earlierUnanswered(sid, at) {
		if a.hooks != nil && a.hooks.awaiting != nil {
			a.hooks.awaiting(at)
		}
		a.moved.Wait()
	}
}

// earlierUnanswered reports whether a prompt of session sid read before
// at has no response yet. a.mu must be held.
func (a *arrivals) earlierUnanswered(sid string, at bridge.Order) bool {
	for _, p := range a.prompts {
		if p.sid == sid && p.at < at {
			return true
		}
	}
	return false
}

// earlierUnqueued reports whether a prompt of session sid read before at
// has not yet taken its place in the session's queue. a.mu must be held.
func (a *arrivals) earlierUnqueued(sid string, at bridge.Order) bool {
	for _, p := range a.prompts {
		if p.sid == sid && p.at < at && !p.queued {
			return true
		}
	}
	return false
}

// markQueued notes that the prompt of session sid read at at holds its
// place in the session's queue.
func (a *arrivals) markQueued(sid string, at bridge.Order) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range a.prompts {
		if p.sid == sid && p.at == at {
			p.queued = true
		}
	}
	a.moved.Broadcast()
}

// requested is the prompt a $/cancel_request line names, if it is one
// read and not yet answered. a.mu must be held.
func (a *arrivals) requested(line []byte) (promptRef, bool) {
	var n struct {
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil || len(n.Params.RequestID) == 0 {
		return promptRef{}, false
	}
	ref, ok := a.prompts[idKey(n.Params.RequestID)]
	if !ok {
		return promptRef{}, false
	}
	return *ref, true
}

// answered forgets a prompt once its response is written, whether or not
// its handler queued it (the SDK answers bad params itself).
func (a *arrivals) answered(id json.RawMessage) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.prompts, idKey(id))
	a.moved.Broadcast()
}

// close lets every prompt waiting in enter or awaitEarlier go: the
// connection is ending.
func (a *arrivals) close() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closed = true
	a.moved.Broadcast()
}

// stamped is a prompt request with its arrival in its params' _meta. A
// request whose params or _meta is not an object is left as it is: the SDK
// refuses it.
func stamped(line []byte, at bridge.Order) []byte {
	var msg, params map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil || json.Unmarshal(msg["params"], &params) != nil || params == nil {
		return line
	}
	meta := map[string]json.RawMessage{}
	if m, ok := params["_meta"]; ok && string(m) != "null" && json.Unmarshal(m, &meta) != nil {
		return line
	}
	meta[arrivalKey] = json.RawMessage(strconv.FormatUint(uint64(at), 10))
	var err error
	if params["_meta"], err = json.Marshal(meta); err != nil {
		return line
	}
	if msg["params"], err = json.Marshal(params); err != nil {
		return line
	}
	out, err := json.Marshal(msg)
	if err != nil {
		return line
	}
	return out
}

// arrival takes a prompt's stamp out of its _meta; 0 if it has none.
func arrival(req *acp.PromptRequest) bridge.Order {
	v, ok := req.Meta[arrivalKey].(float64)
	if !ok {
		return 0
	}
	delete(req.Meta, arrivalKey)
	if len(req.Meta) == 0 {
		req.Meta = nil
	}
	return bridge.Order(v)
}

// cancel takes the oldest cancel of a session; notifications are handled
// in the order they were read, so it is the one being handled.
func (a *arrivals) cancel(sid string) bridge.Order {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.cancels[sid]
	if len(q) == 0 {
		return 0
	}
	at := q[0]
	if len(q) == 1 {
		delete(a.cancels, sid)
	} else {
		a.cancels[sid] = q[1:]
	}
	return at
}
