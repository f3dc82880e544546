#!/usr/bin/env bash
# bench-serve.sh builds acpbridge and runs scripts/benchserve against it on
# the mock agent: the time per streamed update on stdio, over Streamable
# HTTP (SSE) and over WebSocket, side by side in one run; then N concurrent
# sessions on one acpbridge serve (time to the first update, per update,
# and the serve process's peak RSS). Arguments go to benchserve, e.g.
#   bash scripts/bench-serve.sh -turns 200 -sessions 200
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/acpbridge .
go run ./scripts/benchserve -bin bin/acpbridge "$@"
