//go:build unix

package benchkit

import "syscall"

// groupAttr starts an agent in a process group of its own.
func groupAttr() (*syscall.SysProcAttr, error) {
	return &syscall.SysProcAttr{Setpgid: true}, nil
}

// ownGroup is the benchmark's own process group, never to be killed.
func ownGroup() int { return syscall.Getpgrp() }

// killGroup SIGKILLs the process group pgid.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }
