package edge

import (
	"errors"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/persist"
	"github.com/coder/acp-go-sdk"
)

// ACP error codes the SDK has no constructor for.
const (
	codeInvalidRequest   = -32600
	codeResourceNotFound = -32002
)

// reqErr converts a bridge error into the *acp.RequestError the SDK sends
// as is. It must be returned unwrapped: the SDK type-asserts, and anything
// else reaches the client as -32603 "Internal error".
func (s *Server) reqErr(method string, err error) *acp.RequestError {
	msg := err.Error()
	var locked *persist.LockedError
	var re *acp.RequestError
	switch {
	case errors.As(err, &re):
		return re
	case errors.Is(err, agent.ErrInvalidParams), errors.Is(err, persist.ErrInvalidID), errors.Is(err, bridge.ErrRestricted):
		return &acp.RequestError{Code: -32602, Message: "Invalid params: " + msg}
	case errors.Is(err, bridge.ErrSessionNotFound), errors.Is(err, persist.ErrNotFound):
		return &acp.RequestError{Code: codeResourceNotFound, Message: "Resource not found: " + msg}
	case errors.Is(err, bridge.ErrBusy), errors.Is(err, bridge.ErrNotAttached):
		return &acp.RequestError{Code: codeInvalidRequest, Message: "Invalid request: " + msg}
	case errors.Is(err, agent.ErrAuthRequired):
		return &acp.RequestError{Code: -32000, Message: "Authentication required: " + msg,
			Data: map[string]any{"authMethods": s.missingLogins()}}
	case errors.Is(err, bridge.ErrNotRecorded):
		return &acp.RequestError{Code: -32603, Message: msg, Data: map[string]any{"reason": "not_recorded"}}
	case errors.As(err, &locked):
		return &acp.RequestError{Code: -32603, Message: msg, Data: map[string]any{"reason": "locked"}}
	}
	s.log.Warn("request failed", "method", method, "err", err)
	return &acp.RequestError{Code: -32603, Message: msg}
}
