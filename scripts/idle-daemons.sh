#!/usr/bin/env bash
# idle-daemons.sh measures what acpbridge's shared daemons cost once
# their bridges have gone (scripts/idledaemons): for each agent, one
# bridge through one turn, offline on the pinned CLI and its fake model,
# then each idle daemon's CPU (share of a core) and RSS, per process,
# over a minute, e.g.
#
#   bash scripts/idle-daemons.sh
#   bash scripts/idle-daemons.sh -agents opencode -threads -sample 2m
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/acpbridge .
exec go run ./scripts/idledaemons "$@"
