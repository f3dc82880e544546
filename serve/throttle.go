package serve

import (
	"net"
	"sync"
	"time"
)

// The cap on wrong tokens: a client (an IP address) may present this
// many at once, then one per guessEvery; past that its requests are
// answered 429 without their token being looked at, the right one's too.
const (
	guessBurst = 10
	guessEvery = time.Second
	// maxGuessers bounds the addresses throttle keeps; past it, those
	// whose allowance is whole again are forgotten.
	maxGuessers = 4096
)

// throttle is each client's allowance of token checks that fail. A check
// takes one (take) and a right token gives it back (refund), so that
// guesses sent at once are counted at once.
type throttle struct {
	every time.Duration // one more allowed per every; guessEvery, shorter in tests

	mu sync.Mutex // protects by
	by map[string]*allowance
}

// allowance is what a client may still fail, as of at.
type allowance struct {
	left float64
	at   time.Time
}

func newThrottle() *throttle { return &throttle{every: guessEvery, by: map[string]*allowance{}} }

// take takes one check from remote's allowance (r.RemoteAddr), or
// reports that it has none left.
func (th *throttle) take(remote string, now time.Time) bool {
	ip := hostOf(remote)
	th.mu.Lock()
	defer th.mu.Unlock()
	a := th.by[ip]
	if a == nil {
		th.prune(now)
		a = &allowance{left: guessBurst, at: now}
		th.by[ip] = a
	}
	th.refill(a, now)
	if a.left < 1 {
		return false
	}
	a.left--
	return true
}

// refund gives remote back the check a right token took.
func (th *throttle) refund(remote string) {
	th.mu.Lock()
	defer th.mu.Unlock()
	if a := th.by[hostOf(remote)]; a != nil {
		a.left = min(a.left+1, guessBurst)
	}
}

// refill adds what a has earned since it was last looked at.
func (th *throttle) refill(a *allowance, now time.Time) {
	if now.Before(a.at) {
		return
	}
	a.left = min(a.left+float64(now.Sub(a.at))/float64(th.every), guessBurst)
	a.at = now
}

// prune forgets the clients whose allowance is whole, once there are too
// many; th.mu is held.
func (th *throttle) prune(now time.Time) {
	if len(th.by) < maxGuessers {
		return
	}
	for ip, a := range th.by {
		if th.refill(a, now); a.left >= guessBurst {
			delete(th.by, ip)
		}
	}
}

// hostOf is the IP of a RemoteAddr (host:port).
func hostOf(remote string) string {
	if host, _, err := net.SplitHostPort(remote); err == nil {
		return host
	}
	return remote
}
