//go:build unix && !linux

package proc

import "syscall"

// ChildAttr puts the child in its own process group.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
