package edge

import (
	"encoding/json"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/coder/acp-go-sdk"
)

// client is the editor as the bridge sees it: the SDK's connection, plus a
// fast path for replaying stored updates.
type client struct {
	*acp.AgentSideConnection
	out *lockedWriter
}

var _ bridge.Client = client{}

// Peer: the editor is an ACP client; everything it offered at initialize
// can be called.
func (c client) Peer() bridge.Peer { return c }

// rawBatch is how many bytes of replayed notifications go out per write.
const rawBatch = 256 << 10

// SessionUpdatesRaw writes session/update notifications around updates
// that are already JSON, as the SDK would frame them, in batches. It runs
// inside a request handler (session/load), so everything it writes
// precedes that request's response on the same writer.
func (c client) SessionUpdatesRaw(sessionID string, updates []json.RawMessage) error {
	id, err := json.Marshal(sessionID)
	if err != nil {
		return err
	}
	var buf []byte
	for _, u := range updates {
		buf = append(buf, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":`...)
		buf = append(buf, id...)
		buf = append(buf, `,"update":`...)
		buf = append(buf, u...)
		buf = append(buf, "}}\n"...)
		if len(buf) >= rawBatch {
			if _, err := c.out.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		_, err = c.out.Write(buf)
	}
	return err
}
