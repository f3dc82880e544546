package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// Kind is what a JSON-RPC message is, as @agentclientprotocol/sdk's
// isRequestMessage, isNotificationMessage and isResponseMessage tell them
// apart.
type Kind uint8

const (
	// Other is a JSON object that is none of the three; it is passed on
	// as is, for the agent side to answer.
	Other Kind = iota
	// Request: "jsonrpc":"2.0", a method and an id (a string, a number or
	// null).
	Request
	// Notification: "jsonrpc":"2.0", a method and no id.
	Notification
	// Response: "jsonrpc":"2.0", an id, no method, and exactly one of
	// result and error.
	Response
)

// Errors of Parse.
var (
	ErrInvalidJSON = errors.New("invalid JSON")
	ErrBatch       = errors.New("JSON-RPC batches are not supported")
	ErrNotObject   = errors.New("not a JSON-RPC message (not a JSON object)")
)

// Msg is one JSON-RPC message, in its compact text and with what routing
// needs read out of it. A Msg is a value; Raw is never changed once parsed.
type Msg struct {
	// Raw is the message's compact JSON text, without a line ending.
	Raw  []byte
	Kind Kind
	// ID is the id as sent (nil when there is none; "null" for null).
	ID json.RawMessage
	// Method is the method of a request or notification.
	Method string
	// SessionID is params.sessionId, when it is a string.
	SessionID string
	// ResultSessionID is result.sessionId of a response, when it is a string
	// (session/new and session/fork name the new session there).
	ResultSessionID string
	// IsError: a response that carries an error.
	IsError bool
	// Seq numbers the messages of one Mailbox, from 1, in the order they
	// were pushed (0 outside a Mailbox).
	Seq uint64

	v2             bool // "jsonrpc":"2.0"
	responseShaped bool // no method, and an id, result or error
}

// envelope is what Parse reads of a message; RawMessage fields tell an
// absent member (nil) from a null one.
type envelope struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// Parse reads one JSON-RPC message, compacting it onto one line. It fails
// with ErrInvalidJSON, ErrBatch (an array) or ErrNotObject (any other
// value that is not an object); any object is a Msg, of Kind Other if it
// is no request, notification or response.
func Parse(raw []byte) (Msg, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return Msg{}, ErrInvalidJSON
	}
	return parseCompact(buf.Bytes())
}

// parseCompact is Parse for text known to be compact JSON (the agent
// side's output, one message per line).
func parseCompact(raw []byte) (Msg, error) {
	if len(raw) == 0 {
		return Msg{}, ErrInvalidJSON
	}
	switch raw[0] {
	case '[':
		return Msg{}, ErrBatch
	case '{':
	default:
		if !json.Valid(raw) {
			return Msg{}, ErrInvalidJSON
		}
		return Msg{}, ErrNotObject
	}
	var e envelope
	if err := json.Unmarshal(raw, &e); err != nil {
		return Msg{}, ErrInvalidJSON
	}
	m := Msg{Raw: raw, ID: e.ID, v2: string(e.JSONRPC) == `"2.0"`}
	method, hasMethod := jsonString(e.Method)
	m.Method = method
	m.SessionID = sessionIDOf(e.Params)
	m.responseShaped = e.Method == nil && (e.ID != nil || e.Result != nil || e.Error != nil)
	m.Kind = kindOf(m.v2, e, hasMethod)
	if m.Kind == Response {
		m.IsError = e.Error != nil
		m.ResultSessionID = sessionIDOf(e.Result)
	}
	return m, nil
}

func kindOf(v2 bool, e envelope, hasMethod bool) Kind {
	switch {
	case !v2:
		return Other
	case hasMethod && e.ID == nil:
		return Notification
	case hasMethod && validID(e.ID):
		return Request
	case e.Method == nil && validID(e.ID) && (e.Result != nil) != (e.Error != nil):
		return Response
	}
	return Other
}

// validID: null, a string or a number, as JSON-RPC ids may be.
func validID(id json.RawMessage) bool { return idKey(id) != "" }

// Key names the message's id for maps ("" when it has no usable id): ids
// 1 and 1.0 are one key, and "1" another.
func (m Msg) Key() string { return idKey(m.ID) }

func idKey(id json.RawMessage) string {
	if len(id) == 0 {
		return ""
	}
	switch id[0] {
	case 'n':
		if string(id) == "null" {
			return "null"
		}
	case '"':
		if s, ok := jsonString(id); ok {
			return "s:" + s
		}
	default:
		if f, err := strconv.ParseFloat(string(id), 64); err == nil {
			return "n:" + strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return ""
}

// StringID is the message's id when it is a string.
func (m Msg) StringID() (string, bool) { return jsonString(m.ID) }

// ResponseShaped reports whether m has no method and an id, a result or
// an error: shaped like a response, if not a valid one.
func (m Msg) ResponseShaped() bool { return m.responseShaped }

// IsInitialize reports whether m asks to initialize, as the SDK's
// isInitializeRequest does: "jsonrpc":"2.0", method initialize, and an id
// member (which may still be null).
func (m Msg) IsInitialize() bool { return m.v2 && m.Method == "initialize" && m.ID != nil }

// jsonString is the string a JSON value holds, if it is a string.
func jsonString(v json.RawMessage) (string, bool) {
	if len(v) == 0 || v[0] != '"' {
		return "", false
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
}

// sessionIDOf is obj.sessionId when obj is an object and that member a
// string. (encoding/json matches the member's name case-insensitively
// when no member matches exactly, where the SDK would not.)
func sessionIDOf(obj json.RawMessage) string {
	if len(obj) == 0 || obj[0] != '{' {
		return ""
	}
	var fields struct {
		SessionID json.RawMessage `json:"sessionId"`
	}
	if json.Unmarshal(obj, &fields) != nil {
		return ""
	}
	s, _ := jsonString(fields.SessionID)
	return s
}

// ErrorResponse is a JSON-RPC error response's text. id is the request's
// id (nil for null); data is left out when nil.
func ErrorResponse(id json.RawMessage, code int, message string, data any) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	type rpcError struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data,omitempty"`
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcError        `json:"error"`
	}{"2.0", id, rpcError{code, message, data}})
	if err != nil { // data did not marshal: say so without it
		b, _ = json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   rpcError        `json:"error"`
		}{"2.0", id, rpcError{Code: code, Message: message}})
	}
	return b
}
