package daemon

import (
	"encoding/json"
	"sync"
)

// Deed is what a daemon's keeper does for a bridge that ended without
// undoing it (see Lease.Will): an HTTP request to the server (Method,
// URL, Header), or JSON-RPC messages sent over a WebSocket on the
// server's Unix socket (Socket, Messages), each request's answer awaited
// before the next message goes.
type Deed struct {
	Method   string            `json:"method,omitempty"`
	URL      string            `json:"url,omitempty"`
	Header   map[string]string `json:"header,omitempty"`
	Socket   string            `json:"socket,omitempty"`
	Messages []json.RawMessage `json:"messages,omitempty"`
}

// willLine is one line a bridge sends the keeper: key's deed, or (Deed
// nil) that key's deed is done with.
type willLine struct {
	Key  string `json:"key"`
	Deed *Deed  `json:"deed,omitempty"`
}

// will is a bridge's connection to the keeper's will socket, opened at
// its first line (Lease.Will).
type will struct {
	mu     sync.Mutex
	conn   interface{ Write([]byte) (int, error) }
	closer func() error
	closed bool
}
