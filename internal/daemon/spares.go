package daemon

import (
	"errors"
	"path/filepath"

	"github.com/acpbridge/acpbridge/internal/proc"
)

// SparesCommand is the acpbridge subcommand that serves spares (see the
// package doc).
const SparesCommand = "__spares"

// maxSpares is how many kinds of spare the server keeps at once; the
// oldest goes first.
const maxSpares = 8

// SparesOf is the daemon that keeps spares for the bridges that would
// share the daemon of spec (its Name, Key, Env and Idle; its Path and Args
// are not run): acpbridge itself, the keeper's program. Each spare lives
// up to Idle too.
func SparesOf(spec Spec) (Spec, error) {
	prefix := keeperCommand()
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
	Tag  string   `json:"tag,omitempty"`
}

// spareAnswer is the server's answer, and later the lent process's exit.
type spareAnswer struct {
	Pid   int     `json:"pid,omitempty"` // with its stdin, stdout and stderr
	None  bool    `json:"none,omitempty"`
	Exit  *string `json:"exit,omitempty"`
	Error string  `json:"error,omitempty"`
}

// spec is the process ask is for, started to be lent.
func (a spareAsk) spec() proc.Spec {
	return proc.Spec{Path: a.Path, Args: a.Args, Dir: a.Dir, Env: a.Env, Tag: a.Tag, Lend: true}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
