package codex

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
	"github.com/acpbridge/acpbridge/translators/proc"
	"github.com/coder/websocket"
	"github.com/creachadair/jrpc2/channel"
)

// A shared app-server (Options.Shared): one `codex app-server --listen
// unix://DIR/sock` per user and configuration, kept by proc's daemon
// keeper and used by every bridge at once. It speaks the same JSON-RPC as
// on stdio, one message per WebSocket text frame, over the Unix socket.
// Each bridge is a connection of its own: codex sends a thread's
// notifications and approvals to the connections that started or resumed
// it. A bridge's link to it ends when the connection does; the daemon
// outlives the bridge by Options.Shared.

// link is what a server's client runs over: a child's stdio, or a
// connection to a shared daemon.
type link interface {
	Done() <-chan struct{} // closed once the server is gone
	Exited() error         // how it went, with what it said
	Stop()                 // lets it go and waits
	Pid() int              // the server's process (0 if unknown)
}

// attend connects to the shared app-server that runs path with args,
// starting it if need be.
func (b *Backend) attend(ctx context.Context, path string, args []string) (link, channel.Channel, error) {
	env := b.Env()
	spec := proc.DaemonSpec{Name: "codex", Path: path, Env: env, Idle: b.Shared(),
		Key: append(append([]string{path}, args...), agentkit.StableEnv(env)...)}
	sock := filepath.Join(spec.Dir(), "sock")
	spec.Args = append(append([]string{}, args...), "--listen", "unix://"+sock)
	var conn *websocket.Conn
	connect := func(string) (err error) { // the daemon is ready once it takes a connection
		conn, err = dialSocket(ctx, sock)
		return err
	}
	lease, err := proc.Attend(ctx, spec, connect)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", bridge.ErrAgentUnavailable, err)
	}
	l := &daemonLink{Leased: agentkit.NewLeased("codex app-server", lease), conn: conn}
	return l, wsChannel{l}, nil
}

// dialSocket opens a WebSocket to the app-server on sock.
func dialSocket(ctx context.Context, sock string) (*websocket.Conn, error) {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}
	conn, _, err := websocket.Dial(ctx, "ws://codex/", &websocket.DialOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(-1) // codex sends a whole thread's history in one message
	return conn, nil
}

// daemonLink is a bridge's connection to a shared app-server.
type daemonLink struct {
	*agentkit.Leased
	conn *websocket.Conn
}

func (l *daemonLink) Stop() {
	l.conn.CloseNow()
	l.Release()
}

// wsChannel is a jrpc2 channel on the link's WebSocket: one record per
// text message.
type wsChannel struct{ l *daemonLink }

func (c wsChannel) Send(rec []byte) error {
	return c.l.conn.Write(context.Background(), websocket.MessageText, rec)
}

func (c wsChannel) Recv() ([]byte, error) {
	_, rec, err := c.l.conn.Read(context.Background())
	if err != nil {
		c.l.End(fmt.Errorf("the connection ended: %w", err))
	}
	return rec, err
}

func (c wsChannel) Close() error {
	c.l.Stop()
	return nil
}
