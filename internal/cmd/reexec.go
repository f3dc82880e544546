package cmd

import (
	"log/slog"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/amp"
)

// The commands acpbridge runs itself as, hidden from acpbridge --help.

// delegate is amp-delegate: Amp runs it as its permission hook.
func (c *cli) delegate([]string) int { return amp.RunDelegate(c.stdin, c.stderr) }

// supervisor is __supervise: the bridge runs its agents under it.
func (c *cli) supervisor(args []string) int { return proc.Supervise(args) }

// keeper is __daemon: it keeps a server shared between bridges (--shared).
func (c *cli) keeper(args []string) int { return daemon.Keep(args) }

// spares is __spares: it keeps spare agent processes for bridges
// (--shared), under the supervisor, as the bridge runs its agents.
func (c *cli) spares(args []string) int {
	supervise(slog.New(slog.NewTextHandler(c.stderr, nil)))
	return daemon.ServeSpares(args)
}
