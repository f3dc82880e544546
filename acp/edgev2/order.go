package edgev2

import (
	"context"
	"math"
	"sync"

	"github.com/creachadair/jrpc2"
)

// ordered runs the handlers of a connection's requests and notifications
// one at a time, in the order they came. jrpc2 assigns handlers in that
// order but invokes each on a goroutine of its own, which race for its
// concurrency limit; so each handler waits for the one assigned before it
// to return. (A prompt returns at once, so nothing waits long behind it.)
//
// A handler jrpc2 never invokes (its request cancelled, or the server
// stopping, before it ran) is passed over when its context ends.
type ordered struct {
	a jrpc2.Assigner

	mu   sync.Mutex
	last chan struct{} // closed when the handler assigned last has returned, or was passed over

	skips sync.WaitGroup // the pass-overs running
}

// concurrency is jrpc2's limit with ordered: none to speak of, as every
// handler but one is waiting its turn.
const concurrency = math.MaxInt32

func newOrdered(a jrpc2.Assigner) *ordered {
	o := &ordered{a: a, last: make(chan struct{})}
	close(o.last)
	return o
}

// Assign returns the method's handler, which runs once the one before it
// has returned.
func (o *ordered) Assign(ctx context.Context, method string) jrpc2.Handler {
	h := o.a.Assign(ctx, method)
	if h == nil {
		return nil
	}
	o.mu.Lock()
	prev, mine := o.last, make(chan struct{})
	o.last = mine
	o.mu.Unlock()
	o.skips.Add(1)
	stop := context.AfterFunc(ctx, func() {
		defer o.skips.Done()
		<-prev
		close(mine)
	})
	return func(ctx context.Context, req *jrpc2.Request) (any, error) {
		if !stop() { // passed over already: its context ended before it ran
			return nil, ctx.Err()
		}
		o.skips.Done()
		<-prev
		defer close(mine)
		return h(ctx, req)
	}
}

// wait waits for the pass-overs, once the server has stopped.
func (o *ordered) wait() { o.skips.Wait() }
