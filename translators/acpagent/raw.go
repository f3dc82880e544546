package acpagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
)

// The raw layer reads the downstream's stdout before the SDK does, for
// what the SDK's decoding would get wrong, and hands it on in its place in
// the stream (the SDK handles notifications one at a time, in order):
//   - a session/update of a kind acp-go-sdk does not know (a newer
//     agent's: its field-matching fallback would decode it as another
//     kind, a "notice" with a title as a session_info_update) becomes
//     rawUpdateMethod, which the session passes on as it came;
//   - an extension notification becomes notifyMethod: the SDK hands
//     extension notifications and requests to one handler, which can't
//     tell them apart, and would forward a notification as a request.
//
// Everything else passes as it came.
const (
	rawUpdateMethod = "_acpbridge/raw_update"   // params: {"sessionId", "update"}
	notifyMethod    = "_acpbridge/notification" // params: {"method", "params"}
)

// sdkKinds are the session/update kinds acp-go-sdk v0.13.5 decodes.
var sdkKinds = []string{"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
	"tool_call_update", "plan", "plan_update", "plan_removed", "available_commands_update", "current_mode_update",
	"config_option_update", "session_info_update", "usage_update"}

// rawLayer returns what the SDK reads of r, and a channel closed once r
// has ended and everything read was handed on.
func rawLayer(r io.Reader) (io.Reader, <-chan struct{}) {
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		pw.CloseWithError(copyLines(bufio.NewReaderSize(r, 64<<10), pw))
	}()
	return pr, done
}

// copyLines copies r to w a line at a time, rewriting what the SDK would
// get wrong. It returns nil at r's end.
func copyLines(r *bufio.Reader, w io.Writer) error {
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if _, werr := w.Write(rewrite(line)); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// rewrite is line as the SDK is to read it.
func rewrite(line []byte) []byte {
	if !bytes.Contains(line, []byte(`"method"`)) {
		return line // a response
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil || m.ID != nil {
		return line // a request, or not JSON: the SDK says what is wrong with it
	}
	switch {
	case strings.HasPrefix(m.Method, "_"):
		return notification(notifyMethod, map[string]json.RawMessage{"method": quoted(m.Method), "params": m.Params})
	case m.Method == "session/update":
		return rawUpdate(line, m.Params)
	}
	return line
}

// rawUpdate is a session/update line, or, for a kind the SDK does not
// know, a rawUpdateMethod notification carrying the update as it came.
func rawUpdate(line, params json.RawMessage) []byte {
	var p struct {
		SessionID json.RawMessage `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	var kind struct {
		SessionUpdate string `json:"sessionUpdate"`
	}
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Update, &kind) != nil || slices.Contains(sdkKinds, kind.SessionUpdate) {
		return line
	}
	return notification(rawUpdateMethod, map[string]json.RawMessage{"sessionId": p.SessionID, "update": p.Update})
}

// notification is a JSON-RPC notification line.
func notification(method string, params map[string]json.RawMessage) []byte {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		return nil // params came from JSON just decoded
	}
	return append(b, '\n')
}

func quoted(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}
