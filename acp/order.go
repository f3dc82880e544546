package acp

import (
	"encoding/json"
	"sync"

	"github.com/acpbridge/acpbridge/bridge"
)

// arrivals remembers in which order the client's prompts and cancels came
// in. The SDK runs each request in its own goroutine but queues
// notifications, so a session/cancel read before a session/prompt can be
// handled after the turn has begun, and one read after it before the turn
// exists. The guard numbers the lines as it reads them; the handlers take
// those numbers back, so that a cancel stops exactly the prompts read
// before it (bridge.Order).
type arrivals struct {
	mu      sync.Mutex
	line    uint64
	prompts map[string][]promptArrival // by session id, oldest first
	byID    map[string]string          // request id key → session id
	cancels map[string][]bridge.Order  // by session id, oldest first
}

type promptArrival struct {
	id      string // request id key
	at      bridge.Order
	claimed bool
}

func newArrivals() *arrivals {
	return &arrivals{
		prompts: make(map[string][]promptArrival),
		byID:    make(map[string]string),
		cancels: make(map[string][]bridge.Order),
	}
}

// sessionParams is the part of a prompt or cancel the guard reads.
type sessionParams struct {
	Params struct {
		SessionID string `json:"sessionId"`
	} `json:"params"`
}

// seen numbers a line the guard is forwarding; it notes prompts and
// cancels.
func (a *arrivals) seen(env envelope, line []byte) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.line++
	method := string(env.Method)
	if method != `"session/prompt"` && method != `"session/cancel"` {
		return
	}
	var p sessionParams
	if json.Unmarshal(line, &p) != nil || p.Params.SessionID == "" {
		return
	}
	sid, at := p.Params.SessionID, bridge.Order(a.line)
	switch {
	case env.ID == nil && method == `"session/cancel"`:
		a.cancels[sid] = append(a.cancels[sid], at)
	case env.ID != nil && method == `"session/prompt"`:
		k := idKey(env.ID)
		a.prompts[sid] = append(a.prompts[sid], promptArrival{id: k, at: at})
		a.byID[k] = sid
	}
}

// prompt claims the oldest unclaimed prompt of a session; 0 if none is
// known. Two prompts of one session in flight at once may be claimed in
// the wrong order, which matters little: one of them is refused as busy.
func (a *arrivals) prompt(sid string) bridge.Order {
	a.mu.Lock()
	defer a.mu.Unlock()
	for i := range a.prompts[sid] {
		p := &a.prompts[sid][i]
		if !p.claimed {
			p.claimed = true
			return p.at
		}
	}
	return 0
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

// answered forgets a prompt once its response is written, whether or not
// a handler ever claimed it (the SDK answers bad params itself).
func (a *arrivals) answered(id json.RawMessage) {
	k := idKey(id)
	a.mu.Lock()
	defer a.mu.Unlock()
	sid, ok := a.byID[k]
	if !ok {
		return
	}
	delete(a.byID, k)
	q := a.prompts[sid]
	for i := range q {
		if q[i].id == k {
			q = append(q[:i], q[i+1:]...)
			break
		}
	}
	if len(q) == 0 {
		delete(a.prompts, sid)
	} else {
		a.prompts[sid] = q
	}
}
