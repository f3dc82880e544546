package servetest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"time"
)

// Settled waits up to wait for the goroutine and descriptor counts to
// come down to at most g and f (0: until they stop changing), and returns
// them. Descriptors are counted on Linux only (0 elsewhere).
func Settled(g, f int, wait time.Duration) (int, int) {
	deadline := time.Now().Add(wait)
	lastG, lastF := -1, -1
	for {
		runtime.GC()
		ng, nf := runtime.NumGoroutine(), OpenFDs()
		done := g == 0 && ng == lastG && nf == lastF || g != 0 && ng <= g && nf <= f
		if done || time.Now().After(deadline) {
			return ng, nf
		}
		lastG, lastF = ng, nf
		time.Sleep(50 * time.Millisecond)
	}
}

// OpenFDs counts this process's open descriptors (Linux).
func OpenFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return 0
	}
	return len(ents)
}

// ClosedWithin reads c (an answer, if any) until the server closes it;
// an error if it is still open after wait.
func ClosedWithin(c net.Conn, wait time.Duration) error {
	c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("still open after %v", wait)
	}
	return nil
}
