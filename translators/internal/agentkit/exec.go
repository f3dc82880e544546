package agentkit

import (
	"fmt"
	"os/exec"

	"github.com/acpbridge/acpbridge/bridge"
	"github.com/acpbridge/acpbridge/translators/proc"
)

// Executable is where an agent's CLI is: Path if set, else the
// ACPBRIDGE_<AGENT> variable (Env), else Name on PATH.
type Executable struct {
	Name string // "claude", "codex", ...
	Env  string // "ACPBRIDGE_CLAUDE", ...
	Path string // set by the backend's options; wins over the rest
}

// Find returns the executable's path, or an error that wraps
// bridge.ErrAgentUnavailable and says how to make it available.
func (e Executable) Find() (string, error) {
	var p string
	var err error
	if e.Path != "" {
		p, err = exec.LookPath(e.Path)
	} else {
		p, err = proc.LookPath(e.Name, e.Env)
	}
	if err != nil {
		return "", fmt.Errorf("%w: %v", bridge.ErrAgentUnavailable, err)
	}
	return p, nil
}
