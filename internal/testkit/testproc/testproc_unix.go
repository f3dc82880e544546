//go:build unix

package testproc

import (
	"errors"
	"syscall"
)

// GroupAttr starts a process in a process group of its own, which it
// leads, for KillGroup.
func GroupAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }

// KillGroup SIGKILLs the process group that pid leads (GroupAttr); a
// group that is gone is no error.
func KillGroup(pid int) error {
	if err := syscall.Kill(-pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// Alive is whether the process pid is there (a zombie still is).
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
