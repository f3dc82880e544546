package serve

import (
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/serve/page"
	"github.com/acpbridge/acpbridge/serve/sandbox"
)

// guard checks every request before a route sees it, in this order: its
// Host (against DNS rebinding), its Origin (browsers; allowed origins get
// CORS headers, and their preflights are answered here, before auth), then
// its bearer token, which the chat page's files (page.Request) need not
// carry.
type guard struct {
	hosts    map[string]bool // Host values allowed exactly, lowercase host:port
	anyPort  map[string]bool // host names allowed on any port, lowercase, IPv6 unbracketed
	origins  map[string]bool // --allow-origin, as originKey has them
	tokenSum [32]byte        // SHA-256 of the token, compared in constant time
	noToken  bool
	log      *slog.Logger
	next     http.Handler
	// bodyTimeout bounds the reading of a request's body (boundBody);
	// DefaultBodyTimeout, shorter in tests.
	bodyTimeout time.Duration
	guesses     *throttle // wrong tokens, per client
}

// exposedHeaders are the response headers a browser's script may read:
// the /acp edge's connection and session ids, and why a request was 401.
const exposedHeaders = "Acp-Connection-Id, Acp-Session-Id, WWW-Authenticate"

// allowedHeaders are the request headers a preflight allows when it names
// none: those the ACP SDK and sandbox-agent's send.
const allowedHeaders = "Authorization, Content-Type, Accept, Acp-Connection-Id, Acp-Session-Id, Last-Event-ID"

// newGuard checks o's --allow-host and --allow-origin values.
func newGuard(o Options, token string, log *slog.Logger) (*guard, error) {
	g := &guard{hosts: map[string]bool{}, anyPort: map[string]bool{}, origins: map[string]bool{},
		noToken: o.NoToken, log: log, tokenSum: sha256.Sum256([]byte(token)), bodyTimeout: DefaultBodyTimeout, guesses: newThrottle()}
	for _, h := range o.AllowHosts {
		if err := g.allowHost(h); err != nil {
			return nil, err
		}
	}
	for _, origin := range o.AllowOrigins {
		key, err := originKey(origin)
		if err != nil {
			return nil, fmt.Errorf("--allow-origin %q: want SCHEME://HOST[:PORT], e.g. https://app.example.com: %v", origin, err)
		}
		g.origins[key] = true
	}
	return g, nil
}

// allowHost adds an --allow-host value: "name:port" exactly, else a name
// on any port.
func (g *guard) allowHost(h string) error {
	h = strings.ToLower(strings.TrimSpace(h))
	if h == "" || strings.ContainsAny(h, "/ @?#") {
		return fmt.Errorf("--allow-host %q: want a host name, HOST:PORT or [IPv6]", h)
	}
	if name, port, err := net.SplitHostPort(h); err == nil && name != "" && port != "" {
		g.hosts[net.JoinHostPort(name, port)] = true
		return nil
	}
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		g.anyPort[h[1:len(h)-1]] = true
		return nil
	}
	if strings.Contains(h, ":") {
		return fmt.Errorf("--allow-host %q: write an IPv6 address in brackets, [::1] or [::1]:2468", h)
	}
	g.anyPort[h] = true
	return nil
}

// allowListenHosts allows the Host values that name the address the
// server listens on: the listen host as given, the address bound, and the
// loopback names, on its port (bare too on port 80).
func (g *guard) allowListenHosts(given string, addr *net.TCPAddr) {
	port := fmt.Sprint(addr.Port)
	for _, name := range []string{given, addr.IP.String(), "localhost", "127.0.0.1", "::1"} {
		if name == "" {
			continue
		}
		g.hosts[net.JoinHostPort(strings.ToLower(name), port)] = true
		if port == "80" {
			g.hosts[bracketed(strings.ToLower(name))] = true
		}
	}
}

func bracketed(host string) string {
	if strings.Contains(host, ":") {
		return "[" + host + "]"
	}
	return host
}

