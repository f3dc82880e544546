// Command benchagent measures acpbridge against the ACP adapters of one
// agent — side by side, in one run, on the same pinned CLI and the same
// fake model, offline — with an agent per subcommand (claude.go,
// codex.go, opencode.go) on the shared run loop, sampler, table and
// ratios of scripts/internal/benchkit:
//
//	go run ./scripts/benchagent AGENT [flags]
//	bash scripts/bench-agent.sh AGENT [flags]     (builds bin/acpbridge and installs the anchors first)
//
// Every benchmark runs acpbridge three ways (benchkit's NameBridge,
// NameCold, NameOwn): acpbridge, with its default flags, on daemons a run
// not counted started and that have settled, every run with one HOME and
// project; acpbridge-cold, the same with no daemon running (each run starts
// its own, stopped after it); acpbridge-own, --shared=0, each run a new
// HOME and project, as the runs of the adapters have. What is said below
// of each run's fresh HOME holds for acpbridge-own and the adapters.
//
// benchagent claude compares acpbridge with Zed's Claude ACP adapter
// (npm @agentclientprotocol/claude-agent-acp, called "CL" in the team's
// comparisons) on the same Claude Code CLI and the same fake
// model (internal/testkit/fakemessages), offline.
//
// Usage:
//
//	go run ./scripts/benchagent claude [flags]
//	bash scripts/bench-agent.sh claude [flags]
//
// It starts one fake Messages API server, then runs each agent N times
// (-n). Every run gets a fresh temporary HOME (and CLAUDE_CONFIG_DIR under
// it), working directory and, for acpbridge, state directory, and the
// environment of fakemessages.Env with its own URL prefix. Both agents run the
// same claude binary: acpbridge through $ACPBRIDGE_CLAUDE, the adapter
// through $CLAUDE_CODE_EXECUTABLE (which the adapter passes to the Claude
// Agent SDK as pathToClaudeCodeExecutable instead of the CLI the SDK
// bundles). A run, over ACP with acp-go-sdk's ClientSideConnection:
//
//	process start → initialize response
//	session/new
//	session/prompt "Say hello"        right after session/new: turn 1, cold
//	session/prompt "Say hello again"  in the same session: turn 2, warm
//
// while a sampler reads /proc every 20ms for the peak resident memory of
// the agent's whole process tree (the agent and its claude children) and
// of the agent process alone. Then it closes the agent's stdin, gives it a
// few seconds to exit, and kills whatever of its process tree is left
// (every process group it saw). It prints the medians per agent and the
// ratio adapter/acpbridge.
//
// If the adapter is missing or no run of it succeeds, it says why and
// prints acpbridge's numbers alone. It exits 1 if any acpbridge run failed
// (the adapter's failures are printed but do not change the exit status),
// 2 for a usage error.
//
// benchagent codex measures acpbridge's Codex backend against the same
// pinned `codex app-server` driven directly, and against the npm Codex ACP
// adapters ("CXT" @agentclientprotocol/codex-acp
// and "CXR" @zed-industries/codex-acp), all offline, on one fake Responses
// API (internal/testkit/fakeresponses).
//
// Usage:
//
//	go run ./scripts/benchagent codex [flags]
//	bash scripts/bench-agent.sh codex [flags]
//
// It starts one fake server, then runs each agent N times (-n). Every run
// gets a fresh temporary HOME (with HOME/tmp as TMPDIR), CODEX_HOME
// (HOME/.codex, written by fakeresponses.WriteHome for the fake with a
// base_url of its own, so that the fake's requests can be told apart),
// working directory and, for acpbridge, state directory, and the
// environment of fakeresponses.Env. The agents:
//
//	acpbridge      bin/acpbridge --agent codex, running the pinned codex
//	               through $ACPBRIDGE_CODEX (one shared app-server)
//	app-server     the pinned `codex app-server -c tools.update_plan={enabled=true}`
//	               (what acpbridge runs) driven directly by a minimal
//	               JSON-RPC client in this program: no ACP at all
//	codex-acp      CXT, `node …/codex-acp`, running the pinned codex
//	               through $CODEX_PATH (instead of the @openai/codex it bundles)
//	zed-codex-acp  CXR, the native Rust binary of @zed-industries/codex-acp
//	               (run directly, not through its node wrapper): it links
//	               codex-core and runs no codex executable; it reads the
//	               same CODEX_HOME/config.toml
//
// An ACP run, with acp-go-sdk's ClientSideConnection:
//
//	process start → initialize response
//	session/new
//	session/prompt "hello there"  right after session/new: turn 1, cold
//	session/prompt "hello again"  in the same session: turn 2, warm
//
// and a direct run the same on the app-server's own protocol:
//
//	process start → initialize result (then the initialized notification)
//	thread/start {cwd}
//	turn/start "hello there" → turn/completed
//	turn/start "hello again" → turn/completed
//
// while a sampler reads /proc every 20ms for the peak resident memory of
// the agent's whole process tree (the agent and its codex children) and of
// the agent process alone. Then it closes the agent's stdin, gives it a
// few seconds to exit, and kills whatever of its process tree is left
// (every process group it saw). It prints the medians per agent, the ratio
// acpbridge/app-server (the bridge's overhead) and the ratio
// adapter/acpbridge for each adapter.
//
// An adapter that is missing or has no successful run gets a NOTE saying
// why. It exits 1 if any acpbridge or direct app-server run failed (the
// adapters' failures are printed but do not change the exit status), 2 for
// a usage error.
//
// benchagent opencode compares acpbridge's OpenCode backend with
// OpenCode's own ACP adapter, `opencode acp` (the anchor), on the same
// pinned OpenCode binary and the same fake Chat Completions API
// (internal/testkit/fakechat), offline.
//
// Usage:
//
//	go run ./scripts/benchagent opencode [flags]
//	bash scripts/bench-agent.sh opencode [flags]
//
// It starts one fake server, then runs each agent N times (-n). Every run
// gets a fresh temporary HOME written by fakechat.WriteHome for the fake
// with a URL prefix of its own (so that its model requests can be told
// apart), a fresh working directory (a new git repository) and, for
// acpbridge, a state directory, and the environment of fakechat.Env. The
// agents:
//
//	acpbridge     bin/acpbridge --agent opencode, running the pinned opencode
//	              through $ACPBRIDGE_OPENCODE: one shared `opencode serve`,
//	              started (and its catalog read) in the background at
//	              initialize, which session/new waits for
//	opencode-acp  the pinned `opencode acp --cwd <run cwd>`: one process,
//	              which starts its in-process server inside initialize
//
// A run, over ACP with acp-go-sdk's ClientSideConnection:
//
//	process start → initialize response
//	session/new
//	session/prompt "hello there"  right after session/new: turn 1, cold
//	session/prompt "hello again"  in the same session: turn 2, warm
//
// while a sampler reads /proc every 20ms for the peak resident memory of
// the agent's whole process tree and of the agent process alone, and
// counts the opencode processes alive at once; it reads the PSS only
// every 200ms (-pss-every), as reading an opencode process's
// smaps_rollup takes about 12 ms and, done every 20ms, more than doubled
// both agents' times. Then it closes the agent's
// stdin, gives it a few seconds to exit, and kills whatever of its process
// tree is left (every process group it saw). It prints the medians per
// agent and the ratio anchor/acpbridge.
//
// The anchor's failures, and its not exiting when its stdin closes, are
// printed (NOTE lines) but do not change the exit status. It exits 1 if
// any acpbridge run failed, 2 for a usage error.
package main

import (
	"fmt"
	"os"
)

// agents are the benchmarks by subcommand.
var agents = map[string]func(args []string) int{
	"claude":   claudeRun,
	"codex":    codexRun,
	"opencode": opencodeRun,
}

func main() {
	if len(os.Args) < 2 || agents[os.Args[1]] == nil {
		fmt.Fprintln(os.Stderr, "usage: benchagent claude|codex|opencode [flags] (benchagent AGENT -h for the flags)")
		os.Exit(2)
	}
	os.Exit(agents[os.Args[1]](os.Args[2:]))
}
