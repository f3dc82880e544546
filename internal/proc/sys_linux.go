package proc

import "syscall"

// ChildAttr is how a child is started (Start, and a daemon's server): in
// its own process group, killed by the kernel if the bridge dies.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
