package edge

import (
	"context"
	"encoding/json"

	"github.com/coder/acp-go-sdk"
)

// notifyMethod stands, between the guard and the handler, for an
// extension notification from the client: the SDK hands extension
// notifications and requests to one handler (HandleExtensionMethod),
// which could not tell them apart, so the guard renames a notification to
// this, with its method and params as params.
const notifyMethod = "_acpbridge/notification"

// isExtension reports whether an envelope's method is an extension
// method's ("_…").
func isExtension(method json.RawMessage) bool {
	return len(method) > 2 && method[0] == '"' && method[1] == '_'
}

// asNotification is an extension notification's line renamed to
// notifyMethod; a line that does not decode goes on as it came (the SDK
// says what is wrong with it).
func asNotification(line []byte) []byte {
	var n struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &n) != nil {
		return line
	}
	out, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": notifyMethod,
		"params": map[string]any{"method": n.Method, "params": n.Params}})
	if err != nil {
		return line
	}
	return out
}

// HandleExtensionMethod passes the client's extension methods to the
// session their params name (its agent's, for an agent that takes them):
// a request as a request, with its answer; a notification as a
// notification.
func (s *conn) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	notify := method == notifyMethod
	if notify {
		var n struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(params, &n) != nil {
			return nil, nil
		}
		method, params = n.Method, n.Params
	}
	out, err := s.bc.Extension(ctx, method, params, notify)
	if notify {
		if err != nil {
			s.log.Debug("an extension notification went nowhere", "method", method, "err", err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, s.reqErr(method, err)
	}
	return out, nil
}

var _ acp.ExtensionMethodHandler = (*conn)(nil)
