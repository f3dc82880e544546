#!/usr/bin/env bash
# bench-opencode.sh compares acpbridge's OpenCode backend with OpenCode's
# own ACP adapter, `opencode acp` (the anchor), on the same pinned OpenCode
# binary and the same fake Chat Completions API
# (translators/opencode/fakechat), offline, and prints the medians per
# agent and the ratio anchor/acpbridge: start to initialize, session/new, a
# cold and a warm one-turn prompt, start to the end of the first turn, the
# peak memory of each agent's process tree and of the agent process alone,
# the opencode processes at once and the model requests per run.
#
# It builds bin/acpbridge, installs the pinned opencode into .tools/ if it
# is missing (scripts/install-tools.sh opencode), then runs
# scripts/benchopencode with the arguments given, e.g.
#
#   bash scripts/bench-opencode.sh -n 5
#   bash scripts/bench-opencode.sh -n 1 -v     # each run, its process tree, the agents' stderr
#   bash scripts/bench-opencode.sh -only acpbridge
#
# The sampler reads PSS only every 10th sample (-pss-every): reading an
# opencode process's /proc/PID/smaps_rollup takes ≈12 ms, and every 20ms
# it more than doubled both agents' times.
set -euo pipefail
cd "$(dirname "$0")/.."

go build -o bin/acpbridge .

opencode=$(bash scripts/install-tools.sh opencode)

exec go run ./scripts/benchopencode -opencode "${ACPBRIDGE_OPENCODE:-$opencode}" "$@"
