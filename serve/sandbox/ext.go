package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// sandbox-agent's extension methods that acpbridge serves; the HTTP edge
// answers them, as the daemon does, rather than the agent side.
const (
	extensionPrefix  = "_sandboxagent/"
	methodListModels = extensionPrefix + "session/list_models"
	methodDetach     = extensionPrefix + "session/detach"
	methodTerminate  = extensionPrefix + "session/terminate"
)

// JSON-RPC error codes the extension methods answer.
const (
	codeMethodNotFound   = -32601
	codeInvalidParams    = -32602
	codeResourceNotFound = -32002
)

// internalPrefix begins the ids of the requests the HTTP edge sends the
// agent side itself (terminate's session/close).
const internalPrefix = "acpbridge-sandbox-"

// isInternal reports whether a response answers an internal request.
func isInternal(m core.Msg) bool {
	id, ok := m.StringID()
	return ok && strings.HasPrefix(id, internalPrefix)
}

// extension answers a _sandboxagent/ request: 200 with its answer, which
// goes on the stream too.
func (h *sandboxHandler) extension(w http.ResponseWriter, r *http.Request, s *sbServer, m core.Msg) {
	var res []byte
	switch m.Method {
	case methodListModels:
		res = s.listModels(m)
	case methodDetach:
		res = s.detach(m)
	case methodTerminate:
		var err error
		if res, err = h.terminate(r.Context(), s, m); err != nil {
			if r.Context().Err() == nil {
				h.ended(w, s, err)
			}
			return
		}
	default:
		res = core.ErrorResponse(m.ID, codeMethodNotFound, "Method not found: acpbridge does not serve "+m.Method+
			" (of sandbox-agent's extension methods it serves "+methodListModels+", "+methodDetach+" and "+methodTerminate+")", nil)
	}
	h.answer(w, r, s, res)
}

// extensionNotification acts on a _sandboxagent/ notification: detach and
// terminate as their requests do; the rest are dropped.
func (h *sandboxHandler) extensionNotification(ctx context.Context, s *sbServer, m core.Msg) {
	switch m.Method {
	case methodDetach:
		s.detach(m)
	case methodTerminate:
		if _, err := h.terminate(ctx, s, m); err != nil {
			h.log.Debug("terminating a session for a notification", "server", s.id, "session", m.SessionID, "err", err)
		}
	default:
		h.log.Debug("dropped a sandbox-agent extension notification acpbridge does not serve", "server", s.id, "method", m.Method)
	}
}

// needSession is the answer to a request that names no session, or "".
func needSession(m core.Msg) []byte {
	if m.SessionID != "" {
		return nil
	}
	return core.ErrorResponse(m.ID, codeInvalidParams, "Invalid params: "+m.Method+" requires params.sessionId", nil)
}

// listModels answers _sandboxagent/session/list_models with the choices
// of the session's model option (the config option of category "model"),
// as this server last saw its config options.
func (s *sbServer) listModels(m core.Msg) []byte {
	if res := needSession(m); res != nil {
		return res
	}
	s.mu.Lock()
	opts, ok := s.config[m.SessionID]
	s.mu.Unlock()
	if !ok {
		return core.ErrorResponse(m.ID, codeResourceNotFound, fmt.Sprintf(
			"Resource not found: session %s has no config options on this ACP server (session/new, session/load or session/resume it here first)", m.SessionID), nil)
	}
	return resultResponse(m.ID, modelsOf(opts))
}

// sandboxModels is list_models' result.
type sandboxModels struct {
	AvailableModels []sandboxModel `json:"availableModels"`
	CurrentModelID  *string        `json:"currentModelId"`
}

type sandboxModel struct {
	ModelID     string  `json:"modelId"`
	Name        string  `json:"name"`
	Description *string `json:"description"`
}

