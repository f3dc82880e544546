package amp

import (
	"bufio"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/internal/agentkit"
)

// How Amp's permissions reach the editor.
//
// In stream-json mode amp has no permission protocol: a tool its rules
// say to "ask" about fails the run. Its one hook is a "delegate" rule,
// which runs a program with the tool's input on stdin (and AGENT_TOOL_NAME,
// AGENT_TOOL_USE_ID, AMP_THREAD_ID in its environment) and reads the
// answer from its exit status: 0 allow, 1 ask (which fails), anything else
// reject with stderr as the reason. Amp kills a delegate after 10 s.
//
// So in the default mode each turn runs amp with a settings file whose
// rules are the user's and Amp's built-in ones, in their order, with every
// "ask" turned into a delegate to acpbridge itself (acpbridge
// amp-delegate). The delegate connects to the bridge over a Unix socket in
// a directory only the user can enter, shows the session's secret, and
// waits for the bridge's answer, which is the editor's
// session/request_permission answer, or a rejection when the editor has
// not answered within AskLimit.

// DelegateCommand is the acpbridge subcommand amp runs as its permission
// delegate.
const DelegateCommand = "amp-delegate"

// The delegate's environment, set by the script amp runs.
const (
	envSocket = "ACPBRIDGE_AMP_SOCKET"
	envToken  = "ACPBRIDGE_AMP_TOKEN"
)

// AskLimit is how long the editor has to answer a permission ask: Amp
// gives a delegate 10 s, and the answer must get back to it before that.
var AskLimit = 8 * time.Second

// delegateLimit is how long the delegate waits for the bridge.
const delegateLimit = 9500 * time.Millisecond

// rule is one of Amp's permission rules, as settings and `amp permissions
// list --json` spell them.
type rule struct {
	Tool    string          `json:"tool"`
	Matches json.RawMessage `json:"matches,omitempty"`
	Action  string          `json:"action"`
	Context string          `json:"context,omitempty"`
	To      string          `json:"to,omitempty"`
	Message string          `json:"message,omitempty"`
}

// builtinRules are Amp's built-in rules (about 200, first match wins; plain
// Bash and shell commands are "ask" unless a rule allows them), read once
// from `amp permissions list --builtin --json` (about a second; it needs
// no key and no network).
func (b *Backend) builtinRules(ctx context.Context, path string) ([]rule, error) {
	return b.builtin.Get(func() ([]rule, error) {
		out, err := b.output(ctx, path, 20*time.Second, "permissions", "list", "--builtin", "--json")
		if err != nil {
			return nil, fmt.Errorf("reading Amp's built-in permission rules: %w", err)
		}
		var rules []rule
		if err := json.Unmarshal(out, &rules); err != nil || len(rules) == 0 {
			return nil, fmt.Errorf("reading Amp's built-in permission rules: amp printed %q", agentkit.Truncate(out, 200))
		}
		return rules, nil
	})
}

// output runs an amp command to its end, as every amp the bridge starts:
// supervised, stdin closed, within limit.
func (b *Backend) output(ctx context.Context, path string, limit time.Duration, args ...string) ([]byte, error) {
	p, err := proc.Start(proc.Spec{Path: path, Args: args, Env: b.env()})
	if err != nil {
		return nil, err
	}
	p.Stdin.Close()
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	stop := context.AfterFunc(ctx, p.Terminate)
	defer stop()
	out, _ := io.ReadAll(p.Stdout)
	if err := p.Err(); err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("amp %s took more than %v", strings.Join(args, " "), limit)
	}
	return out, nil
}

// fallbackRules stand in for the built-in rules if amp can't list them:
// every command is asked about.
var fallbackRules = []rule{{Tool: "Bash", Action: "ask"}, {Tool: "shell_command", Action: "ask"}, {Tool: "async_shell_command", Action: "ask"}}

