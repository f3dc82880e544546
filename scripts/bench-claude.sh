#!/usr/bin/env bash
# bench-claude.sh compares acpbridge with Zed's Claude ACP adapter
# (npm @agentclientprotocol/claude-agent-acp, the "CL" anchor) on the same
# pinned Claude Code CLI and the same fake Messages API, offline, and
# prints the medians per agent and the ratio adapter/acpbridge: start to
# initialize, session/new, a cold and a warm one-turn prompt, and the peak
# memory of each agent's process tree and of the agent process alone.
#
# It builds bin/acpbridge, installs the pinned claude CLI and the adapter
# into .tools/ if they are missing (scripts/install-tools.sh claude
# zed-claude-adapter), then runs scripts/benchclaude with the arguments
# given, e.g.
#
#   bash scripts/bench-claude.sh -n 5
#   bash scripts/bench-claude.sh -n 1 -v     # each run, its process tree, the agents' stderr
#
# If the adapter cannot be installed, acpbridge is measured alone.
set -euo pipefail
cd "$(dirname "$0")/.."

go build -o bin/acpbridge .

claude=$(bash scripts/install-tools.sh claude)
if ! bash scripts/install-tools.sh zed-claude-adapter >/dev/null; then
	echo "bench-claude: could not install Zed's adapter; measuring acpbridge alone" >&2
fi

exec go run ./scripts/benchclaude -claude "${ACPBRIDGE_CLAUDE:-$claude}" "$@"
