package daemon

import (
	"errors"
	"path/filepath"

	"github.com/acpbridge/acpbridge/internal/proc"
)

// Spares: a daemon (see Daemon) that keeps agent processes started ahead
// of need, for any of the user's bridges to take, so that a first turn
// does not wait for an agent's start-up (most of a second for Claude
// Code) even when the bridge itself has only just started. Its server is
// acpbridge itself, run by the keeper as
//
//	acpbridge __spares SOCK TTL
//
// It listens on the Unix socket SOCK in the daemon's directory. A bridge
// connects and sends one request, a JSON line:
//
//	{"op":"warm","path":…,"args":[…],"dir":…,"env":[…]}  have one started so
//	{"op":"take",…}                                      hand it over
//
// A take is answered with {"pid":N} and the process's stdin, stdout and
// stderr themselves (SCM_RIGHTS), so the bridge talks to the process
// directly from then on; the connection stays open until the process
// exits, when the server writes {"exit":"STATUS"} ("" for status 0) and
// closes it. A take with no spare to give is answered {"none":true}. Either
// way the server starts another for the next take, one per kind (path,
// arguments, directory): what it was asked for once is likely asked for
// again. A spare nobody took within TTL is stopped, and so are all at the
// server's end. The processes stay the server's children: if the server is
// killed, those it lent go too (their parent-death signal), as untaken
// ones do; the keeper stops it only once no bridge holds a lease.

// SparesCommand is the acpbridge subcommand that serves spares.
const SparesCommand = "__spares"

// maxSpares is how many kinds of spare the server keeps at once; the
// oldest goes first.
const maxSpares = 8

// SparesOf is the daemon that keeps spares for the bridges that would
// share the daemon of spec (its Name, Key, Env and Idle; its Path and Args
// are not run): acpbridge itself, the keeper's program. Each spare lives
// up to Idle too.
func SparesOf(spec Spec) (Spec, error) {
	keeperMu.Lock()
	prefix := keeper
	keeperMu.Unlock()
	if len(prefix) == 0 {
		return Spec{}, errors.New("this program can't keep spares")
	}
	spec.Name += "-spares"
	spec.Key = append([]string{prefix[0]}, spec.Key...)
	spec.Path = prefix[0]
	spec.Args = []string{SparesCommand, SparesSocket(spec.Dir()), spec.Idle.String()}
	return spec, nil
}

// SparesSocket is where the spares server of the daemon in dir listens.
func SparesSocket(dir string) string { return filepath.Join(dir, "sock") }

// spareAsk is a bridge's request.
type spareAsk struct {
	Op   string   `json:"op"` // "warm" or "take"
	Path string   `json:"path"`
	Args []string `json:"args"`
	Dir  string   `json:"dir"`
	Env  []string `json:"env"`
}

// spareAnswer is the server's answer, and later the lent process's exit.
type spareAnswer struct {
	Pid   int     `json:"pid,omitempty"` // with its stdin, stdout and stderr
	None  bool    `json:"none,omitempty"`
	Exit  *string `json:"exit,omitempty"`
	Error string  `json:"error,omitempty"`
}

func (a spareAsk) spec() proc.Spec {
	return proc.Spec{Path: a.Path, Args: a.Args, Dir: a.Dir, Env: a.Env, Lend: true}
}
