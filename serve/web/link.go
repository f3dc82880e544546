package web

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"sync"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// A link is the client's end of one in-process ACP connection to the
// bridge: what the client writes its messages to, what it reads the agent
// side's from, and when it is over.
type link struct {
	w     io.WriteCloser // closing it ends the connection
	r     io.ReadCloser  // closing it makes the agent side's writes fail
	ended chan struct{}  // closed once the connection is over
}

// A dialer makes the links of a peer; what it starts, it adds to tasks.
type dialer func(ctx context.Context, agent string, tasks *sync.WaitGroup) (*link, error)

// pipeDialer links a peer straight to connect, on in-memory pipes.
func pipeDialer(connect core.Connector) dialer {
	return func(ctx context.Context, agent string, tasks *sync.WaitGroup) (*link, error) {
		c2aR, c2aW := io.Pipe()
		a2cR, a2cW := io.Pipe()
		l := &link{w: c2aW, r: a2cR, ended: make(chan struct{})}
		tasks.Go(func() {
			defer close(l.ended)
			connect(ctx, c2aR, a2cW, agent)
			a2cW.Close()
			c2aR.Close()
		})
		return l, nil
	}
}

// registryDialer links a peer to connect through Conns of reg, as the
// other edges' client connections are: a session a web edge takes over is
// then detached from the connection that had it (and the other way
// round), and reg's CloseAll ends the web edges' connections too. The
// client's messages go to the Conn's Send as it writes them; the agent
// side's come back through Route, written to the client's pipe at once
// (its reader, the SDK's, only queues them). The pipe is synchronous on
// purpose: an agent that streams faster than the web client is sent its
// chunks is held to that pace, so that the first chunk is not kept
// waiting behind the production of the rest (measured: a pipe that
// buffers makes the mock's per-chunk cost 17 µs instead of 44, but its
// first chunk 1.3 ms later).
func registryDialer(reg *core.Registry, connect core.Connector) dialer {
	return func(_ context.Context, agent string, tasks *sync.WaitGroup) (*link, error) {
		a2cR, a2cW := io.Pipe()
		c := reg.NewConn(core.ConnOptions{Agent: agent, Route: func(m core.Msg) { writeLine(a2cW, m.Raw) }})
		if err := c.Start(connect); err != nil {
			return nil, err
		}
		l := &link{w: &lineSender{c: c}, r: a2cR, ended: make(chan struct{})}
		tasks.Go(func() {
			defer close(l.ended)
			<-c.Done()
			a2cW.Close()
		})
		return l, nil
	}
}

// writeLine writes raw and a newline in one write.
func writeLine(w io.Writer, raw []byte) {
	line := make([]byte, 0, len(raw)+1)
	w.Write(append(append(line, raw...), '\n'))
}

// lineSender is a client's writer on a Conn: every line written is a
// message, sent.
type lineSender struct {
	c   *core.Conn
	buf []byte // a line begun
}

func (s *lineSender) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			s.buf = append(s.buf, p...)
			return n, nil
		}
		line := append(s.buf, p[:i]...)
		s.buf, p = nil, p[i+1:]
		m, err := core.Parse(line)
		if err != nil {
			return 0, fmt.Errorf("the web edge wrote a line that is no message: %w", err)
		}
		if err := s.c.Send(m); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Close ends the connection.
func (s *lineSender) Close() error {
	s.c.Close(core.ErrClosed)
	return nil
}

// RandomID is 12 random bytes in hex.
func RandomID() string {
	b := make([]byte, 12)
	rand.Read(b)
	return hex.EncodeToString(b)
}
