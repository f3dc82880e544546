package acpagent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/coder/acp-go-sdk"
)

// The raw layer reads the downstream's stdout before the SDK does, for
// what the SDK's decoding would get wrong, and hands it on in its place in
// the stream (the SDK handles notifications one at a time, in order):
//   - a session/update of a kind the session does not handle as a typed
//     update (a newer agent's: acp-go-sdk's field-matching fallback
//     would decode an unknown kind as another, a "notice"-like one with a
//     title as a session_info_update; or one the SDK knows but acpbridge
//     does not yet handle, as notice or compaction_update), or of a kind
//     it does whose fields the SDK's types would drop (a newer agent's,
//     or annotations on content), becomes rawUpdateMethod, which the
//     session passes on as it came;
//   - an extension notification becomes notifyMethod: the SDK hands
//     extension notifications and requests to one handler, which can't
//     tell them apart, and would forward a notification as a request.
//
// Everything else passes as it came.
const (
	rawUpdateMethod = "_acpbridge/raw_update"   // params: {"sessionId", "update"}
	notifyMethod    = "_acpbridge/notification" // params: {"method", "params"}
)

// typedKinds are the session/update kinds the session takes as acp-go-sdk
// decodes them. The SDK knows more (notice, compaction_update, …); those
// pass as they came.
var typedKinds = []string{"user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call",
	"tool_call_update", "plan", "plan_update", "plan_removed", "available_commands_update", "current_mode_update",
	"config_option_update", "session_info_update", "usage_update", "subagent_update", "session_message", "session_message_chunk"}

// stateKinds are the typed kinds the session reads for its own state (the
// options and modes): they stay typed even when the SDK drops some of
// their fields.
var stateKinds = []string{"current_mode_update", "config_option_update"}

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
	// One pass reads what decides; what is handed on is read again only
	// in the rare cases it is rewritten.
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Update json.RawMessage `json:"update"`
		} `json:"params"`
	}
	var odd *json.UnmarshalTypeError // params of another shape: the rest is read all the same
	if err := json.Unmarshal(line, &m); (err != nil && !errors.As(err, &odd)) || m.ID != nil {
		return line // a request, or not JSON: the SDK says what is wrong with it
	}
	switch {
	case strings.HasPrefix(m.Method, "_"):
		return rewritten(line, func(params json.RawMessage) []byte {
			return notification(notifyMethod, map[string]json.RawMessage{"method": quoted(m.Method), "params": params})
		})
	case m.Method == "session/update" && asItCame(m.Params.Update):
		return rewritten(line, rawUpdate)
	}
	return line
}

// asItCame reports whether an update is to pass as it came: its kind is
// not a typed one, or the SDK's types would drop some of it.
func asItCame(update json.RawMessage) bool {
	var u struct {
		Kind *string `json:"sessionUpdate"`
	}
	if json.Unmarshal(update, &u) != nil || u.Kind == nil {
		return false // the SDK says what is wrong with it
	}
	if !slices.Contains(typedKinds, *u.Kind) {
		return true
	}
	return !slices.Contains(stateKinds, *u.Kind) && lossy(update)
}

// lossy reports whether update, decoded by the SDK and encoded again,
// lacks a key it had (a null, an empty value, is as good as none).
func lossy(update json.RawMessage) bool {
	var typed acp.SessionUpdate
	if json.Unmarshal(update, &typed) != nil {
		return false // the SDK says what is wrong with it
	}
	again, err := json.Marshal(typed)
	if err != nil {
		return false
	}
	var was, is any
	if json.Unmarshal(update, &was) != nil || json.Unmarshal(again, &is) != nil {
		return false
	}
	return !covers(is, was)
}

// covers reports whether every key of was, at any depth, is in is.
func covers(is, was any) bool {
	switch w := was.(type) {
	case map[string]any:
		i, ok := is.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if empty(v) {
				continue // what the SDK's omitempty drops says nothing
			}
			if iv, ok := i[k]; !ok || !covers(iv, v) {
				return false
			}
		}
	case []any:
		i, ok := is.([]any)
		if !ok || len(i) != len(w) {
			return false
		}
		for n := range w {
			if !covers(i[n], w[n]) {
				return false
			}
		}
	}
	return true
}

// rewritten is line rewritten by how from its params, or line if they
// don't decode.
func rewritten(line []byte, how func(params json.RawMessage) []byte) []byte {
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(line, &m) != nil {
		return line
	}
	if out := how(m.Params); out != nil {
		return out
	}
	return line
}

// rawUpdate is a rawUpdateMethod notification carrying a session/update's
// update (of a kind the SDK does not know) as it came.
func rawUpdate(params json.RawMessage) []byte {
	var p struct {
		SessionID json.RawMessage `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if json.Unmarshal(params, &p) != nil {
		return nil
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

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	case bool:
		return !v
	case float64:
		return v == 0
	case string:
		return v == ""
	}
	return false
}