// settingsFor makes the settings file of a session in the default mode:
// the user's settings, with permissions that delegate every ask to script.
func settingsFor(user map[string]json.RawMessage, builtin []rule, script string) ([]byte, error) {
	var own []rule
	if raw, ok := user["amp.permissions"]; ok {
		if err := json.Unmarshal(raw, &own); err != nil {
			return nil, fmt.Errorf("reading amp.permissions in your Amp settings: %w", err)
		}
	}
	rules := make([]rule, 0, len(own)+len(builtin))
	for _, r := range append(own, builtin...) {
		if r.Action == "ask" {
			r.Action, r.To = "delegate", script
		}
		rules = append(rules, r)
	}
	settings := make(map[string]any, len(user)+1)
	for k, v := range user {
		settings[k] = v
	}
	settings["amp.permissions"] = rules
	return json.MarshalIndent(settings, "", "  ")
}

// userSettings reads the user's Amp settings file ($AMP_SETTINGS_FILE, else
// $XDG_CONFIG_HOME/amp/settings.json), which a --settings-file replaces:
// the bridge's file carries them over. A missing file is no settings.
func userSettings(env []string) (map[string]json.RawMessage, error) {
	path := agentkit.EnvValue(env, "AMP_SETTINGS_FILE")
	if path == "" {
		cfg := agentkit.EnvValue(env, "XDG_CONFIG_HOME")
		if cfg == "" || !filepath.IsAbs(cfg) {
			cfg = filepath.Join(agentkit.HomeOf(env), ".config")
		}
		path = filepath.Join(cfg, "amp", "settings.json")
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading your Amp settings: %w", err)
	}
	var s map[string]json.RawMessage
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("reading your Amp settings %s (the bridge needs plain JSON to carry them over): %w", path, err)
	}
	return s, nil
}

// hooks is the bridge's end of the delegates: a Unix socket in a private
// directory, and the sessions that can be asked, each by its secret.
type hooks struct {
	dir string
	ln  net.Listener
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session // by token id
	closed   bool
}

// errNoHooks: the delegate is a shell script that reaches the bridge over
// a Unix socket, neither of which this build sets up on Windows.
var errNoHooks = errors.New("Amp's permission asks reach the editor through a hook that needs a Unix system, so they are off on Windows: choose the Bypass mode (every tool runs without asking) to use Amp here")

// hooks starts the listener on first use.
func (b *Backend) hooksUp() (*hooks, error) {
	if runtime.GOOS == "windows" {
		return nil, errNoHooks
	}
	return b.hooks.Get(func() (*hooks, error) {
		dir, err := privateDir()
		if err != nil {
			return nil, err
		}
		ln, err := net.Listen("unix", filepath.Join(dir, "hooks.sock"))
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("listening for Amp's permission hooks: %w", err)
		}
		h := &hooks{dir: dir, ln: ln, log: b.Log(), sessions: map[string]*session{}}
		go h.serve()
		return h, nil
	})
}

// privateDir makes a directory only this user can enter, with a path short
// enough for a socket.
func privateDir() (string, error) {
	base := os.TempDir()
	if len(base) > 60 {
		base = "/tmp"
	}
	dir, err := os.MkdirTemp(base, "acpbridge-amp-")
	if err != nil {
		return "", fmt.Errorf("making a directory for Amp's permission hooks: %w", err)
	}
	return dir, os.Chmod(dir, 0o700)
}

func (h *hooks) close() error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	err := h.ln.Close()
	os.RemoveAll(h.dir)
	return err
}

// token is a session's secret: an id to find it by and a secret to prove
// the asker is the session's delegate.
type token struct{ id, secret string }

func (t token) String() string { return t.id + "." + t.secret }

func newToken() token {
	b := make([]byte, 24)
	rand.Read(b)
	return token{id: hex.EncodeToString(b[:8]), secret: hex.EncodeToString(b[8:])}
}

// add registers a session; its hook files go in a directory of its own.
func (h *hooks) add(s *session, t token) (dir string, err error) {
	dir = filepath.Join(h.dir, t.id)
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the session's permission hook: %w", err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.sessions[t.id] = s
	return dir, nil
}

func (h *hooks) remove(t token) {
	h.mu.Lock()
	delete(h.sessions, t.id)
	h.mu.Unlock()
	os.RemoveAll(filepath.Join(h.dir, t.id))
}

