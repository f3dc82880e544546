#!/usr/bin/env bash
# bench-start.sh measures acpbridge's start-up, process start → initialize
# answer on the mock, over many runs (scripts/benchstart), and prints the
# median, p90 and fastest run per binary. It builds bin/acpbridge and
# measures it, and beside it any other binaries given (an older build, say,
# to compare in one run):
#
#   bash scripts/bench-start.sh                  # 50 runs of bin/acpbridge
#   bash scripts/bench-start.sh -n 100 /tmp/old/acpbridge
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/acpbridge .
flags=()
while [[ $# -gt 0 && $1 == -* ]]; do
	flags+=("$1" "$2")
	shift 2
done
exec go run ./scripts/benchstart "${flags[@]}" bin/acpbridge "$@"
