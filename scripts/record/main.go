// Command record records what a real agent CLI prints in the mode acpbridge
// drives it in, offline, against the agent's scripted fake model — native
// streams for the translators' golden tests. One recorder, an agent per
// subcommand (claude.go, codex.go), sharing the recorded paths and the
// rewriting of temporary ones (scripts/internal/recordkit):
//
//	go run ./scripts/record AGENT -o FILE [flags] PROMPT...
//	bash scripts/record.sh AGENT -o FILE [flags] PROMPT...
//
// record claude records what the real Claude Code CLI prints in its
// long-lived stream-json mode, against the scripted fake Messages API of
// translators/claude/fakeapi, offline.
//
// Usage:
//
//	go run ./scripts/record claude -o FILE [flags] PROMPT...
//	bash scripts/record.sh claude -o FILE [flags] PROMPT...
//
// It starts the fake (with fakeapi.Directives, so the prompts are its
// directives: "RUN_BASH: echo hi", "THINK about it", …), then the CLI
// ($CLAUDE_BIN, else .tools/claude/node_modules/.bin/claude under the
// repository root; see scripts/install-tools.sh) as the SDKs run it:
//
//	claude --output-format stream-json --verbose --input-format stream-json
//	       --include-partial-messages --permission-prompt-tool stdio
//	       --permission-mode default --setting-sources ""
//
// with the environment of fakeapi.Env, a fresh HOME and the working
// directory HOME/project. It sends the initialize control request, then
// each PROMPT as one user message, waiting for that turn's result line
// before the next (any result: an API error turn is recorded too). Every
// can_use_tool request is allowed (echoing the tool's input as
// updatedInput), every hook_callback is answered {"continue":true}, and
// any other request from the CLI gets an error response. After the last
// result it closes the CLI's stdin and waits for it to exit.
//
// Every line the CLI printed on stdout goes to the -o file, one raw
// stream-json line per line, with the temporary paths rewritten: the
// working directory to /home/dev/project, HOME to /home/dev (and their
// project slugs to -home-dev-project and -home-dev). Prompts may use those
// paths: they are mapped the other way before the CLI sees them, so that
// "WRITE_FILE: /home/dev/project/notes.txt hi" writes into the temporary
// project and is recorded as written. Timings go to stderr.
// The exit status is 0 when every turn ended with a result and the CLI
// exited, 1 otherwise, 2 for a usage error.
//
// record codex records what the real Codex CLI prints as
// `codex app-server` (JSON-RPC over stdio), against the scripted fake
// Responses API of translators/codex/fakeresponses, offline.
//
// Usage:
//
//	go run ./scripts/record codex -o FILE [flags] PROMPT...
//	bash scripts/record.sh codex -o FILE [flags] PROMPT...
//
// It starts the fake (with fakeresponses.Directives, so the prompts are its
// directives: "run: echo hi", "patch: hello.txt", "think about it", …),
// writes a CODEX_HOME for it (fakeresponses.WriteHome: no approval_policy
// or sandbox_mode unless -home-approval / -home-sandbox), then runs codex
// ($CODEX_BIN, else the native binary under .tools/codex in the repository,
// -root or the one holding the working directory; see
// scripts/install-tools.sh) as
//
//	codex app-server -c 'tools.update_plan={enabled=true}'
//
// with the environment of fakeresponses.Env, a fresh HOME, CODEX_HOME
// HOME/.codex and the working directory HOME/project. It sends initialize
// (clientInfo name "acpbridge") and initialized, then thread/start {cwd,
// approvalPolicy, sandbox} (-approval, -sandbox; "" leaves one out), then
// each PROMPT as one turn/start, waiting for that turn's turn/completed
// before the next (any status: a failed turn is recorded too). Every
// approval request (item/commandExecution/requestApproval,
// item/fileChange/requestApproval, item/permissions/requestApproval and
// the legacy execCommandApproval / applyPatchApproval) is answered
// {"decision": -decision}; any other request from codex gets a JSON-RPC
// error. After the last turn it closes codex's stdin and waits for it to
// exit.
//
// Every line codex printed on stdout goes to the -o file as it was
// printed, one raw JSON-RPC message per line (server → client only), with
// the temporary paths rewritten: the working directory to
// /home/dev/project, CODEX_HOME to /home/dev/.codex and HOME to /home/dev.
// Prompts may use those paths: they are mapped the other way before codex
// sees them. Timings go to stderr. The exit status is 0 when every turn
// completed and codex exited cleanly, 1 otherwise, 2 for a usage error.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/acpbridge/acpbridge/scripts/internal/recordkit"
)

