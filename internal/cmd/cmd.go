// Package cmd is acpbridge's command line: the bridge itself (ACP on
// stdin/stdout), the commands a user runs (serve, doctor, daemons), and
// those acpbridge runs itself as (its agents' supervisor, the daemons of
// --shared, Amp's permission hook).
//
// One table, commands, lists them all: Main dispatches from it, and
// acpbridge --help lists the ones not hidden. Each has a file of its own
// (bridge.go for the bridge, serve.go, doctor.go, daemons.go), but for
// the hidden ones, which are a line each (reexec.go). The module's root
// package, main, only calls Main, so that go install …@latest builds
// acpbridge.
package cmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/acpbridge/acpbridge/internal/daemon"
	"github.com/acpbridge/acpbridge/internal/proc"
	"github.com/acpbridge/acpbridge/translators/amp"
)

// Main runs acpbridge with args (the command line without the program's
// name) and returns its exit code. version is the build's: --version
// prints it, and the bridge gives it to its clients.
func Main(version string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	c := &cli{version: version, stdin: stdin, stdout: stdout, stderr: stderr}
	var rest []string
	c.cmd, rest = find(commands(), args)
	if !c.cmd.flags && helpAsked(rest) {
		c.cmd.help(c.stdout)
		return 0
	}
	return c.cmd.run(c, rest)
}

// cli is one run of acpbridge: its build's version, its standard streams
// and the command it runs.
type cli struct {
	version        string
	stdin          io.Reader
	stdout, stderr io.Writer
	cmd            command
}

// A command is one of acpbridge's commands, `acpbridge NAME ARGS...`, or
// the bridge itself (NAME "").
type command struct {
	name    string // "" for the bridge itself, which runs when no command is named
	summary string // what it does, in a few words that follow "acpbridge NAME"
	// usage is its lines in acpbridge --help: "acpbridge …", or a
	// continuation indented to follow "acpbridge "; %s stands for the
	// summary. A hidden command's is its synopsis alone.
	usage  string
	run    func(c *cli, args []string) int // args follow the name; it returns the exit code
	flags  bool                            // run parses flags, --help among them (else Main answers --help)
	hidden bool                            // not in acpbridge --help: acpbridge runs itself with it
}

// commands is every command of acpbridge, in the order of acpbridge
// --help (it is a function, not a variable: the bridge's --help reads it).
func commands() []command {
	return []command{
		{name: DoctorCommand, summary: "says which agents this machine can run",
			usage: "acpbridge doctor [--agent NAME]   %s", run: (*cli).doctor, flags: true},
		{name: DaemonsCommand, summary: "lists (or stops) the daemons the bridges share",
			usage: "acpbridge daemons [stop]         %s", run: (*cli).daemons},
		{usage: bridgeUsage, run: (*cli).bridge, flags: true},
		{name: ServeCommand, summary: "serves the sessions over HTTP (acpbridge serve --help)",
			usage: "acpbridge serve [the flags above] [--listen 127.0.0.1:2468] [--no-token]\n" +
				"          [--allow-host HOST]... [--allow-origin ORIGIN]...\n" +
				"                                     %s",
			run: (*cli).serve, flags: true},

		{name: amp.DelegateCommand, summary: "asks the editor, through its bridge, whether Amp may run a tool call: Amp runs it as the bridge's permission hook",
			usage: "acpbridge " + amp.DelegateCommand + " < TOOL-INPUT", run: (*cli).delegate, hidden: true},
		{name: proc.SuperviseCommand, summary: "runs an agent's command, and stops everything it started once the bridge is gone (Linux): the bridge runs its agents under it",
			usage: "acpbridge " + proc.SuperviseCommand + " COMMAND [ARGS...]", run: (*cli).supervisor, hidden: true},
		{name: daemon.Command, summary: "keeps a server shared between bridges (--shared): a bridge starts it",
			usage: "acpbridge " + daemon.Command + " [keep] DIR", run: (*cli).keeper, hidden: true},
		{name: daemon.SparesCommand, summary: "keeps spare agent processes for the bridges (--shared), as a daemon",
			usage: "acpbridge " + daemon.SparesCommand + " SOCKET TTL", run: (*cli).spares, hidden: true},
	}
}

// find is the command args name, and the arguments after its name; else
// the bridge itself, with all of args.
func find(cmds []command, args []string) (command, []string) {
	var bridge command
	for _, sub := range cmds {
		switch {
		case sub.name == "":
			bridge = sub
		case len(args) > 0 && args[0] == sub.name:
			return sub, args[1:]
		}
	}
	return bridge, args
}

// helpAsked says whether args are a lone --help or -h.
func helpAsked(args []string) bool {
	return len(args) == 1 && (args[0] == "--help" || args[0] == "-h")
}

// about and acpNote come before and after the commands' lines in
// acpbridge --help.
const (
	about = `acpbridge is an ACP agent: an editor (or any ACP client) runs it and speaks
the Agent Client Protocol on its stdin/stdout. Logs go to stderr.

`
	acpNote = `
With --agent acp, everything after -- is the command of an agent that speaks
ACP itself, which acpbridge then serves with its transcripts.

`
)

// usage is acpbridge --help before the flags: what acpbridge is, then the
// lines of every command of cmds not hidden.
func usage(cmds []command) string {
	var b strings.Builder
	b.WriteString(about)
	indent := "Usage: "
	for _, sub := range cmds {
		if sub.hidden {
			continue
		}
		for line := range strings.Lines(sub.lines()) {
			b.WriteString(indent + line)
			indent = "       "
		}
		b.WriteString("\n")
	}
	b.WriteString(acpNote)
	return b.String()
}

// lines is the command's lines in acpbridge --help.
func (sub command) lines() string { return strings.Replace(sub.usage, "%s", sub.summary, 1) }

// synopsis is the command's usage without its summary.
func (sub command) synopsis() string {
	s, _, _ := strings.Cut(sub.usage, "%s")
	return strings.TrimRight(s, " \n")
}

// help is the command's own --help: what it does, then its usage.
func (sub command) help(w io.Writer) {
	fmt.Fprintf(w, "acpbridge %s %s.\n", sub.name, sub.summary)
	if sub.hidden {
		fmt.Fprintln(w, "It is not meant to be run by hand.")
	}
	fmt.Fprintf(w, "\nUsage: %s\n", strings.ReplaceAll(sub.synopsis(), "\n", "\n       "))
}
