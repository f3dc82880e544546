//go:build !unix

package daemon

import (
	"context"
	"fmt"
	"os"

	"github.com/acpbridge/acpbridge/internal/proc"
)

// ServeSpares is not available here.
func ServeSpares([]string) int {
	fmt.Fprintln(os.Stderr, "acpbridge:", errNoDaemons)
	return 2
}

// WarmSpare is not available here.
func WarmSpare(context.Context, string, proc.Spec) error { return errNoDaemons }

// TakeSpare is not available here.
func TakeSpare(context.Context, string, proc.Spec) (*proc.Process, error) { return nil, errNoDaemons }

// SparesServe: there are no spares daemons here.
func SparesServe(string) error { return errNoDaemons }