// The paths recordings show instead of the temporary ones.
const (
	recordedHome = "/home/dev"
	recordedCwd  = "/home/dev/project"
)

// agents are the recorders by subcommand.
var agents = map[string]func(args []string, stderr io.Writer) int{
	"claude": runClaude,
	"codex":  runCodex,
}

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) == 0 || agents[args[0]] == nil {
		fmt.Fprintln(stderr, "usage: record claude|codex -o FILE [flags] PROMPT... (record AGENT -h for the flags)")
		return 2
	}
	return agents[args[0]](args[1:], stderr)
}

// runAgent is an agent's subcommand: its flags, then its recording; the
// exit status is 0, 1 when the recording failed, 2 for a usage error.
func runAgent[O any](name string, args []string, stderr io.Writer, parse func([]string, io.Writer) (O, error), record func(O, io.Writer) error) int {
	o, err := parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "record "+name+":", err)
		return 2
	}
	if err := record(o, stderr); err != nil {
		fmt.Fprintln(stderr, "record "+name+":", err)
		return 1
	}
	return 0
}

// binary is path, or if it is empty the one find finds.
func binary(path string, find func() (string, error)) (string, error) {
	if path != "" {
		return path, nil
	}
	return find()
}

// tempHome makes a recording's HOME with its working directory
// HOME/project and the other directories named (relative to HOME); done
// removes it unless keep (then its path is logged).
func tempHome(prefix string, keep bool, logf func(string, ...any), dirs ...string) (home, cwd string, done func(), err error) {
	home, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", "", nil, err
	}
	done = func() { os.RemoveAll(home) }
	if keep {
		logf("keeping HOME %s", home)
		done = func() {}
	}
	for _, d := range append([]string{"project"}, dirs...) {
		if err := os.Mkdir(filepath.Join(home, d), 0o755); err != nil {
			done()
			return "", "", nil, err
		}
	}
	return home, filepath.Join(home, "project"), done, nil
}

// output is where a recording goes: file, or stdout for "-". close
// flushes and closes it.
func output(file string) (w *bufio.Writer, close func() error, err error) {
	if file == "-" {
		w = bufio.NewWriter(os.Stdout)
		return w, w.Flush, nil
	}
	f, err := os.Create(file)
	if err != nil {
		return nil, nil, err
	}
	w = bufio.NewWriter(f)
	return w, func() error { return errors.Join(w.Flush(), f.Close()) }, nil
}

// flags is an agent's flag set, which prints its usage to stderr.
func flags(agent string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("record "+agent, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: record %s -o FILE [flags] PROMPT...\n", agent)
		fs.PrintDefaults()
	}
	return fs
}

// common are the options both recorders take.
type common struct {
	out      string
	timeout  time.Duration
	requests string
	keep     bool
	extra    []string
	prompts  []string
}

// parseCommon registers the common flags on fs (home says what -keep
// keeps, extra what -args passes to), parses args, and checks that there
// is an output and a prompt.
func (c *common) parse(fs *flag.FlagSet, args []string, home, extra string) error {
	fs.StringVar(&c.out, "o", "", "write the CLI's stdout lines to `file` (required; - for stdout)")
	fs.DurationVar(&c.timeout, "timeout", 60*time.Second, "how long initialize and each turn may take")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary HOME ("+home+") and print its path")
	fs.StringVar(&c.requests, "requests", "", "also write the fake API's decoded requests, as JSON, to `file`")
	args0 := fs.String("args", "", "extra "+extra+" arguments, space-separated")
	if err := fs.Parse(args); err != nil {
		return err
	}
	c.prompts = fs.Args()
	c.extra = strings.Fields(*args0)
	if c.out == "" || len(c.prompts) == 0 {
		fs.Usage()
		return errors.New("need -o and at least one prompt")
	}
	return nil
}

// finish flushes the recording and writes the fake's requests if asked;
// it returns failed, or the first error of those.
func finish(failed error, bw *bufio.Writer, c common, requests any, rw recordkit.Rewriter) error {
	if err := bw.Flush(); err != nil && failed == nil {
		failed = err
	}
	if c.requests != "" {
		if err := recordkit.WriteJSON(c.requests, requests, rw); err != nil && failed == nil {
			failed = err
		}
	}
	return failed
}
