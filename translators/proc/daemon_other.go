//go:build !unix

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// errNoDaemons: daemons need a Unix system (flock leases, a session of the
// keeper's own, Unix sockets).
var errNoDaemons = errors.New("shared servers need a Unix system")

// Attend is not available here.
func Attend(context.Context, DaemonSpec, func(string) error) (*Lease, error) {
	return nil, errNoDaemons
}

// Daemon is not available here.
func Daemon([]string) int {
	fmt.Fprintln(os.Stderr, "acpbridge:", errNoDaemons)
	return 2
}

// StopDaemons does nothing here.
func StopDaemons(string) {}

// Watch: there are no daemons here (Attend returns no lease).
func (l *Lease) Watch() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}
