package acpagent

import (
	"context"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
)

// orderClient records the order its handlers run in. Its SessionUpdate
// holds the update for a while, or until a request_permission's handler
// starts: that one must wait for it.
type orderClient struct {
	acp.Client // the methods the test does not call
	mu         sync.Mutex
	order      []string
	asked      chan struct{}
	updated    chan struct{}
}

func (c *orderClient) record(what string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order = append(c.order, what)
}

func (c *orderClient) SessionUpdate(context.Context, acp.SessionNotification) error {
	select {
	case <-c.asked: // the ask overtook this update
	case <-time.After(300 * time.Millisecond): // how long an overtaking ask has to show itself
	}
	c.record("update")
	close(c.updated)
	return nil
}

func (c *orderClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	close(c.asked)
	c.record("ask")
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

// TestSDK_askWaitsForTheUpdatesBeforeIt: an agent's session/update and
// then its session/request_permission about the tool call that update
// announced reach the client's handlers in that order. The SDK handles
// notifications on one goroutine and each request on its own; unpatched,
// the ask overtook the update (third_party/acp-go-sdk/PATCHED.md).
func TestSDK_askWaitsForTheUpdatesBeforeIt(t *testing.T) {
	toClient, agentOut := io.Pipe()
	agentIn, fromClient := io.Pipe()
	c := &orderClient{asked: make(chan struct{}), updated: make(chan struct{})}
	conn := acp.NewClientSideConnection(c, fromClient, toClient)
	t.Cleanup(func() { agentOut.Close(); fromClient.Close() })
	answer := make(chan struct{}) // closed once the client answers (or the pipe closes)
	go func() {
		agentIn.Read(make([]byte, 4096))
		close(answer)
	}()
	io.WriteString(agentOut, `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"tool_call","toolCallId":"call-1","title":"rm -rf x","status":"pending"}}}`+"\n"+
		`{"jsonrpc":"2.0","id":7,"method":"session/request_permission","params":{"sessionId":"s1","toolCall":{"toolCallId":"call-1"},"options":[{"optionId":"no","name":"Reject","kind":"reject_once"}]}}`+"\n")
	for _, wait := range []struct {
		what string
		ch   <-chan struct{}
	}{{"the ask's answer", answer}, {"the update's handler", c.updated}} {
		select {
		case <-wait.ch:
		case <-conn.Done():
			t.Fatalf("the connection closed before %s", wait.what)
		case <-time.After(time.Minute):
			t.Fatalf("no %s in a minute", wait.what)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.order) != 2 || c.order[0] != "update" || c.order[1] != "ask" {
		t.Errorf("the handlers ran in the order %v; want [update ask]", c.order)
	}
}
