#!/usr/bin/env bash
# bench-agent.sh measures acpbridge side by side with an agent's ACP
# adapters, in one run, on the same pinned CLI and the same fake model,
# offline (scripts/benchagent), and prints the medians per agent and the
# ratios:
#   claude    against Zed's Claude adapter (@agentclientprotocol/claude-agent-acp)
#   codex     against codex app-server driven directly and the Codex ACP adapters
#             (@agentclientprotocol/codex-acp, @zed-industries/codex-acp)
#   opencode  against OpenCode's own `opencode acp`
#
# It builds bin/acpbridge and installs the pinned CLI and the anchors into
# .tools/ if they are missing (an anchor that can't be installed gets a
# NOTE, and acpbridge is measured without it), e.g.
#
#   bash scripts/bench-agent.sh claude -n 5
#   bash scripts/bench-agent.sh codex -n 1 -v     # each run, its process tree, the agents' stderr
set -euo pipefail
cd "$(dirname "$0")/.."

agent=${1:-}
shift || true
# install TOOL... installs tools, saying so if one can't be.
install() {
	local t
	for t in "$@"; do
		if ! bash scripts/install-tools.sh "$t" >/dev/null; then
			echo "bench-agent: could not install $t; measuring without it" >&2
		fi
	done
}
case $agent in
claude)
	cli=$(bash scripts/install-tools.sh claude)
	install zed-claude-adapter
	flags=(-claude "${ACPBRIDGE_CLAUDE:-$cli}")
	;;
codex)
	cli=$(bash scripts/install-tools.sh codex)
	install acp-codex-adapter zed-codex-adapter
	flags=(-codex "${ACPBRIDGE_CODEX:-$cli}")
	;;
opencode)
	cli=$(bash scripts/install-tools.sh opencode)
	flags=(-opencode "${ACPBRIDGE_OPENCODE:-$cli}")
	;;
*)
	echo "usage: bash scripts/bench-agent.sh claude|codex|opencode [flags]" >&2
	exit 2
	;;
esac
go build -o bin/acpbridge .
exec go run ./scripts/benchagent "$agent" "${flags[@]}" "$@"
