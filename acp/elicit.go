package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// ownCalls are the requests the bridge writes to the client itself, around
// the SDK: elicitation/create, whose stable form (ACP 1.21, with the
// session and tool call it is about) the SDK's types predate. Their ids
// are strings with ownPrefix; the guard hands their responses here instead
// of to the SDK, which did not send them.
type ownCalls struct {
	mu      sync.Mutex
	next    int
	waiting map[string]chan json.RawMessage // by id key
}

const ownPrefix = "acpbridge-"

func newOwnCalls() *ownCalls { return &ownCalls{waiting: make(map[string]chan json.RawMessage)} }

// start makes an id for a request and what its response will come on.
func (o *ownCalls) start() (id string, answer <-chan json.RawMessage) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.next++
	id = ownPrefix + strconv.Itoa(o.next)
	ch := make(chan json.RawMessage, 1)
	o.waiting[idKey(quoted(id))] = ch
	return id, ch
}

// forget drops a request nobody waits for any more.
func (o *ownCalls) forget(id string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.waiting, idKey(quoted(id)))
}

// take hands a response to its request, if it answers one of the
// bridge's own; it reports whether it did.
func (o *ownCalls) take(id, line json.RawMessage) bool {
	if !strings.HasPrefix(string(id), `"`+ownPrefix) {
		return false
	}
	o.mu.Lock()
	ch, ok := o.waiting[idKey(id)]
	delete(o.waiting, idKey(id))
	o.mu.Unlock()
	if ok {
		ch <- slices.Clone(line) // the guard reuses its buffer
	}
	return true // a stale one of ours is no business of the SDK's either
}

func quoted(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// Elicit asks the user to fill a form about tool call callID of session
// sessionID (elicitation/create, mode form) and returns what they did:
// "accept" with the content, "decline" or "cancel".
func (c client) Elicit(ctx context.Context, sessionID, callID, message string, schema map[string]any) (string, map[string]any, error) {
	id, answer := c.own.start()
	defer c.own.forget(id)
	params := map[string]any{"sessionId": sessionID, "toolCallId": callID, "mode": "form", "message": message, "requestedSchema": schema}
	line, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": sdk.ClientMethodElicitationCreate, "params": params})
	if err != nil {
		return "", nil, err
	}
	if _, err := c.out.Write(append(line, '\n')); err != nil {
		return "", nil, fmt.Errorf("asking the client: %w", err)
	}
	select {
	case resp := <-answer:
		return elicited(resp)
	case <-ctx.Done():
		return "cancel", nil, nil
	case <-c.out.broken:
		return "", nil, fmt.Errorf("asking the client: %w", c.out.writeError)
	}
}

// elicited reads an elicitation/create response.
func elicited(resp json.RawMessage) (string, map[string]any, error) {
	var r struct {
		Result struct {
			Action  string         `json:"action"`
			Content map[string]any `json:"content"`
		} `json:"result"`
		Error *sdk.RequestError `json:"error"`
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return "", nil, fmt.Errorf("the client's elicitation answer: %w", err)
	}
	if r.Error != nil {
		return "", nil, fmt.Errorf("the client refused the elicitation: %w", r.Error)
	}
	return r.Result.Action, r.Result.Content, nil
}
