#!/usr/bin/env bash
# record-codex.sh records what the real Codex CLI prints as `codex
# app-server` (JSON-RPC over stdio), offline, against the fake Responses API
# of translators/codex/fakeresponses: one turn per PROMPT
# (fakeresponses.Directives such as "run: echo hi", "patch: hello.txt",
# "think about it", "planupdate"), every approval request accepted, every
# stdout line written to FILE with the temporary paths rewritten to
# /home/dev/project (cwd), /home/dev/.codex (CODEX_HOME) and /home/dev
# (HOME).
#
# Usage:
#   bash scripts/record-codex.sh -o FILE [flags] PROMPT...
#   bash scripts/record-codex.sh -o translators/codex/testdata/recorded/shell.jsonl "run: mkdir -p made && echo made"
#
# thread/start asks for approvalPolicy "untrusted" and sandbox
# "danger-full-access" unless -approval / -sandbox say otherwise. The CLI is
# $CODEX_BIN, else the native binary under .tools/codex (run
# scripts/install-tools.sh first). Flags: see scripts/recordcodex/main.go or
# run with -h. Relative paths are taken from the current directory.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)

bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/recordcodex" ./scripts/recordcodex)
# Without CODEX_BIN, recordcodex looks for the (platform-specific) native
# binary under -root's .tools/codex.
"$bin/recordcodex" -root "$root" "$@"
