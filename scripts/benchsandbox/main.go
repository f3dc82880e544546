// Command benchsandbox measures acpbridge serve against the sandbox-agent
// daemon it stands in for, side by side, in one run, driven by the same
// client — sandbox-agent 0.4.2's own TypeScript SDK — on the same pinned
// Claude Code CLI and the same fake model, offline:
//
//	go run ./scripts/benchsandbox [flags]
//	bash scripts/bench-serve-sandbox.sh [flags]   (installs the tools and builds bin/acpbridge first)
//
// The servers:
//
//	acpbridge serve  bin/acpbridge serve --agent claude --no-token, running the
//	                 pinned claude through $ACPBRIDGE_CLAUDE
//	sandbox-agent    the daemon of npm @sandbox-agent/cli 0.4.2 (its native
//	                 binary), serve --no-token --no-telemetry, whose agent
//	                 "claude" runs Zed's ACP adapter (npm
//	                 @agentclientprotocol/claude-agent-acp, as the daemon
//	                 installs it online) on the same claude: the run's HOME
//	                 holds what its install would have put there, the claude
//	                 binary and a launcher of the adapter
//	                 (~/.local/share/sandbox-agent/bin/{claude,agent_processes/claude-acp}),
//	                 so that it downloads nothing
//
// It starts one fake Messages API server (internal/testkit/fakemessages),
// then runs each server N times (-n). Every run gets a fresh temporary
// HOME, working directory and, for acpbridge, state directory, the
// environment of fakemessages.Env with its own URL prefix, and a free
// port on 127.0.0.1. A run: the client (driver.mjs, started and loaded
// first) waits; the server starts; once GET /v1/health answers, the
// client connects (SandboxAgent.connect and its ACP server's initialize),
// createSession, then prompts "Say hello" (turn 1, cold) and "Say hello
// again" (turn 2, warm) in the same session, while a sampler reads /proc
// every 20 ms for the peak resident memory of the server's process tree
// (the server, the adapter and claude). Then the client disposes (DELETE
// of its ACP server), the server gets SIGTERM and a few seconds to exit,
// and whatever is left of its process tree is killed. It prints the
// medians per server and the ratio daemon/acpbridge.
//
// It exits 1 if an acpbridge run failed (the daemon's failures are
// printed but do not change the exit status), 2 for a usage error.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/acpbridge/acpbridge/internal/testkit/fakemessages"
	"github.com/acpbridge/acpbridge/scripts/internal/benchkit"
)

// The names of the servers' columns.
const (
	nameServe  = "acpbridge-serve"
	nameDaemon = "sandbox-agent"
)

const (
	prompt1 = "Say hello"
	prompt2 = "Say hello again"
)

// options are benchsandbox's flags.
type options struct {
	benchkit.Options
	claude, adapter, daemon, sdk string
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	o, status, ok := parseOptions(args)
	if !ok {
		return status
	}
	b, err := newBench(o)
	if err != nil {
		o.Failf("%v", err)
		return 1
	}
	return benchkit.Run[server, benchkit.Result](o.Options, b, true, nameServe)
}

func parseOptions(args []string) (o options, status int, ok bool) {
	fs := o.Flags("benchsandbox", "limit for each step of a run", "run only this server ("+nameServe+" or "+nameDaemon+")")
	tools := filepath.Join(o.Root, ".tools")
	fs.StringVar(&o.claude, "claude", benchkit.EnvOr("ACPBRIDGE_CLAUDE", filepath.Join(tools, "claude/node_modules/.bin/claude")),
		"the claude `binary` both servers run (default $ACPBRIDGE_CLAUDE, else the pinned .tools one)")
	fs.StringVar(&o.adapter, "adapter", filepath.Join(tools, "claude-agent-acp/node_modules/.bin/claude-agent-acp"),
		"Zed's claude-agent-acp `binary`, the daemon's claude agent (scripts/install-tools.sh zed-claude-adapter)")
	fs.StringVar(&o.sdk, "sdk", filepath.Join(tools, "sandbox-agent/node_modules"),
		"the node_modules `directory` with sandbox-agent's SDK (scripts/install-tools.sh sandbox-agent)")
	fs.StringVar(&o.daemon, "daemon", "", "the sandbox-agent daemon `binary` (default: the native one of @sandbox-agent/cli in -sdk)")
	status, ok = o.Parse(fs, args)
	if ok && o.daemon == "" {
		o.daemon = nativeDaemon(o.sdk)
	}
	return o, status, ok
}