// ServeHTTP checks r and passes it on, or refuses it. A refused request's
// body is not read: its connection is closed once it is answered.
func (g *guard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Origin")
	r = boundBody(w, r, g.bodyTimeout)
	if !g.hostAllowed(r.Host) {
		g.refuse(w, r, http.StatusForbidden, fmt.Sprintf("Host %q is not this server's name (acpbridge serve --allow-host adds one)", r.Host))
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if !g.originAllowed(origin, r.Host) {
			g.refuse(w, r, http.StatusForbidden, fmt.Sprintf("Origin %q may not call this server (acpbridge serve --allow-origin adds one)", origin))
			return
		}
		allowCORS(w.Header(), origin)
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			preflight(w, r)
			return
		}
	}
	if page.Request(r) { // the page's files hold no secret, and a browser's navigation no token
		closeUnread(w, r) // nor a body: a GET with one is not read
		g.next.ServeHTTP(w, r)
		return
	}
	switch status := g.authorize(w, r); status {
	case 0:
	case http.StatusTooManyRequests:
		g.refuse(w, r, status, "too many wrong tokens from this address; try again in a moment")
		return
	default:
		g.refuse(w, r, status, "this server wants Authorization: Bearer TOKEN (the token acpbridge serve printed, or $ACPBRIDGE_TOKEN)")
		return
	}
	g.next.ServeHTTP(w, r)
}

// hostAllowed is whether host (a request's Host) names this server.
func (g *guard) hostAllowed(host string) bool {
	host = strings.ToLower(host)
	if g.hosts[host] {
		return true
	}
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	return name != "" && g.anyPort[name]
}

// originAllowed is whether a browser page of origin may call the server:
// a page of its own (the origin names the request's Host, which
// hostAllowed passed) or one of --allow-origin.
func (g *guard) originAllowed(origin, host string) bool {
	key, err := originKey(origin)
	if err != nil {
		return false
	}
	own := key == "http://"+strings.ToLower(host) || key == "https://"+strings.ToLower(host)
	return own || g.origins[key]
}

// originKey is an origin (scheme://host[:port], no path) in lowercase.
func originKey(origin string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(origin, "/"))
	if err != nil {
		return "", err
	}
	if u.Scheme == "" || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("not an origin")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// allowCORS lets the page of origin (an allowed one) read the response.
// Credentials are allowed because the ACP SDK's fetches include cookies
// by default; the server sets none, so they carry no authority here.
func allowCORS(h http.Header, origin string) {
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Set("Access-Control-Expose-Headers", exposedHeaders)
}

// preflight answers a CORS preflight of an allowed origin.
func preflight(w http.ResponseWriter, r *http.Request) {
	closeUnread(w, r)
	h := w.Header()
	h.Set("Access-Control-Allow-Methods", "GET, POST, DELETE, OPTIONS")
	h.Set("Access-Control-Allow-Headers", allowedHeaders)
	if asked := r.Header.Get("Access-Control-Request-Headers"); headerList(asked) {
		h.Set("Access-Control-Allow-Headers", asked) // the page's own headers: its token is still checked
	}
	h.Set("Access-Control-Max-Age", "600")
	w.WriteHeader(http.StatusNoContent)
}

// headerList is whether s is a comma-separated list of header names.
func headerList(s string) bool {
	if s == "" || len(s) > 1024 {
		return false
	}
	for _, c := range s {
		ok := c == ',' || c == ' ' || c == '-' || c == '_' || c == '.' ||
			'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// authorize checks r's bearer token; it returns 0 if r may go on, else
// 401, with WWW-Authenticate set, or 429 for a client that has sent too
// many wrong tokens of late (see throttle), whose token is not checked.
func (g *guard) authorize(w http.ResponseWriter, r *http.Request) int {
	if g.noToken {
		return 0
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		w.Header().Set("WWW-Authenticate", `Bearer realm="acpbridge"`)
		return http.StatusUnauthorized
	}
	if !g.guesses.take(r.RemoteAddr, time.Now()) {
		w.Header().Set("Retry-After", fmt.Sprint(int(max(g.guesses.every.Seconds(), 1))))
		return http.StatusTooManyRequests
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	if subtle.ConstantTimeCompare(sum[:], g.tokenSum[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="acpbridge", error="invalid_token"`)
		return http.StatusUnauthorized
	}
	g.guesses.refund(r.RemoteAddr)
	return 0
}

// refuse logs a refused request and answers it.
func (g *guard) refuse(w http.ResponseWriter, r *http.Request, status int, detail string) {
	g.log.Debug("refused", "status", status, "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "why", detail)
	refuse(w, r, status, detail)
}

// refuse answers a request the server won't serve: under /v1/ as
// sandbox-agent does (application/problem+json), elsewhere in text. Its
// body, if it has one and it was not read, is not: the connection is
// closed.
func refuse(w http.ResponseWriter, r *http.Request, status int, detail string) {
	closeUnread(w, r)
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	if r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") {
		sandbox.Refuse(w, status, detail)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	fmt.Fprintf(w, "%d %s: %s\n", status, http.StatusText(status), detail)
}
