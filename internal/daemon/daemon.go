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

	"github.com/acpbridge/acpbridge/internal/proc"
)

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
	Max  int           // how many daemons run under Root at most, the oldest idle ones stopped to start this one; 0 means Max(Env)
}

// Dir is the daemon's directory: under Root, named by Name and a hash of
// Key and of this acpbridge's Build.
func (s Spec) Dir() string {
	root := s.root()
	h := sha256.New()
	for _, k := range append([]string{Build()}, s.Key...) {
		fmt.Fprintf(h, "%d:%s\n", len(k), k)
	}
	return filepath.Join(root, s.Name+"-"+hex.EncodeToString(h.Sum(nil))[:16])
}

// RootEnv names the directory of the daemons' directories.
const RootEnv = "ACPBRIDGE_DAEMONS"

// Root is where daemons' directories are by default, by the environment
// env (nil: the bridge's): $ACPBRIDGE_DAEMONS, else
// $XDG_RUNTIME_DIR/acpbridge, else acpbridge-UID in the temporary
// directory. Unix socket paths are short (108 bytes), so it is kept short.
func Root(env []string) string {
	if env == nil {
		env = os.Environ()
	}
	if d := lookup(env, RootEnv); d != "" {
		return d
	}
	if d := lookup(env, "XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "acpbridge")
	}
	return filepath.Join(os.TempDir(), "acpbridge-"+strconv.Itoa(os.Getuid()))
}

// MaxEnv sets how many daemons may run under one Root at once (Max).
const MaxEnv = "ACPBRIDGE_MAX_DAEMONS"

// DefaultMax is how many daemons may run under one Root at once unless
// $ACPBRIDGE_MAX_DAEMONS says otherwise: two configurations' worth of
// all three agents' (a spares server for Claude, a Codex and an OpenCode
// server: say the editor's environment and a terminal's), about 1.8 GB
// and, idle, a few percent of a core in all. Each HOME, settings or
// build of acpbridge has daemons of its own, each kept the --shared time
// after its last bridge: a day of test runs, each with a fresh HOME, would
// otherwise leave one per run.
const DefaultMax = 6

// Max is how many daemons may run under one Root at once, by the
// environment env (nil: the bridge's): $ACPBRIDGE_MAX_DAEMONS, else
// DefaultMax; 0 for no bound ($ACPBRIDGE_MAX_DAEMONS=0 or off). Starting
// one more stops the daemons idle the longest; never one a bridge uses.
func Max(env []string) int {
	if env == nil {
		env = os.Environ()
	}
	v := strings.TrimSpace(lookup(env, MaxEnv))
	if v == "" {
		return DefaultMax
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return n
	}
	if strings.EqualFold(v, "off") {
		return 0
	}
	return DefaultMax
}

// max is how many daemons may run under s's Root at once: s.Max, else
// Max(s.Env); 0 for no bound.
func (s Spec) max() int {
	if s.Max != 0 {
		return max(s.Max, 0)
	}
	return Max(s.Env)
}

// root is s.Root, else Root(s.Env).
func (s Spec) root() string {
	if s.Root != "" {
		return s.Root
	}
	return Root(s.Env)
}

// lookup is the value of k in env, the last one if set twice.
func lookup(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
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

// keeperCommand is the prefix KeepWith set, or nil.
func keeperCommand() []string {
	keeperMu.Lock()
	defer keeperMu.Unlock()
	return keeper
}

// daemonFile is spec.json.
type daemonFile struct {
	Name  string
	Path  string
	Args  []string
	Env   []string
	Idle  time.Duration
	Build string // the Build of the acpbridge that started it
}

// readSpec reads the spec.json of the daemon in dir.
func readSpec(dir string) (daemonFile, error) {
	var spec daemonFile
	b, err := os.ReadFile(filepath.Join(dir, "spec.json"))
	if err != nil {
		return spec, err
	}
	return spec, json.Unmarshal(b, &spec)
}

// Env is the environment the daemon in dir was started with (its
// server's credentials, say), or nil.
func Env(dir string) []string {
	spec, err := readSpec(dir)
	if err != nil {
		return nil
	}
	return spec.Env
}

// Output is the start of the daemon's log, up to 1 MiB: where its server
// says where it listens.
func Output(dir string) []byte {
	f, err := os.Open(filepath.Join(dir, "log"))
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, 1<<20))
	return b
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

// Running is a daemon that runs, as List finds it.
type Running struct {
	Dir            string
	Name           string        // codex, opencode, claude-spares …
	Keeper, Server int           // their pids
	Idle           time.Duration // how long it outlives the last bridge (Spec.Idle)
	IdleSince      time.Time     // since when no bridge has used it; zero while one does
	Started        time.Time     // when its keeper started, where known
	CPU            time.Duration // the CPU time the keeper and every process under it have used (Linux)
	CPUKnown       bool          // CPU could be read (0 s is a time too: a quiet keeper's first seconds)
	IdleCPU        time.Duration // what CPU was at IdleSince
	Bridges        []int         // the pids of the bridges that hold a lease on it, where known (Linux)
	Memory         proc.Memory   // what the keeper, its server and every process under it hold (Linux)
	OtherBuild     bool          // started by another build of acpbridge: it idles out
	Answers        bool          // its keeper holds it (false: it is stopping or hung)
}

// IdleShare is the share of one core the daemon has used since it turned
// idle, at now (0.01: 1 %); 0 while a bridge uses it, or where the CPU
// time is not known.
func (r Running) IdleShare(now time.Time) float64 {
	return share(r.CPU-r.IdleCPU, now.Sub(r.IdleSince), !r.IdleSince.IsZero() && r.CPUKnown)
}

// LifeShare is the share of one core the daemon has used since its
// keeper started, at now, turns included: what it costs on the whole.
func (r Running) LifeShare(now time.Time) float64 {
	return share(r.CPU, now.Sub(r.Started), !r.Started.IsZero() && r.CPUKnown)
}

// share is cpu over wall, 0 unless known and both are positive (a spare
// that went since lowers the tree's CPU time).
func share(cpu, wall time.Duration, known bool) float64 {
	if !known || cpu <= 0 || wall <= 0 {
		return 0
	}
	return cpu.Seconds() / wall.Seconds()
}
