package cmd

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"

	"github.com/acpbridge/acpbridge/acp/edge"
	"github.com/acpbridge/acpbridge/bridge/agent"
	"github.com/acpbridge/acpbridge/translators/codex"
)

// loginArgs are what a client adds to acpbridge's command line to run
// agent's own login in a terminal (the terminal auth methods that
// initialize offers): the last --agent wins, and --login runs its login.
func loginArgs(agent string) []string { return []string{"--agent", agent, "--login"} }

// offerLogins lets initialize offer every agent's login, unless the bridge
// was started with an ACP agent's command after "--": arguments a client
// adds would land in that command.
func offerLogins(s *edge.Server, o *options) {
	if len(o.command) > 0 {
		return
	}
	self, err := os.Executable()
	if err != nil {
		return
	}
	s.SetLogin(edge.Login{Args: loginArgs, Self: append([]string{self}, os.Args[1:]...)})
}

// login runs --agent's own login (`claude auth login`, `codex login` …)
// on this terminal, then says whether its credentials can be seen now.
func (c *cli) login(o *options) int {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	b, err := loginBackend(o, log)
	if err != nil {
		fmt.Fprintf(c.stderr, "acpbridge --login: %v\n", err)
		return 1
	}
	caps := b.Info().Caps
	cmd, err := caps.LoginCmd()
	if err != nil {
		fmt.Fprintf(c.stderr, "acpbridge --login: %s: %v\n", o.agent, err)
		return 1
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.stdin, c.stdout, c.stderr
	fmt.Fprintf(c.stderr, "acpbridge: running %s's own login: %s\n", b.Info().Title, cmd)
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			fmt.Fprintf(c.stderr, "acpbridge --login: %s exited with %v\n", cmd.Path, exit)
			return exit.ExitCode()
		}
		fmt.Fprintf(c.stderr, "acpbridge --login: %v\n", err)
		return 1
	}
	if caps.Login != nil {
		l := caps.Login()
		if !l.OK {
			fmt.Fprintf(c.stderr, "acpbridge: the login ended, but %s still has no credentials acpbridge can see: %s\n", b.Info().Title, l.Detail)
			return 1
		}
		fmt.Fprintf(c.stderr, "acpbridge: %s is logged in (%s)\n", b.Info().Title, l.Detail)
	}
	return 0
}

// loginBackend is --agent's backend, if it has a login of its own.
func loginBackend(o *options, log *slog.Logger) (agent.Backend, error) {
	for _, b := range backends(codex.Options{Logger: log}) {
		if b.Info().Name != o.agent {
			continue
		}
		caps := b.Info().Caps
		if caps.LoginCmd == nil {
			return nil, fmt.Errorf("%s has no login of its own", o.agent)
		}
		if caps.Check != nil {
			if err := caps.Check(); err != nil {
				return nil, fmt.Errorf("%s: %w", o.agent, err)
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("%s has no login acpbridge can run (agents with one: claude, codex, opencode, amp)", o.agent)
}
