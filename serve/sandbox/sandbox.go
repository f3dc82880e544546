package sandbox

import (
	"cmp"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/serve/internal/core"
)

// Defaults of Options.
const (
	// DefaultHold is how long a POSTed request waits for its answer
	// before the POST answers 202: under the 60 s that proxies commonly
	// allow a response, and far under the 300 s after which Node's fetch
	// (the SDK's) gives up on one.
	DefaultHold = 30 * time.Second
	// DefaultServers bounds the ACP servers at once.
	DefaultServers = 256
	// DefaultLogEvents is how many messages an ACP server's SSE log
	// keeps: the daemon's ring holds as many.
	DefaultLogEvents = 1024
	// DefaultLogBytes bounds the text an SSE log keeps.
	DefaultLogBytes = 16 << 20
	// DefaultStreams bounds an ACP server's SSE streams at once.
	DefaultStreams = 8
)

// Options configure NewHandler; a zero field takes its
// default.
type Options struct {
	// Agents lists the agents for GET /v1/agents, and the names ?agent=
	// may give; nil lists none and takes any name (the Connector judges).
	Agents Agents
	// Logger logs what goes wrong; nil discards.
	Logger *slog.Logger
	// Hold is how long a POSTed request waits for its answer to be the
	// POST's 200 body; past it, if an SSE stream of its server is open,
	// the POST answers 202 and the answer comes on the stream, as a later
	// daemon answers every session/prompt (with none open it waits on).
	// Default DefaultHold.
	Hold time.Duration
	// MaxServers bounds the ACP servers at once. Default
	// DefaultServers.
	MaxServers int
	// LogEvents and LogBytes bound each ACP server's SSE log. Defaults
	// DefaultLogEvents and DefaultLogBytes.
	LogEvents, LogBytes int
	// MaxStreams bounds each ACP server's SSE streams at once. Default
	// DefaultStreams.
	MaxStreams int
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Hold = core.OrDefault(o.Hold, DefaultHold)
	o.MaxServers = core.OrDefault(o.MaxServers, DefaultServers)
	o.LogEvents = core.OrDefault(o.LogEvents, DefaultLogEvents)
	o.LogBytes = core.OrDefault(o.LogBytes, DefaultLogBytes)
	o.MaxStreams = core.OrDefault(o.MaxStreams, DefaultStreams)
	return o
}

// NewHandler returns the handler of sandbox-agent 0.4's HTTP API
// (the daemon of npm sandbox-agent 0.4.2, whose SDK and acp-http-client
// drive it), to be mounted at /v1/. It serves:
//
//   - POST /v1/acp/{server}?agent=NAME: the first POST to a server id
//     makes the ACP server (a connection of connect, whose new sessions
//     run agent NAME); every POST carries one JSON-RPC message. A request
//     is answered with 200 and its answer, or, when that takes longer than
//     Options.Hold and an SSE stream is open, 202 (the answer comes
//     on the stream); a notification or a response (to a permission ask)
//     with 202.
//   - GET /v1/acp/{server}: the server's SSE stream, every message the
//     agent side writes (answers too) as "event: message" with an "id:";
//     Last-Event-ID resumes after that id. The newest messages are kept
//     (Options.LogEvents, LogBytes) for streams that come later or
//     come back; a stream that falls behind skips what was dropped, and
//     none ever holds up the agent side.
//   - DELETE /v1/acp/{server}: ends the server (204, known or not).
//   - GET /v1/acp: the servers; GET /v1/health; GET /v1/agents and
//     /v1/agents/{agent}: Options.Agents, in sandbox-agent's shape.
//   - The extension requests _sandboxagent/session/list_models (the
//     session's model choices, from its config options),
//     _sandboxagent/session/detach (the server's stream stops carrying the
//     session's updates) and _sandboxagent/session/terminate
//     (session/close); any other _sandboxagent/ method is answered -32601.
//
// Everything else under /v1 (desktop, processes, fs, config, agent
// installs) answers 404 saying acpbridge does not serve it. Errors are
// application/problem+json, as the daemon's. The handler checks no token,
// Host or Origin: the server in front of it does. Its servers' connections
// live in reg, whose CloseAll ends them.
func NewHandler(reg *core.Registry, connect core.Connector, o Options) http.Handler {
	h := &sandboxHandler{reg: reg, connect: connect, o: o.withDefaults(), servers: map[string]*sbServer{}}
	h.log = h.o.Logger
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/health", only(http.MethodGet, h.health))
	mux.HandleFunc("/v1/agents", only(http.MethodGet, h.agents))
	mux.HandleFunc("/v1/agents/{agent}", only(http.MethodGet, h.agent))
	mux.HandleFunc("/v1/acp", only(http.MethodGet, h.list))
	mux.HandleFunc("/v1/acp/{server}", h.acp)
	mux.HandleFunc("/", notServed)
	h.mux = mux
	return h
}

type sandboxHandler struct {
	reg     *core.Registry
	connect core.Connector
	o       Options
	log     *slog.Logger
	mux     *http.ServeMux

	mu       sync.Mutex           // protects the fields below
	servers  map[string]*sbServer // by server id
	internal uint64               // the last internal request id
}

func (h *sandboxHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	h.mux.ServeHTTP(w, r)
}

// only serves f for method, and 405 for any other.
func only(method string, f http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method {
			methodNotAllowed(w, r, method)
			return
		}
		f(w, r)
	}
}

