package serve

import (
	"net"
	"strings"
	"sync"
)

// loopbackName is whether host (of a listen address) is loopback only:
// localhost or a loopback IP. "" and 0.0.0.0 listen everywhere.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// capListener serves at most a number of connections at once: past that,
// Accept waits for one to close, and new ones wait in the kernel's backlog,
// where they cost this process no goroutine and no descriptor.
type capListener struct {
	net.Listener
	slots     chan struct{} // one per open connection
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

func newCapListener(ln net.Listener, n int) *capListener {
	return &capListener{Listener: ln, slots: make(chan struct{}, n), done: make(chan struct{})}
}

// Accept waits for a free slot, then for a connection.
func (l *capListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &cappedConn{Conn: c, release: func() { <-l.slots }}, nil
}

// Close closes the listener and ends an Accept waiting for a slot.
func (l *capListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// cappedConn frees its slot when it is closed (a hijacked WebSocket's
// too, since the server hands this Conn out).
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

// CloseWrite passes on to the connection's, which the HTTP server uses to
// send an error (431, say) before it closes.
func (c *cappedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
