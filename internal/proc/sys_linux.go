package proc

import "syscall"

// ChildAttr puts the child in its own process group and has the kernel
// kill it if the bridge dies.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
