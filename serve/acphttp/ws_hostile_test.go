package acphttp

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
	"github.com/acpbridge/acpbridge/serve/internal/servetest"
)

// A WebSocket that answers no ping is closed, whether it sends nothing
// or stopped halfway through a frame that announces 2^62 bytes; one whose
// client reads (and so answers pings) stays open.
func TestServer_silentWebSocketClosed(t *testing.T) {
	s := newACPServer(t, core.Limits{PingInterval: 100 * time.Millisecond}, nil) // DefaultPingInterval in use
	addr := strings.TrimPrefix(s.URL, "http://")
	live, _ := s.dial(t)
	pinged := make(chan error, 1)
	go func() { // reading answers the server's pings
		_, _, err := live.Read(context.Background())
		pinged <- err
	}()
	silent, half := rawUpgrade(t, addr), rawUpgrade(t, addr)
	hdr := []byte{0x81, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4} // text, masked, 64-bit length, the mask
	binary.BigEndian.PutUint64(hdr[2:10], 1<<62)
	if _, err := half.Write(hdr); err != nil {
		t.Fatal(err)
	}
	g1, f1 := servetest.Settled(0, 0, time.Second)
	for name, c := range map[string]net.Conn{"silent": silent, "half a frame": half} {
		if err := servetest.ClosedWithin(c, time.Minute); err != nil {
			t.Errorf("a WebSocket with %s: %v", name, err)
		}
	}
	g, f := servetest.Settled(0, 0, time.Second)
	t.Logf("once closed: goroutines %d, descriptors %d (%d, %d with them)", g, f, g1, f1)
	select {
	case err := <-pinged:
		t.Errorf("the WebSocket whose client answers pings ended: %v", err)
	default:
	}
	live.CloseNow()
	<-pinged
}

// rawUpgrade opens a WebSocket to /acp by hand; it then sends and reads
// nothing.
func rawUpgrade(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "GET /acp HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n", addr)
	c.SetReadDeadline(time.Now().Add(time.Minute))
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusSwitchingProtocols || br.Buffered() > 0 {
		t.Fatalf("upgrading by hand: %v %v", resp, err)
	}
	return c
}
