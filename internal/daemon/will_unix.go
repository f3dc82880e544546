//go:build unix

package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// willSocket is where the keeper of the daemon in dir takes bridges'
// wills.
func willSocket(dir string) string { return filepath.Join(dir, "will") }

// deedTimeout bounds one deed.
const deedTimeout = 10 * time.Second

// Will has the keeper do d, in the bridge's place, if the bridge ends
// (exits, or dies in any way: SIGKILL closes its connection all the same)
// before it calls Unwill(key): interrupt the turn it runs on the server,
// say. A later Will of the same key replaces it.
func (l *Lease) Will(key string, d Deed) error {
	return l.will.send(l.Dir, willLine{Key: key, Deed: &d})
}

// Unwill takes back the deed of key.
func (l *Lease) Unwill(key string) error { return l.will.send(l.Dir, willLine{Key: key}) }

// send writes line to the keeper, connecting first if need be.
func (w *will) send(dir string, line willLine) error {
	b, err := json.Marshal(line)
	if err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("the lease was let go")
	}
	if w.conn == nil {
		c, err := net.Dial("unix", willSocket(dir))
		if err != nil {
			return fmt.Errorf("telling the keeper: %w", err)
		}
		w.conn, w.closer = c, c.Close
	}
	if _, err := w.conn.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("telling the keeper: %w", err)
	}
	return nil
}

// close ends the connection: the keeper does what is left of the will.
func (w *will) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.closer != nil {
		w.closer()
	}
}

// serveWills takes the wills of the bridges that connect to dir's will
// socket, and does what is left of each when its connection ends, until
// the function it returns is called (the server has stopped: what is left
// then is not done); that function returns once every connection's
// goroutine has.
func serveWills(dir string) (stop func()) {
	path := willSocket(dir)
	os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		fmt.Fprintf(os.Stderr, "acpbridge daemon: no wills: %v\n", err)
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { keepWill(ctx, c) })
		}
	})
	return func() {
		cancel()
		ln.Close()
		wg.Wait()
	}
}

// keepWill reads one bridge's will from c until c ends, then does what is
// left of it, unless ctx is done first (it then closes c).
func keepWill(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	deeds := map[string]Deed{}
	in := bufio.NewScanner(c)
	in.Buffer(make([]byte, 4096), 1<<20)
	for in.Scan() {
		var line willLine
		if json.Unmarshal(in.Bytes(), &line) != nil {
			continue
		}
		if line.Deed == nil {
			delete(deeds, line.Key)
		} else {
			deeds[line.Key] = *line.Deed
		}
	}
	if ctx.Err() != nil {
		return
	}
	for key, d := range deeds {
		if err := d.do(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "acpbridge daemon: doing a gone bridge's will (%s): %v\n", key, err)
		}
	}
}

// do does d, within deedTimeout.
func (d Deed) do(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, deedTimeout)
	defer cancel()
	if d.Socket != "" {
		return d.sendRPC(ctx)
	}
	req, err := http.NewRequestWithContext(ctx, d.Method, d.URL, nil)
	if err != nil {
		return err
	}
	for k, v := range d.Header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", d.Method, d.URL, resp.Status)
	}
	return nil
}

// sendRPC sends d's messages over a WebSocket on d.Socket, awaiting the
// answer to each request.
func (d Deed) sendRPC(ctx context.Context) error {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var dl net.Dialer
		return dl.DialContext(ctx, "unix", d.Socket)
	}}
	conn, _, err := websocket.Dial(ctx, "ws://daemon/", &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		return err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	for _, m := range d.Messages {
		if err := conn.Write(ctx, websocket.MessageText, m); err != nil {
			return err
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(m, &req) != nil || len(req.ID) == 0 {
			continue
		}
		if err := awaitAnswer(ctx, conn, req.ID); err != nil {
			return err
		}
	}
	return nil
}

// awaitAnswer reads conn until the answer to the request id, and fails if
// it is an error.
func awaitAnswer(ctx context.Context, conn *websocket.Conn, id json.RawMessage) error {
	for {
		_, msg, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		var a struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(msg, &a) != nil || a.Method != "" || !bytes.Equal(a.ID, id) {
			continue
		}
		if len(a.Error) > 0 && string(a.Error) != "null" {
			return fmt.Errorf("request %s: %s", id, strings.TrimSpace(string(a.Error)))
		}
		return nil
	}
}
