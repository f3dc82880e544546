#!/usr/bin/env bash
# test.sh is the full test suite, from a fresh clone on a machine with Go and
# npm: it installs the pinned tools the end-to-end tests drive (see
# install-tools.sh), then runs gofmt, go vet, go vet for Windows
# (packages and tests), every test with the race detector
# (end-to-end ones included, which fail rather than skip when their tool is
# missing), and a short run of each fuzzer.
#
# It says what it is doing as it goes: one line per test package as it
# finishes, with the real agent CLIs its end-to-end tests ran
# (scripts/testreport), what is still running when a package is slow, every
# skipped test with its reason, and the time of each step and of the whole.
#
# The browser tests' screenshots go to $ACPBRIDGE_ARTIFACTS (default
# .artifacts/, git-ignored).
#
# The suite's own parallelism is bounded to what two cores carry: every
# test binary is built with the race detector first, on its own (a cold
# build beside the tests made them slow enough to time out); then the
# tests run two packages at a time (TEST_PARALLEL), and the fuzzers run
# beside them at the lowest priority, two at a time.
#
# FUZZTIME (default 10s) is how long each fuzzer runs, one worker each.
#
# It ends with a summary of every step: go test's counts and each failure
# (scripts/testreport; a test binary that timed out, panicked or was
# killed is counted and explained, with its goroutine dump's relevant
# part), each fuzzer's result, and what the tests left behind.
#
# With --latest it is the newest lane instead: it installs the newest
# claude, codex, opencode and amp the npm registry serves into
# .tools-latest/ (install-tools.sh --latest), points the end-to-end tests
# at them (CLAUDE_BIN, CODEX_BIN, OPENCODE_BIN, AMP_BIN, and
# ACPBRIDGE_LATEST=1, which lets the tests that check a pinned version
# accept another), and runs go test -race; no gofmt, vet, Windows build or
# fuzzing, which no CLI changes. acpx and the ACP adapters stay pinned.
# What fails there is the newest CLIs' drift from the pinned ones; CI runs
# the pinned lane.
set -euo pipefail
cd "$(dirname "$0")/.."

latest=0
if [[ ${1:-} == --latest ]]; then
	latest=1
	shift
