#!/usr/bin/env bash
# bench.sh runs acpbridge's benchmarks and prints their numbers:
#   BenchmarkStartToInitialize  exec of the built binary to the initialize reply (mean, p50, p90;
#                               for many runs and builds side by side: scripts/bench-start.sh)
#   BenchmarkSessionNew         session/new over the ACP edge (transcript fsync included)
#   BenchmarkSessionLoad10k     session/load of a 10,000-message transcript (goal <= 100ms)
#   BenchmarkSessionList10k     session/list over 10,000 stored sessions (goal <= 100ms)
#   BenchmarkAppend             transcript append throughput
#   BenchmarkTurnSync           the end of a turn: header, index line, fsync
#   BenchmarkRSS                bridge RSS idle and at its peak in a mock turn
# BENCHTIME (default 20x) is -benchtime for the process and ACP benchmarks;
# the store's micro-benchmarks run for 1s.
set -euo pipefail
cd "$(dirname "$0")/.."
{
	go test -run '^$' -bench . -benchtime "${BENCHTIME:-20x}" -benchmem . ./acp/edge
	go test -run '^$' -bench . -benchtime 1s -benchmem ./persist
} | grep -E '^(Benchmark|ok|FAIL)'
