//go:build unix && !linux

package proc

import "syscall"

// ChildAttr is how a child is started (Start, and a daemon's server): in
// its own process group.
func ChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
