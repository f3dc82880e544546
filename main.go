// Command acpbridge is an ACP agent that an editor launches: it speaks the
// Agent Client Protocol on stdin/stdout and drives a coding agent behind
// it, keeping its own transcript of every session.
//
// The data path is: stdin → acp (the edge) → bridge (sessions, turns,
// transcripts) → translators/<agent> → the agent, and back. Its command
// line is internal/cmd.
package main

import (
	"os"

	"github.com/acpbridge/acpbridge/internal/cmd"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() {
	os.Exit(cmd.Main(version, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