// acp serves /v1/acp/{server}.
func (h *sandboxHandler) acp(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("server")
	switch r.Method {
	case http.MethodPost:
		h.post(w, r, id)
	case http.MethodGet:
		h.events(w, r, id)
	case http.MethodDelete:
		h.delete(w, r, id)
	default:
		methodNotAllowed(w, r, "GET, POST, DELETE")
	}
}

func (h *sandboxHandler) health(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// list answers GET /v1/acp: the servers, oldest first.
func (h *sandboxHandler) list(w http.ResponseWriter, _ *http.Request) {
	type info struct {
		ServerID    string `json:"serverId"`
		Agent       string `json:"agent"`
		CreatedAtMs int64  `json:"createdAtMs"`
	}
	h.mu.Lock()
	servers := make([]info, 0, len(h.servers))
	for id, s := range h.servers {
		if s.c.Err() == nil {
			servers = append(servers, info{id, s.agent, s.created.UnixMilli()})
		}
	}
	h.mu.Unlock()
	slices.SortFunc(servers, func(a, b info) int {
		return cmp.Or(cmp.Compare(a.CreatedAtMs, b.CreatedAtMs), strings.Compare(a.ServerID, b.ServerID))
	})
	writeJSON(w, http.StatusOK, map[string]any{"servers": servers})
}

// delete ends a server, waiting a little for its connection to be over.
func (h *sandboxHandler) delete(w http.ResponseWriter, r *http.Request, id string) {
	h.mu.Lock()
	s := h.servers[id]
	delete(h.servers, id)
	h.mu.Unlock()
	if s != nil {
		s.c.Close(core.ErrClosed)
		select {
		case <-s.c.Done():
		case <-r.Context().Done():
		case <-time.After(deleteWait):
			h.log.Warn("an ACP server's connection is still ending after DELETE", "server", id, "wait", deleteWait)
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteWait bounds how long DELETE waits for the server's connection to
// end (the SDK gives its DELETE 2 s).
const deleteWait = 1500 * time.Millisecond

// notServed answers every path of sandbox-agent's API that acpbridge has
// not.
func notServed(w http.ResponseWriter, r *http.Request) {
	sandboxProblem(w, http.StatusNotFound, "not_found", "Not Found",
		"acpbridge does not serve "+r.Method+" "+r.URL.Path+
			": of sandbox-agent's API it serves its ACP servers (/v1/acp), /v1/health and /v1/agents")
}

func methodNotAllowed(w http.ResponseWriter, r *http.Request, allow string) {
	w.Header().Set("Allow", allow)
	sandboxProblem(w, http.StatusMethodNotAllowed, "invalid_request", "Method Not Allowed",
		r.Method+" "+r.URL.Path+": allowed "+allow)
}

// sandboxProblem answers an RFC 9457 problem as sandbox-agent writes one,
// its type urn:sandbox-agent:error:KIND.
func sandboxProblem(w http.ResponseWriter, status int, kind, title, detail string) {
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(Problem{Type: "urn:sandbox-agent:error:" + kind, Title: title, Status: status, Detail: detail})
}

// Problem is an RFC 9457 problem as sandbox-agent writes one.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
}

// problemOf is the problem sandbox-agent answers for status: its error
// types token_invalid, permission_denied and not_found.
func problemOf(status int, detail string) Problem {
	kind, title := "not_found", "Not Found"
	switch status {
	case http.StatusUnauthorized:
		kind, title = "token_invalid", "Token Invalid"
	case http.StatusForbidden:
		kind, title = "permission_denied", "Permission Denied"
	case http.StatusTooManyRequests:
		kind, title = "rate_limited", "Too Many Requests"
	}
	return Problem{Type: "urn:sandbox-agent:error:" + kind, Title: title, Status: status, Detail: detail}
}

// Refuse answers a request the server refuses under /v1 (its Host,
// Origin or token) as sandbox-agent does.
func Refuse(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(problemOf(status, detail))
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		sandboxProblem(w, http.StatusInternalServerError, "internal", "Internal Error", "encoding the answer: "+err.Error())
		return
	}
	writeRaw(w, status, b)
}

// writeRaw answers JSON text b.
func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// contentJSON is whether a Content-Type is application/json.
func contentJSON(contentType string) bool {
	t, _, _ := strings.Cut(contentType, ";")
	return strings.EqualFold(strings.TrimSpace(t), "application/json")
}

// accepts reports whether the request's Accept allows media type typ
// (no Accept allows any).
func accepts(r *http.Request, typ string) bool {
	accept := r.Header.Values("Accept")
	if len(accept) == 0 {
		return true
	}
	major, _, _ := strings.Cut(typ, "/")
	for _, v := range accept {
		for _, part := range strings.Split(v, ",") {
			t, _, _ := strings.Cut(part, ";")
			t = strings.ToLower(strings.TrimSpace(t))
			if t == typ || t == "*/*" || t == major+"/*" {
				return true
			}
		}
	}
	return false
}

// lookup is the live server id names, or nil; a server whose connection
// is over is forgotten.
func (h *sandboxHandler) lookup(id string) *sbServer {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.liveLocked(id)
}

func (h *sandboxHandler) liveLocked(id string) *sbServer {
	s := h.servers[id]
	if s != nil && s.c.Err() != nil {
		delete(h.servers, id)
		return nil
	}
	return s
}
