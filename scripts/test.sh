#!/usr/bin/env bash
# test.sh is the full test suite, from a fresh clone on a machine with Go and
# npm: it installs the pinned tools the end-to-end tests drive (see
# install-tools.sh), then runs gofmt, go vet, every test with the race
# detector (end-to-end ones included, which fail rather than skip when their
# tool is missing), and a short run of each fuzzer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-tools.sh >/dev/null
export ACPBRIDGE_REQUIRE_E2E=1

unformatted=$(gofmt -l .)
if [[ -n $unformatted ]]; then
	echo "gofmt would change:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
go test -race -count=1 ./...

# fuzz runs one fuzzer. Go's fuzzing engine sometimes ends a run on a loaded
# machine with "context deadline exceeded" when a worker is slow to answer
# as the time runs out; that run found nothing (a crash or a hang writes an
# input under testdata/fuzz and fails with it), so it is run once more.
fuzz() {
	local out
	if out=$(go test -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-15s}" "$1" 2>&1); then
		echo "$out" | tail -n 1
		return
	fi
	echo "$out"
	if [[ $out == *"context deadline exceeded"* && $out != *"Failing input written to"* ]]; then
		echo "test.sh: $2 stopped on the fuzzing engine's deadline, not on an input; running it again" >&2
		go test -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-15s}" "$1"
		return
	fi
	return 1
}
fuzz ./persist FuzzParseTranscript
fuzz ./acp FuzzGuard
fuzz ./translators/claude FuzzTranslate
fuzz ./translators/codex FuzzTranslate
fuzz ./translators/opencode FuzzTranslate
fuzz ./translators/amp FuzzTranslate
echo "all tests passed"
