//go:build !unix

package daemon

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
func Attend(context.Context, Spec, func(string) error) (*Lease, error) {
	return nil, errNoDaemons
}

// Keep is not available here.
func Keep([]string) int {
	fmt.Fprintln(os.Stderr, "acpbridge:", errNoDaemons)
	return 2
}

// StopAll does nothing here.
func StopAll(string) {}

// Watch: there are no daemons here (Attend returns no lease).
func (l *Lease) Watch() <-chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}

// List finds no daemons here.
func List(string) []Running { return nil }

// Stop: there are no daemons here.
func (Running) Stop() error { return errNoDaemons }
