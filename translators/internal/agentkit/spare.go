package agentkit

import (
	"context"
	"sync"
	"time"
)

// Spare is one thing started ahead of need — a process, a thread — for the
// first session whose key matches to take, so that its first turn finds
// the agent ready. It is made in the background when the client
// initializes (Make), taken at most once (Take), and dropped if nobody
// took it within its time to live, or at Close: warming never leaves
// anything behind. It is safe for concurrent use.
type Spare[V any] struct {
	mu     sync.Mutex
	key    string
	done   chan struct{} // closed once made (or failed)
	v      V
	ok     bool // made, and not taken or dropped
	drop   func(V)
	timer  *time.Timer
	closed bool
}

// Make starts making a spare for key with start, in the background,
// unless there is one already. drop discards a spare nobody took within
// ttl, or that is still there at Close.
func (s *Spare[V]) Make(key string, ttl time.Duration, start func() (V, error), drop func(V)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done != nil || s.closed {
		return
	}
	done := make(chan struct{})
	s.key, s.drop, s.done = key, drop, done
	go func() {
		v, err := start()
		s.mu.Lock()
		if err == nil && !s.closed {
			s.v, s.ok = v, true
			s.timer = time.AfterFunc(ttl, s.expire)
		} else if err == nil {
			defer drop(v) // closed while it was being made
		}
		close(done)
		s.mu.Unlock()
	}()
}

// Take returns the spare if it was made for key, waiting for it to be made
// while ctx lasts; ok is false if there is none for key (taken already,
// dropped, failed, or made for another key).
func (s *Spare[V]) Take(ctx context.Context, key string) (v V, ok bool) {
	s.mu.Lock()
	done, match := s.done, s.done != nil && s.key == key
	s.mu.Unlock()
	if !match {
		return v, false
	}
	select {
	case <-done:
	case <-ctx.Done():
		return v, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ok {
		return v, false
	}
	v, s.ok = s.v, false
	s.clear()
	return v, true
}

// Peek returns the spare if it has been made and not taken.
func (s *Spare[V]) Peek() (V, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.v, s.ok
}

// expire drops a spare nobody took in time.
func (s *Spare[V]) expire() {
	s.mu.Lock()
	v, ok := s.v, s.ok
	s.ok = false
	s.clear()
	s.mu.Unlock()
	if ok {
		s.drop(v)
	}
}

// clear forgets the spare's value; s.mu must be held. The key and done
// stay, so that no second spare is made.
func (s *Spare[V]) clear() {
	var zero V
	s.v = zero
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// Close drops a spare nobody took; one still being made is dropped when
// it is made.
func (s *Spare[V]) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.expire()
}
