package codex

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"

	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
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

// attend connects to the shared app-server that runs path with args,
// starting it if need be.
func (b *Backend) attend(ctx context.Context, path string, args []string) (agentkit.Link, channel.Channel, error) {
	env := b.Env()
	spec := b.DaemonSpec(path, args, env, agentkit.Contents(filepath.Join(codexHome(env), "config.toml")))
	sock := filepath.Join(spec.Dir(), "sock")
	spec.Args = append(append([]string{}, args...), "--listen", "unix://"+sock)
	var conn *websocket.Conn
	connect := func(string) (err error) { // the daemon is ready once it takes a connection
		conn, err = dialSocket(ctx, sock)
		return err
	}
	lease, err := daemon.Attend(ctx, spec, connect)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", agent.ErrAgentUnavailable, err)
	}
	l := agentkit.NewLeased("codex app-server", lease, func() { conn.CloseNow() })
	return l, wsChannel{l, conn}, nil
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

// wsChannel is a jrpc2 channel on the WebSocket to the shared
// app-server: one record per text message. Its end ends the hold.
type wsChannel struct {
	l    *agentkit.Leased
	conn *websocket.Conn
}

func (c wsChannel) Send(rec []byte) error {
	return c.conn.Write(context.Background(), websocket.MessageText, rec)
}

func (c wsChannel) Recv() ([]byte, error) {
	_, rec, err := c.conn.Read(context.Background())
	if err != nil {
		c.l.End(fmt.Errorf("the connection ended: %w", err))
	}
	return rec, err
}

func (c wsChannel) Close() error {
	c.l.Stop()
	return nil
}
