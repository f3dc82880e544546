//go:build unix

package proc

import (
	"errors"
	"syscall"
)

// SignalGroup signals the whole process group of the child pid, which
// leads it (ChildAttr); a group that is gone is no error.
func SignalGroup(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
