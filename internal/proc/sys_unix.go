//go:build unix

package proc

import (
	"errors"
	"syscall"
)

// SignalGroup signals the child's whole process group.
func SignalGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
