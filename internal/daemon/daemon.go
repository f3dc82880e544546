package daemon

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gofrs/flock"
)

// Daemons: a server that outlives the bridge that started it and is shared
// by every bridge of the user that runs it the same way, as gopls'
// -remote=auto daemon is. A bridge that finds one running only connects
// to it, which saves the server's start-up (about 120 ms for codex
// app-server, seconds for opencode serve) on every bridge but the first.
//
// A daemon lives in a directory of its own under Root, named by its
// Spec's Name and a hash of its Key:
//
//	spec.json  what the keeper runs
//	lease      every bridge using the daemon holds a shared lock on it
//	start      the lock a bridge holds while it starts the daemon
//	keeping    the lock the keeper holds while it lives
//	pid        the server's pid, written by the keeper
//	log        the keeper's and the server's output
//
// and whatever the server makes there itself (a socket). The keeper is
// acpbridge run as
//
//	acpbridge __daemon keep DIR
//
// by `acpbridge __daemon DIR`, which exits at once: so the keeper is in a
// session of its own and nobody's child but init's. It runs the
// server, and stops it (SIGTERM to its group, then SIGKILL) and exits once
// no bridge has held a lease for the Spec's Idle, or when the server
// exits. Leases are flock(2) locks, so a bridge that dies in any way lets
// its lease go with it. The keeper checks for an idle daemon by taking the
// lease lock exclusively, and holds it while it stops the server: a bridge
// that comes then waits, finds no server, and starts a new one.

// Command is the acpbridge subcommand that keeps a daemon.
const Command = "__daemon"

// Spec says what a daemon runs.
type Spec struct {
	Name string   // what it is, for its directory's name: "codex"
	Key  []string // everything that makes two daemons differ (the executable, its arguments, the environment that matters)
	Path string
	Args []string // may name files in Dir (a socket)
	Env  []string
	Idle time.Duration // how long it outlives the last bridge using it
	Root string        // where daemons' directories are; "" means Root(Env)
}

// Dir is the daemon's directory.
func (s Spec) Dir() string {
	root := s.Root
	if root == "" {
		root = Root(s.Env)
	}
	h := sha256.New()
	for _, k := range s.Key {
		fmt.Fprintf(h, "%d:%s\n", len(k), k)
	}
	return filepath.Join(root, s.Name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
}

// RootEnv names the directory of the daemons' directories.
const RootEnv = "ACPBRIDGE_DAEMONS"

// Root is where daemons' directories are by default, by the
// environment env (nil: the bridge's): $ACPBRIDGE_DAEMONS, else
// $XDG_RUNTIME_DIR/acpbridge, else acpbridge-UID in the temporary
// directory. Unix socket paths are short (108 bytes), so it is kept short.
func Root(env []string) string {
	if env == nil {
		env = os.Environ()
	}
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(env[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	if d := get(RootEnv); d != "" {
		return d
	}
	if d := get("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "acpbridge")
	}
	return filepath.Join(os.TempDir(), "acpbridge-"+strconv.Itoa(os.Getuid()))
}

var (
	keeperMu sync.Mutex
	keeper   []string // the command line prefix that keeps a daemon
)

// KeepWith sets the command line prefix that keeps a daemon (acpbridge
// and Command); without it, Attend can only join running daemons.
func KeepWith(command []string) {
	keeperMu.Lock()
	defer keeperMu.Unlock()
	keeper = command
}

// daemonFile is spec.json.
type daemonFile struct {
	Path string
	Args []string
	Env  []string
	Idle time.Duration
}

// Env is the environment the daemon in dir was started with (its
// server's credentials, say), or nil.
func Env(dir string) []string {
	var spec daemonFile
	b, err := os.ReadFile(filepath.Join(dir, "spec.json"))
	if err != nil || json.Unmarshal(b, &spec) != nil {
		return nil
	}
	return spec.Env
}

// Output is the start of the daemon's log, up to 1 MiB: where its
// server says where it listens.
func Output(dir string) []byte {
	f, err := os.Open(filepath.Join(dir, "log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return b
}

// Lease is a bridge's hold on a running daemon: while it is held, the
// daemon stays.
type Lease struct {
	Dir    string
	lock   *flock.Flock
	closed chan struct{}
	once   sync.Once
}

// Pid is the daemon's server's pid, or 0 if it can't be read.
func (l *Lease) Pid() int {
	b, _ := os.ReadFile(filepath.Join(l.Dir, "pid"))
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid
}

// Log returns the end of the daemon's log, for error messages.
func (l *Lease) Log() string { return logTail(l.Dir) }

// Close lets the daemon go.
func (l *Lease) Close() error {
	l.once.Do(func() { close(l.closed) })
	return l.lock.Unlock()
}

// logTail is the end of a daemon's log.
func logTail(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		return ""
	}
	const max = 2000
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return strings.TrimSpace(string(b))
}

// logLines is the end of a daemon's log as the tail of an error message.
func logLines(dir string) string {
	if t := logTail(dir); t != "" {
		return ":\n" + t
	}
	return ""
}
