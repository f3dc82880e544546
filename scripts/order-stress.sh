#!/usr/bin/env bash
# order-stress.sh counts prompt pairs run, answered or streamed out of
# order under load: bursts of pairs (two session/prompt requests written back to back
# for one session) sent at once to the mock, on GOMAXPROCS=1 beside two CPU
# hogs, with -race. First in-process (the acp edge over in-memory pipes,
# TestOrder_stress), then against the built binary (scripts/orderstress).
# SESSIONS, PAIRS and ROUNDS shape each run (default 10 sessions x 15
# pairs x 20 rounds = 3000 pairs); it exits 1 if a pair was out of order.
set -euo pipefail
cd "$(dirname "$0")/.."
sessions=${SESSIONS:-10} pairs=${PAIRS:-15} rounds=${ROUNDS:-20}
status=0
ACPBRIDGE_ORDER_STRESS="$sessions,$pairs,$rounds" go test -race -count=1 -timeout 30m \
	-run '^TestOrder_stress$' -v ./acp/edge | grep -E 'pairs|^(ok|FAIL|---)' || status=1
mkdir -p bin
go build -race -o bin/acpbridge-race .
go run ./scripts/orderstress -bin bin/acpbridge-race \
	-sessions "$sessions" -pairs "$pairs" -rounds "$rounds" || status=1
exit $status
