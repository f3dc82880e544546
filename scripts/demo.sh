#!/usr/bin/env bash
# Builds acpbridge and plays scripts/mock-session.ndjson against its
# built-in mock agent, showing the session as a conversation: the prompts,
# the agent's thoughts, plan, tool calls and answer, the permission it asks
# for (answered "allow"), and each response. With --json it prints every
# ACP message the agent sends instead, as is.
set -euo pipefail
cd "$(dirname "$0")/.."
show=conversation
if [[ ${1:-} == --json ]]; then
	show=json
fi
go build -o bin/acpbridge .
go run ./scripts/acpscript --show "$show" -- bin/acpbridge --agent mock --persist never < scripts/mock-session.ndjson
