//go:build !linux

package proc

import (
	"fmt"
	"os"
	"syscall"
)

// SuperviseCommand is the acpbridge subcommand that supervises an agent;
// supervision is Linux-only (it needs a child subreaper): on macOS an
// agent's own process group is what the bridge stops, and a tool process
// that left it may outlive a bridge killed with SIGKILL; on Windows the
// agent's Job Object (contain) ends with the bridge.
const SuperviseCommand = "__supervise"

// SuperviseWith does nothing here: see SuperviseCommand.
func SuperviseWith([]string) {}

func supervised(path string, args []string) (string, []string, bool) { return path, args, false }

func superviseAttr(*syscall.SysProcAttr) {}

// Supervise is not available here.
func Supervise([]string) int {
	fmt.Fprintln(os.Stderr, "acpbridge: supervision needs Linux")
	return 2
}
