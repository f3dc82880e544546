// Package testproc stops the processes a test starts, the same way on
// every OS the tests build for: a process group of their own where there
// are groups (Unix), killed whole; and whether a process is still there.
// On Windows, which has no process groups to signal, a "group" is its
// leader alone.
package testproc

import (
	"errors"
	"os"
)

// Kill kills the process pid (SIGKILL on Unix); one that is gone is no
// error.
func Kill(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil // Windows: no such process
	}
	defer p.Release()
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
