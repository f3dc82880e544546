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

// contain does nothing here: the child leads its own group (ChildAttr).
func contain(int) {}

// release does nothing here (see contain).
func release(int) {}
