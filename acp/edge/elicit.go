package edge

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/coder/acp-go-sdk"
)

// Elicit asks the user to fill a form about tool call callID of session
// sessionID (elicitation/create, mode form) and returns what they did:
// "accept" with the content, "decline" or "cancel". A ctx done first is
// "cancel" (the SDK tells the client with $/cancel_request).
func (c client) Elicit(ctx context.Context, sessionID, callID, message string, schema map[string]any) (string, map[string]any, error) {
	var form acp.ElicitationSchema
	if b, err := json.Marshal(schema); err != nil || json.Unmarshal(b, &form) != nil {
		return "", nil, fmt.Errorf("the elicitation's form: %v", schema)
	}
	sid, tid := acp.SessionId(sessionID), acp.ToolCallId(callID)
	resp, err := c.CreateElicitation(ctx, acp.CreateElicitationRequest{Form: &acp.CreateElicitationForm{
		SessionId: &sid, ToolCallId: &tid, Mode: "form", Message: message, RequestedSchema: form}})
	switch {
	case ctx.Err() != nil:
		return "cancel", nil, nil
	case err != nil:
		return "", nil, fmt.Errorf("asking the client: %w", err)
	case resp.Accept != nil:
		return resp.Accept.Action, resp.Accept.Content, nil
	case resp.Decline != nil:
		return resp.Decline.Action, nil, nil
	case resp.Cancel != nil:
		return resp.Cancel.Action, nil, nil
	case resp.Other != nil:
		return resp.Other.Action, nil, nil
	}
	return "", nil, fmt.Errorf("the client's elicitation answer has no action")
}