// writeScript writes the program a delegate rule runs: acpbridge's
// delegate, told where the bridge is and the session's token. Amp runs it
// with no arguments.
func writeScript(dir, socket string, t token, command []string) (string, error) {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# acpbridge's permission hook for Amp (delegate rule).\n")
	fmt.Fprintf(&b, "%s=%s %s=%s exec", envSocket, shellQuote(socket), envToken, shellQuote(t.String()))
	for _, arg := range command {
		b.WriteString(" " + shellQuote(arg))
	}
	b.WriteString("\n")
	path := filepath.Join(dir, "delegate")
	if err := os.WriteFile(path, []byte(b.String()), 0o700); err != nil {
		return "", fmt.Errorf("writing the permission hook: %w", err)
	}
	return path, nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// hookRequest is what a delegate sends: its token and Amp's question.
type hookRequest struct {
	Token     string          `json:"token"`
	Thread    string          `json:"thread"`
	Tool      string          `json:"tool"`
	ToolUseID string          `json:"toolUseId"`
	Input     json.RawMessage `json:"input"`
}

// hookAnswer is the bridge's answer to a delegate.
type hookAnswer struct {
	Allow   bool   `json:"allow"`
	Message string `json:"message,omitempty"`
}

func (h *hooks) serve() {
	for {
		conn, err := h.ln.Accept()
		if err != nil {
			return
		}
		go h.handle(conn)
	}
}

func (h *hooks) handle(conn net.Conn) {
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(delegateLimit))
	var req hookRequest
	if err := json.NewDecoder(io.LimitReader(conn, 4<<20)).Decode(&req); err != nil {
		h.log.Warn("amp permission hook: unreadable request", "err", err)
		return
	}
	s := h.session(req.Token)
	if s == nil {
		h.log.Warn("amp permission hook: unknown token; refused")
		json.NewEncoder(conn).Encode(hookAnswer{Message: "acpbridge does not know this permission hook"})
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), AskLimit)
	defer cancel()
	json.NewEncoder(conn).Encode(s.decide(ctx, req))
}

// session finds the session a token belongs to, checking its secret.
func (h *hooks) session(tok string) *session {
	id, secret, _ := strings.Cut(tok, ".")
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s == nil || subtle.ConstantTimeCompare([]byte(secret), []byte(s.token.secret)) != 1 {
		return nil
	}
	return s
}

// RunDelegate is `acpbridge amp-delegate`, the program Amp's delegate rules
// run: it puts the tool call on stdin to the bridge that started amp and
// exits 0 if the editor allowed it, or 2 with the reason on stderr. It
// returns the exit status.
func RunDelegate(stdin io.Reader, stderr io.Writer) int {
	ans, err := delegate(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "acpbridge could not ask the editor about this tool call, so it was not run: %v\n", err)
		return 2
	}
	if !ans.Allow {
		fmt.Fprintln(stderr, cmp.Or(ans.Message, "The user rejected this tool call."))
		return 2
	}
	return 0
}

func delegate(stdin io.Reader) (hookAnswer, error) {
	socket, tok := os.Getenv(envSocket), os.Getenv(envToken)
	if socket == "" || tok == "" {
		return hookAnswer{}, fmt.Errorf("%s and %s are not set: this command is run by Amp, as acpbridge's permission hook", envSocket, envToken)
	}
	input, err := io.ReadAll(io.LimitReader(stdin, 4<<20))
	if err != nil {
		return hookAnswer{}, fmt.Errorf("reading the tool input: %w", err)
	}
	if !json.Valid(input) {
		input = []byte("{}")
	}
	conn, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return hookAnswer{}, fmt.Errorf("reaching acpbridge: %w", err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(delegateLimit))
	req := hookRequest{Token: tok, Thread: os.Getenv("AMP_THREAD_ID"), Tool: os.Getenv("AGENT_TOOL_NAME"),
		ToolUseID: os.Getenv("AGENT_TOOL_USE_ID"), Input: input}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return hookAnswer{}, fmt.Errorf("asking acpbridge: %w", err)
	}
	var ans hookAnswer
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return hookAnswer{}, fmt.Errorf("waiting for acpbridge's answer: %w", err)
	}
	if err := json.Unmarshal(line, &ans); err != nil {
		return hookAnswer{}, fmt.Errorf("reading acpbridge's answer: %w", err)
	}
	return ans, nil
}
