// Package daemontest lets a test binary stand in for acpbridge as the
// program that keeps daemons (package daemon): the shared servers of
// --shared and the spares server, and the supervisor the spares server
// runs its spares under (proc.Supervise).
//
// A daemon is kept by its program run again with a subcommand
// (daemon.Command, daemon.SparesCommand, proc.SuperviseCommand), so a
// test that starts one re-executes its own test binary that way. KeepFromHere, called first
// thing in TestMain, runs that subcommand and exits when the binary was
// started for it, and otherwise makes the test binary the keeper of the
// daemons its tests start. acpbridge's main does the same by hand.
package daemontest

import (
	"os"
	"testing"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
)

// KeepFromHere keeps a daemon (or supervises a spare) and exits, if this
// test binary was started to (its first argument is daemon.Command,
// daemon.SparesCommand or proc.SuperviseCommand);
// otherwise it makes the test binary keep the daemons its tests start
// (daemon.KeepWith). Call it first thing in TestMain, before m.Run.
func KeepFromHere() {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case daemon.Command:
			os.Exit(daemon.Keep(os.Args[2:]))
		case daemon.SparesCommand:
			os.Exit(daemon.ServeSpares(os.Args[2:]))
		case proc.SuperviseCommand:
			os.Exit(proc.Supervise(os.Args[2:]))
		}
	}
	daemon.KeepWith([]string{os.Args[0], daemon.Command})
}

// ShortDir is a temporary directory for t whose path is short whatever
// t's name, removed when t ends: a daemons' root (daemon.RootEnv), whose
// sockets' paths are limited to 108 bytes.
func ShortDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "d")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
