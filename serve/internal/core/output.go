package core

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"
)

// writer is the agent side's output: it splits it into lines and hands
// each on (deliver) without waiting for the client.
type writer struct{ c *Conn }

func (w writer) Write(p []byte) (int, error) {
	c := w.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.Err(); err != nil {
		return 0, fmt.Errorf("writing to the client: %w", err)
	}
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			c.line = append(c.line, p...)
			if len(c.line) > c.limits.MaxBuffered {
				c.line = nil
				c.Close(overflow(c.limits.MaxBuffered))
				return n, fmt.Errorf("writing to the client: %w", c.Err())
			}
			break
		}
		line := bytes.Clone(p[:i])
		if c.line != nil {
			line = append(c.line, p[:i]...)
			c.line = nil
		}
		p = p[i+1:]
		c.deliver(line)
	}
	return n, nil
}

// deliver hands one line of the agent side's on: to the Call that awaits
// it, else to Route. c.wmu is held.
func (c *Conn) deliver(line []byte) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return
	}
	m, err := parseCompact(line)
	if err != nil {
		c.log.Warn("the agent side wrote a line that is no JSON-RPC message; dropped", "conn", c.id, "err", err)
		return
	}
	if m.Kind == Response {
		c.answered(m)
		if c.await(m) {
			return
		}
	}
	if c.opts.Route != nil {
		c.opts.Route(m)
	}
}

// await hands a response to the Call waiting for it, if one is.
func (c *Conn) await(m Msg) bool {
	key := m.Key()
	c.mu.Lock()
	ch, ok := c.waiters[key]
	delete(c.waiters, key)
	c.mu.Unlock()
	if ok {
		ch <- m // 1-buffered, and only ever sent once
	}
	return ok
}

// watch closes the connection when output has waited Limits.MaxStall with
// none of it taken.
func (c *Conn) watch() {
	t := time.NewTimer(c.limits.MaxStall)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-c.over:
			return
		case <-c.kick:
		case <-t.C:
		}
		wait := c.stallLeft()
		if wait < 0 {
			c.log.Warn("closing a connection whose client reads none of its output", "conn", c.id, "stall", c.limits.MaxStall)
			c.Close(fmt.Errorf("%w for %v", ErrStalled, c.limits.MaxStall))
			return
		}
		if wait > 0 {
			t.Reset(wait)
		}
	}
}

// stallLeft is how long output may still wait untaken: 0 when none waits,
// negative when it has waited too long.
func (c *Conn) stallLeft() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buffered <= 0 {
		return 0
	}
	left := c.limits.MaxStall - time.Since(c.progressAt)
	if left == 0 {
		left = -1
	}
	return left
}

// UnblockWrites makes a write blocked on a response fail at once when c
// is closed; stop undoes it, and waits for it if it has begun.
func (c *Conn) UnblockWrites(rc *http.ResponseController) (stop func()) {
	ran := make(chan struct{})
	cancel := context.AfterFunc(c.Context(), func() {
		defer close(ran)
		rc.SetWriteDeadline(time.Now())
	})
	return func() {
		if !cancel() {
			<-ran
		}
	}
}
