package benchkit

import (
	"errors"
	"syscall"
)

// errWindows is why no agent starts on Windows.
var errWindows = errors.New("benchkit: not supported on Windows: it follows an agent's process tree through /proc and kills its process groups")

// groupAttr refuses: the benchmarks run on Linux.
func groupAttr() (*syscall.SysProcAttr, error) { return nil, errWindows }

// ownGroup is no group: Windows has none.
func ownGroup() int { return -1 }

// killGroup does nothing: no agent starts here (groupAttr).
func killGroup(int) {}
