package testproc

import (
	"errors"
	"syscall"
)

// GroupAttr is nil: Windows has no process group to kill whole.
func GroupAttr() *syscall.SysProcAttr { return nil }

// KillGroup kills the process pid alone: what it started lives on.
func KillGroup(pid int) error { return Kill(pid) }

// stillActive is the exit code of a process that has not exited
// (STILL_ACTIVE).
const stillActive = 259

// Alive is whether the process pid is there and has not exited.
func Alive(pid int) bool {
	h, err := syscall.OpenProcess(syscall.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return errors.Is(err, syscall.ERROR_ACCESS_DENIED) // there, not ours
	}
	defer syscall.CloseHandle(h)
	var code uint32
	return syscall.GetExitCodeProcess(h, &code) == nil && code == stillActive
}
