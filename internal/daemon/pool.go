package daemon

import (
	"errors"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
)

// errStopping is what a pool that closes says to a warm.
var errStopping = errors.New("the spares server is stopping")

// A spareProc is a process a pool keeps: a *proc.Process (a fake in
// tests).
type spareProc interface {
	Done() <-chan struct{} // closed when it has exited
	Stop()                 // ends it, and returns once it has exited
}

// pool keeps the spares server's processes, one per kind
// (proc.Spec.Kind), maxSpares kinds at most (the oldest goes first), each
// for ttl unless taken. Every spare has a goroutine that watches it: it
// stops the spare once it expires, is dropped for room, has exited by
// itself, or the pool closes, unless it was taken. Close waits for them.
type pool[P spareProc] struct {
	ttl     time.Duration
	start   func(proc.Spec) (P, error)
	closing chan struct{} // closed by close

	mu       sync.Mutex // protects the fields below
	spares   map[string]*spare[P]
	closed   bool
	watchers sync.WaitGroup // added to only with mu held and closed false
}

// spare is one process in the pool.
type spare[P spareProc] struct {
	p     P
	place string // its proc.Spec.Place
	made  time.Time
	left  chan struct{} // closed when it leaves the pool: taken, or dropped
	taken bool          // whether a bridge has it (set before left closes)
}

func newPool[P spareProc](ttl time.Duration, start func(proc.Spec) (P, error)) *pool[P] {
	return &pool[P]{ttl: ttl, start: start, closing: make(chan struct{}), spares: map[string]*spare[P]{}}
}

// warm starts a spare as s unless there is one of its kind. One of its
// place but of another kind (started before the settings it read
// changed) goes: nobody will ask for it again.
func (pl *pool[P]) warm(s proc.Spec) error {
	kind := s.Kind()
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.closed {
		return errStopping
	}
	if pl.spares[kind] != nil {
		return nil
	}
	pl.dropStale(s.Place(), kind)
	if len(pl.spares) >= maxSpares {
		pl.dropOldest()
	}
	p, err := pl.start(s)
	if err != nil {
		return err
	}
	sp := &spare[P]{p: p, place: s.Place(), made: time.Now(), left: make(chan struct{})}
	pl.spares[kind] = sp
	pl.watchers.Go(func() { pl.watch(kind, sp) })
	return nil
}

// take removes the running spare of kind from the pool and returns it;
// false if there is none.
func (pl *pool[P]) take(kind string) (P, bool) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var none P
	sp := pl.spares[kind]
	if sp == nil {
		return none, false
	}
	delete(pl.spares, kind)
	defer close(sp.left)
	select {
	case <-sp.p.Done():
		return none, false // its watcher stops what it left
	default:
	}
	sp.taken = true
	return sp.p, true
}

// dropStale drops the spares of place that are not of kind, which their
// watchers stop; pl.mu is held.
func (pl *pool[P]) dropStale(place, kind string) {
	for k, sp := range pl.spares {
		if sp.place == place && k != kind {
			close(sp.left)
			delete(pl.spares, k)
		}
	}
}

// dropOldest drops the spare made first, which its watcher stops; pl.mu
// is held.
func (pl *pool[P]) dropOldest() {
	var oldest string
	for k, sp := range pl.spares {
		if oldest == "" || sp.made.Before(pl.spares[oldest].made) {
			oldest = k
		}
	}
	close(pl.spares[oldest].left)
	delete(pl.spares, oldest)
}

// watch stops sp, of kind, once it expires, leaves the pool untaken, has
// exited by itself (nobody's to take), or the pool closes.
func (pl *pool[P]) watch(kind string, sp *spare[P]) {
	expiry := time.NewTimer(pl.ttl)
	defer expiry.Stop()
	select {
	case <-expiry.C:
	case <-sp.left:
	case <-sp.p.Done():
	case <-pl.closing:
	}
	if pl.release(kind, sp) {
		sp.p.Stop()
	}
}

// release takes sp out of the pool if it is still there, and reports
// whether it is the pool's to stop: not taken.
func (pl *pool[P]) release(kind string, sp *spare[P]) bool {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.spares[kind] == sp {
		delete(pl.spares, kind)
	}
	return !sp.taken
}

// close stops every spare nobody took, and waits for them.
func (pl *pool[P]) close() {
	pl.mu.Lock()
	if !pl.closed {
		pl.closed = true
		close(pl.closing)
	}
	pl.mu.Unlock()
	pl.watchers.Wait()
}