fi
(($# == 0)) || {
	echo "usage: scripts/test.sh [--latest]" >&2
	exit 2
}

start=$SECONDS
# step NAME: prints a step's header and remembers when it began.
step() {
	step_name=$1 step_start=$SECONDS
	echo "== $step_name"
}
# done_step: prints how long the current step took.
done_step() {
	echo "== $step_name: done in $((SECONDS - step_start))s"
}

step "tools (scripts/install-tools.sh; installs only what is missing)"
bash scripts/install-tools.sh >/dev/null
# The browser tests' Chromium comes from apt, not npm: install-tools.sh
# installs it by name (root or passwordless sudo), and fails saying how
# when it can't.
bash scripts/install-tools.sh chromium >/dev/null
done_step
export ACPBRIDGE_REQUIRE_E2E=1
# Test artifacts (the browser tests' screenshots) are kept here.
export ACPBRIDGE_ARTIFACTS=${ACPBRIDGE_ARTIFACTS:-$PWD/.artifacts}

if ((latest == 1)); then
	step "the newest agent CLIs (scripts/install-tools.sh --latest, into .tools-latest)"
	bins=$(bash scripts/install-tools.sh --latest 2> >(grep '^install-tools:' >&2))
	while IFS= read -r kv; do
		export "${kv?}"
	done <<<"$bins"
	export ACPBRIDGE_LATEST=1
	done_step
fi

if ((latest == 0)); then
	step "gofmt and go vet"
	unformatted=$(gofmt -l .)
	if [[ -n $unformatted ]]; then
		echo "gofmt would change:" >&2
		echo "$unformatted" >&2
		exit 1
	fi
	go vet ./...
	done_step
fi

if ((latest == 0)); then
	# Windows is built here, never run: vet type-checks every package and
	# its tests for it (amd64; nothing in the module depends on the
	# architecture), so that nothing Unix-only creeps into code that builds
	# there; go test ./registry links the release's acpbridge.exe.
	# (Compiling every Windows test binary as well cost 70–100 s, and told
	# nothing vet does not: the tests are never run there.)
	step "Windows: GOOS=windows go vet ./... (packages and their tests)"
	GOOS=windows go vet ./...
	done_step
fi

if ((latest == 0)); then
	# The race-detector build of every package and test binary, before
	# anything runs: go test would otherwise compile beside the first
	# packages' tests.
	step "build: every test binary with the race detector (go test -race -run '^\$' ./...)"
	if ! go test -race -count=1 -run '^$' ./... >/dev/null; then
		go test -race -count=1 -run '^$' ./... 2>&1 | grep -v '^ok ' >&2 || true
		echo "test.sh: a test binary does not build with -race (above)" >&2
		exit 1
	fi
	done_step
fi

# fuzz PKG NAME runs one fuzzer, at the lowest priority. Go's fuzzing
# engine sometimes ends a run on a loaded machine with "context deadline
# exceeded" when a worker is slow to answer as the time runs out; that run
# found nothing (a crash or a hang writes an input under testdata/fuzz and
# fails with it), so it is run once more.
fuzz() {
	local out
	if out=$(nice -n 19 go test -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-10s}" -parallel 1 "$1" 2>&1); then
		echo "$2 ${1#./}: $(echo "$out" | tail -n 1)"
		return
	fi
	if [[ $out == *"context deadline exceeded"* && $out != *"Failing input written to"* ]]; then
		echo "test.sh: $2 in $1 stopped on the fuzzing engine's deadline, not on an input; running it again" >&2
		nice -n 19 go test -run '^$' -fuzz "^$2\$" -fuzztime "${FUZZTIME:-10s}" -parallel 1 "$1"
		return
	fi
	echo "$out"
	return 1
}

# The fuzzers run at the lowest priority while the tests run, two at a
# time (each builds its own instrumented binary first): on two cores the
# tests leave some of the CPU idle, waiting for the agents, and the
# fuzzers take that.
fuzzout=$(mktemp -d)
# The tests and fuzzers get a temporary directory of their own, which must
# be empty once they are done (see the last step). Short: Unix socket
# paths under it are limited to 108 bytes.
tests_tmp=$(mktemp -d /tmp/abt.XXXXXX)
export TMPDIR=$tests_tmp
fuzzing=""
trap '[[ -z $fuzzing ]] || kill "$fuzzing" 2>/dev/null; rm -rf "$fuzzout" "$tests_tmp"' EXIT
fuzzers=()
((latest == 1)) || fuzzers=("./persist FuzzParseTranscript" "./acp/edge FuzzGuard" \
	"./translators/claude FuzzTranslate" "./translators/codex FuzzTranslate" \
	"./translators/opencode FuzzTranslate" "./translators/amp FuzzTranslate" "./translators/acpagent FuzzRewrite" \
	"./serve/internal/core FuzzParse" "./serve/aisdk FuzzChatMessages" "./serve/agui FuzzAGUIMessages" "./persist FuzzValidID")
# fuzz_all runs the fuzzers two at a time, each one's output into
# $fuzzout/N, and its status into $fuzzout/N.status.
fuzz_all() {
	local i running=()
	for i in "${!fuzzers[@]}"; do
		if ((${#running[@]} == 2)); then
			wait "${running[0]}" || true
			running=("${running[@]:1}")
		fi
		# shellcheck disable=SC2086 # two words: package and fuzzer
		{
			st=0
			fuzz ${fuzzers[$i]} >"$fuzzout/$i" 2>&1 || st=$?
			echo "$st" >"$fuzzout/$i.status"
		} &
		running+=($!)
	done
	wait
}
if ((${#fuzzers[@]} > 0)); then
	fuzz_all &
	fuzzing=$!
fi

# The packages whose tests wait longest on real CLIs go first, and two
# test binaries run at once: the real agents are CPU-bound (an OpenCode
# instance takes seconds of CPU to start), so a third only slows the others.
slow_first=(./translators/opencode ./internal/testkit/loadtest ./translators/claude ./translators/amp ./internal/cmd .)
beside="the fuzzers, ${FUZZTIME:-10s} each, two at a time beside it"
((latest == 0)) || beside="the newest CLIs"
step "go test -race ./... (real-CLI end-to-end tests included; $beside)"
# testreport is built beside the fuzzers' output, not into .tools, which
# may be shared with another checkout.
go build -o "$fuzzout/testreport" ./scripts/testreport
tests_ok=1
go test -race -count=1 -json -p "${TEST_PARALLEL:-2}" "${slow_first[@]}" ./... 2>&1 | "$fuzzout/testreport" | tee "$fuzzout/report" || tests_ok=0
done_step

fuzz_ok=1
if ((${#fuzzers[@]} > 0)); then
	step "fuzzing: the fuzzers' results"
	wait "$fuzzing" || true
	fuzzing=""
	for i in "${!fuzzers[@]}"; do
		cat "$fuzzout/$i"
		[[ $(cat "$fuzzout/$i.status" 2>/dev/null) == 0 ]] || fuzz_ok=0
	done
	done_step
fi

step "nothing left behind in the tests' temporary directory"
left=$(find "$tests_tmp" -mindepth 1 -maxdepth 1 ! -name 'go-build*' -printf '%f\n')
if [[ -n $left ]]; then
	echo "test.sh: the tests left these behind in $tests_tmp (each test must remove what it makes, and stop what it starts):" >&2
	echo "$left" >&2
	# What is in them, which tells who wrote it (a process that outlived its
	# test, writing in a directory already removed, makes it anew).
	find "$tests_tmp" -mindepth 1 -maxdepth 5 ! -path '*/go-build*' | head -n 40 >&2
fi
done_step

echo "== summary"
# go test's totals and failures: testreport's summary, from its "go test:" line on.
sed -n '/^go test: /,$p' "$fuzzout/report"
if ((${#fuzzers[@]} > 0)); then
	passed=0
	for i in "${!fuzzers[@]}"; do
		if [[ $(cat "$fuzzout/$i.status" 2>/dev/null) == 0 ]]; then
			passed=$((passed + 1))
		else
			echo "fuzzing: ${fuzzers[$i]} FAILED (its output is above)"
		fi
	done
	echo "fuzzing: $passed of ${#fuzzers[@]} fuzzers passed, ${FUZZTIME:-10s} each"
fi
if [[ -n $left ]]; then
	echo "left behind: $(echo "$left" | wc -l) entries in the tests' temporary directory (listed above)"
else
	echo "left behind: nothing"
fi
if ((tests_ok == 0 || fuzz_ok == 0)) || [[ -n $left ]]; then
	echo "test.sh: FAILED after $((SECONDS - start))s" >&2
	exit 1
fi
echo "all tests passed in $((SECONDS - start))s; artifacts (screenshots) in $ACPBRIDGE_ARTIFACTS"
