#!/usr/bin/env bash
# record-claude.sh records what the real Claude Code CLI prints in its
# long-lived stream-json mode, offline, against the fake Messages API of
# translators/claude/fakeapi: one turn per PROMPT (fakeapi.Directives
# words such as "RUN_BASH: echo hi", "THINK", "TASKS"), every permission
# allowed, every stdout line written to FILE with the temporary paths
# rewritten to /home/dev/project (cwd) and /home/dev (HOME).
#
# Usage:
#   bash scripts/record-claude.sh -o FILE [flags] PROMPT...
#   bash scripts/record-claude.sh -o translators/claude/testdata/recorded/bash.jsonl "RUN_BASH: echo hi"
#
# The CLI is $CLAUDE_BIN, else .tools/claude/node_modules/.bin/claude (run
# scripts/install-tools.sh first). Flags: see scripts/recordclaude/main.go or
# run with -h. Relative paths are taken from the current directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [[ -z ${CLAUDE_BIN:-} ]]; then
	CLAUDE_BIN="$root/.tools/claude/node_modules/.bin/claude"
	if [[ ! -x $CLAUDE_BIN ]]; then
		echo "record-claude: no claude at $CLAUDE_BIN; run scripts/install-tools.sh or set CLAUDE_BIN" >&2
		exit 1
	fi
fi
export CLAUDE_BIN

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/recordclaude" ./scripts/recordclaude)
"$bin/recordclaude" "$@"
