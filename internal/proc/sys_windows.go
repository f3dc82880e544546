package proc

import (
	"os"
	"syscall"
)

// ChildAttr is how a child is started: Windows has no process groups to
// signal; the child is killed alone.
func ChildAttr() *syscall.SysProcAttr { return nil }

// SignalGroup kills the child pid for SIGKILL; Windows has no SIGTERM to
// send, so the shutdown ladder goes on to the kill.
func SignalGroup(pid int, sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return nil
	}
	return p.Kill()
}