// nativeDaemon is the native binary that @sandbox-agent/cli's wrapper
// runs, in the platform package under sdk ("" if there is none).
func nativeDaemon(sdk string) string {
	found, _ := filepath.Glob(filepath.Join(sdk, "@sandbox-agent", "cli-*", "bin", "sandbox-agent"))
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// server is one server under test.
type server struct {
	benchkit.Agent
	daemon bool // the sandbox-agent daemon, whose HOME needs the adapter's launcher
}

// bench is a run of benchsandbox: the binaries, the servers, the client
// and the fake Messages API.
type bench struct {
	o                      options
	claudePath, claudeReal string
	servers                []server
	missing                []string // why a server has no numbers
	driver                 *driverKit
	srv                    *fakemessages.Server
}

func newBench(o options) (*bench, error) {
	claudePath, claudeReal, err := benchkit.Executable(o.claude)
	if err != nil {
		return nil, fmt.Errorf("no claude binary at %s (run scripts/install-tools.sh claude): %v", o.claude, err)
	}
	kit, err := newDriverKit(o.sdk)
	if err != nil {
		return nil, err
	}
	b := &bench{o: o, claudePath: claudePath, claudeReal: claudeReal, driver: kit}
	b.addServers()
	b.srv = fakemessages.New(fakemessages.Directives())
	return b, nil
}

// addServers describes the servers -only selects that are installed.
func (b *bench) addServers() {
	o := b.o
	if o.Selects(nameServe) {
		b.servers = append(b.servers, server{Agent: benchkit.Agent{Name: nameServe,
			Argv: []string{o.Acpbridge, "serve", "--agent", "claude", "--state-dir", "STATE", "--no-token", "--listen", "LISTEN"},
			// Each run a new HOME: the daemon of Claude's spares it starts
			// is the run's own, stopped with it.
			Env:     []string{"ACPBRIDGE_CLAUDE=" + b.claudePath, benchkit.DaemonsOfTheRun},
			Version: benchkit.CommandLine(os.Environ(), o.Acpbridge, "--version")}})
	}
	if !o.Selects(nameDaemon) {
		return
	}
	for _, need := range []struct{ what, path, install string }{
		{"the sandbox-agent daemon", o.daemon, "sandbox-agent"}, {"Zed's claude-agent-acp", o.adapter, "zed-claude-adapter"}} {
		if _, err := os.Stat(need.path); need.path == "" || err != nil {
			b.missing = append(b.missing, fmt.Sprintf("%s is not installed at %q (bash scripts/install-tools.sh %s)", need.what, need.path, need.install))
			return
		}
	}
	b.servers = append(b.servers, server{daemon: true, Agent: benchkit.Agent{Name: nameDaemon, Anchor: true,
		Argv:    []string{o.daemon, "server", "--no-token", "--no-telemetry", "--host", "127.0.0.1", "--port", "PORT"},
		Version: benchkit.CommandLine(os.Environ(), o.daemon, "--version") + ", adapter " + benchkit.PackageVersion(o.adapter, "..")}})
}

// Header prints what runs against what.
func (b *bench) Header() {
	fmt.Printf("claude CLI: %s (%s), run by both servers\n", b.claudeReal, benchkit.CommandLine(fakeEnvOnly(), b.claudePath, "--version"))
	fmt.Printf("fake API:   %s (fakemessages.Directives)\n", b.srv.URL)
	fmt.Printf("client:     sandbox-agent %s's SDK (node %s), scripts/benchsandbox/driver.mjs\n", b.driver.version, benchkit.CommandLine(os.Environ(), "node", "--version"))
	for _, s := range b.servers {
		fmt.Printf("%-15s %s — %s\n", s.Name+":", strings.Join(s.Argv, " "), s.Version)
	}
	for _, m := range b.missing {
		fmt.Printf("NOTE: no numbers for %s: %s\n", nameDaemon, m)
	}
	fmt.Printf("runs:       %d per server; prompts %q then %q\n\n", b.o.N, prompt1, prompt2)
}

// Agents are the servers to run, in order.
func (b *bench) Agents() []server { return b.servers }

// Warmups: every run is counted (no daemon to start first).
func (b *bench) Warmups() []server { return nil }

// Close stops the fake and removes the client's directory.
func (b *bench) Close() {
	b.srv.Close()
	b.driver.close()
}

// Report prints the table of results and what each tree ran.
func (b *bench) Report(results map[string][]benchkit.Result) {
	names := []string{nameServe, nameDaemon}
	benchkit.Table[benchkit.Result]{
		Metrics: benchkit.Metrics(benchkit.Labels{NewSession: "createSession (session/new)", Child: "claude",
			Matching: "claude", API: "Messages", WallClock: true}),
		Agents:  names,
		Results: results,
		Ratios:  []benchkit.Ratio{{Title: "daemon/serve", Num: nameDaemon, Den: nameServe}},
		Width:   26,
	}.Print(os.Stdout)
	for _, name := range names {
		if exes := benchkit.Distinct(results[name], func(r benchkit.Result) []string { return r.Exes }); len(exes) > 0 {
			fmt.Printf("\n%s process tree ran: %s", name, strings.Join(exes, ", "))
		}
	}
	fmt.Println()
}

// fakeEnvOnly is an environment that keeps the claude CLI from touching
// the network or the real HOME, for --version.
func fakeEnvOnly() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "DISABLE_AUTOUPDATER=1", "HOME=" + os.TempDir()}
}
