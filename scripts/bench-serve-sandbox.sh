#!/usr/bin/env bash
# bench-serve-sandbox.sh measures acpbridge serve against the sandbox-agent
# daemon (npm @sandbox-agent/cli 0.4.2) it stands in for, side by side, in
# one run, driven by sandbox-agent's own SDK, on the same pinned claude and
# the same fake model, offline (scripts/benchsandbox says how): the time
# from the server's start to the end of the first turn, a warm turn, and
# the peak RSS of each server's process tree. The daemon's claude agent is
# Zed's ACP adapter, as the daemon installs it online.
#
# It installs the pinned claude, the adapter and sandbox-agent (SDK and
# daemon) into .tools/ if they are missing (if the daemon or the adapter
# can't be, it says so and measures acpbridge alone) and builds
# bin/acpbridge, e.g.
#
#   bash scripts/bench-serve-sandbox.sh -n 5
#   bash scripts/bench-serve-sandbox.sh -n 1 -v     # each run, its process tree, the servers' stderr
set -euo pipefail
cd "$(dirname "$0")/.."

cli=$(bash scripts/install-tools.sh claude)
for t in zed-claude-adapter sandbox-agent; do
	if ! bash scripts/install-tools.sh "$t" >/dev/null; then
		echo "bench-serve-sandbox: could not install $t; measuring without it" >&2
	fi
done
go build -o bin/acpbridge .
exec go run ./scripts/benchsandbox -claude "${ACPBRIDGE_CLAUDE:-$cli}" "$@"