// configOption is what modelsOf reads of an ACP select config option: its
// choices, flat or in groups.
type configOption struct {
	ID           string         `json:"id"`
	Category     string         `json:"category"`
	Type         string         `json:"type"`
	CurrentValue string         `json:"currentValue"`
	Options      []configChoice `json:"options"`
}

type configChoice struct {
	Value       string         `json:"value"`
	Name        string         `json:"name"`
	Description *string        `json:"description"`
	Options     []configChoice `json:"options"` // a group's
}

// modelsOf is the model choices of a session's config options (none if it
// has no model option).
func modelsOf(raw json.RawMessage) sandboxModels {
	res := sandboxModels{AvailableModels: []sandboxModel{}}
	var opts []configOption
	json.Unmarshal(raw, &opts)
	for _, o := range opts {
		if o.Category != "model" && !(o.Category == "" && o.ID == "model") {
			continue
		}
		if o.CurrentValue != "" {
			res.CurrentModelID = &o.CurrentValue
		}
		for _, c := range flatten(o.Options) {
			res.AvailableModels = append(res.AvailableModels, sandboxModel{ModelID: c.Value, Name: c.Name, Description: c.Description})
		}
		break
	}
	return res
}

// flatten is a select option's choices with its groups opened.
func flatten(cs []configChoice) []configChoice {
	var out []configChoice
	for _, c := range cs {
		if c.Value == "" && len(c.Options) > 0 {
			out = append(out, flatten(c.Options)...)
			continue
		}
		out = append(out, c)
	}
	return out
}

// detach answers _sandboxagent/session/detach: the server's stream stops
// carrying the session's updates and the connection no longer has it
// attached; the session goes on, and session/load or session/resume on
// this server attaches it again. Requests the agent side makes of the
// session (permission asks) still come on the stream.
func (s *sbServer) detach(m core.Msg) []byte {
	if res := needSession(m); res != nil {
		return res
	}
	s.mu.Lock()
	s.detached[m.SessionID] = true
	s.mu.Unlock()
	s.c.Detach(m.SessionID)
	return resultResponse(m.ID, struct{}{})
}

// terminate answers _sandboxagent/session/terminate with session/close's
// outcome: the session's turn is cancelled and it is released (its
// transcript stays). A session the bridge has not open is "alreadyEnded".
// err is set when the connection is over (or ctx done) before an answer.
func (h *sandboxHandler) terminate(ctx context.Context, s *sbServer, m core.Msg) ([]byte, error) {
	if res := needSession(m); res != nil {
		return res, nil
	}
	raw, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": h.internalID(), "method": "session/close",
		"params": map[string]string{"sessionId": m.SessionID}})
	if err != nil {
		return nil, fmt.Errorf("making session/close for %s: %w", m.Method, err)
	}
	req, err := core.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("making session/close for %s: %w", m.Method, err)
	}
	res, err := s.c.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	var e struct {
		Error *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
	json.Unmarshal(res.Raw, &e)
	switch {
	case e.Error == nil:
		return resultResponse(m.ID, terminated(true)), nil
	case e.Error.Code == codeResourceNotFound:
		return resultResponse(m.ID, terminated(false)), nil
	}
	var data any
	if len(e.Error.Data) > 0 {
		data = e.Error.Data
	}
	return core.ErrorResponse(m.ID, e.Error.Code, e.Error.Message, data), nil
}

// terminated is terminate's result, in the daemon's words.
func terminated(done bool) map[string]any {
	return map[string]any{"terminated": done, "alreadyEnded": !done, "reason": "terminated", "terminatedBy": "daemon"}
}

// internalID is a new id for an internal request.
func (h *sandboxHandler) internalID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.internal++
	return fmt.Sprintf("%s%d", internalPrefix, h.internal)
}

// resultResponse is a JSON-RPC response's text.
func resultResponse(id json.RawMessage, result any) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, result})
	if err != nil {
		return core.ErrorResponse(id, -32603, "Internal error: encoding the result: "+err.Error(), nil)
	}
	return b
}
