#!/usr/bin/env bash
# Builds acpbridge and plays scripts/mock-session.ndjson against its
# built-in mock agent, printing every ACP message the agent sends.
set -euo pipefail
cd "$(dirname "$0")/.."
go build -o bin/acpbridge .
go run ./scripts/acpscript -- bin/acpbridge --agent mock --persist never < scripts/mock-session.ndjson
