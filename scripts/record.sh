#!/usr/bin/env bash
# record.sh records what a real agent CLI prints in the mode acpbridge
# drives it in, offline, against the agent's fake model, with the
# temporary paths rewritten to /home/dev (scripts/record: "record claude"
# runs Claude Code in its stream-json mode against
# internal/testkit/fakemessages; "record codex" runs `codex app-server`
# against internal/testkit/fakeresponses).
#
# Usage:
#   bash scripts/record.sh AGENT -o FILE [flags] PROMPT...
#   bash scripts/record.sh claude -o translators/claude/testdata/recorded/bash.jsonl "run: echo hi"
#   bash scripts/record.sh codex -o translators/codex/testdata/recorded/shell.jsonl "run: mkdir -p made && echo made"
#
# The CLI is $CLAUDE_BIN / $CODEX_BIN, else the one scripts/install-tools.sh
# installed under .tools. Flags: bash scripts/record.sh AGENT -h. Relative
# paths are taken from the current directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/record" ./scripts/record)
agent=${1:-}
if [[ $agent == codex ]]; then
	shift
	# Without CODEX_BIN, the codex recorder looks for the native binary
	# under this repository's .tools.
	exec "$bin/record" codex -root "$root" "$@"
fi
exec "$bin/record" "$@"
