#!/usr/bin/env bash
# bench-codex.sh measures acpbridge's Codex backend against the same pinned
# `codex app-server` driven directly (acpbridge's overhead) and against the
# npm Codex ACP adapters, the "CXT" (@agentclientprotocol/codex-acp, run on
# the pinned codex through CODEX_PATH) and "CXR" (@zed-industries/codex-acp,
# which links its own codex-core) anchors, on the same fake Responses API,
# offline, and prints the medians per agent and the ratios bridge/direct
# and adapter/acpbridge: start to initialize, session/new (thread/start), a
# cold and a warm one-turn prompt, start to the end of the first turn, and
# the peak memory of each agent's process tree and of the agent process
# alone.
#
# It builds bin/acpbridge, installs the pinned codex and the adapters into
# .tools/ if they are missing (scripts/install-tools.sh codex
# zed-codex-adapter acp-codex-adapter), then runs scripts/benchcodex with
# the arguments given, e.g.
#
#   bash scripts/bench-codex.sh -n 5
#   bash scripts/bench-codex.sh -n 1 -v     # each run, its process tree, the agents' stderr
#   bash scripts/bench-codex.sh -only acpbridge,app-server
#
# An adapter that cannot be installed is left out, with a NOTE.
set -euo pipefail
cd "$(dirname "$0")/.."

go build -o bin/acpbridge .

codex=$(bash scripts/install-tools.sh codex)
if ! bash scripts/install-tools.sh acp-codex-adapter >/dev/null; then
	echo "bench-codex: could not install @agentclientprotocol/codex-acp (CXT); measuring without it" >&2
fi
if ! bash scripts/install-tools.sh zed-codex-adapter >/dev/null; then
	echo "bench-codex: could not install @zed-industries/codex-acp (CXR); measuring without it" >&2
fi

exec go run ./scripts/benchcodex -codex "${ACPBRIDGE_CODEX:-$codex}" "$@"
