#!/usr/bin/env bash
# test.sh — the whole test suite, behind `make test`.
#
# Every step runs, even after an earlier one failed, so one red package
# does not hide another; at the end a summary lists every failed test,
# package and step, and the exit code is non-zero if anything failed.
#
# The steps (the Makefile explains the split): every package with the race
# detector except the pure ones; the pure packages without it; the
# race-free tests of cmd/acp-guard without it.
#
# Environment: GO (default go), RACE_FREE_PKGS, RACE_FREE_TESTS (set by
# the Makefile), TEST_FLAGS (extra flags for every go test, e.g. -v),
# TEST_TIMEOUT (go test's -timeout per package binary, default 45m: go's
# own 10m default killed cmd/acp-guard's end-to-end tests after 600 s on a
# cold cache beside two busy loops, with nothing wrong in them).
set -uo pipefail
GO=${GO:-go}
race_free_pkgs=${RACE_FREE_PKGS:-./catalogue/ ./classify/}
race_free_tests=${RACE_FREE_TESTS:-^TestCatalogueCommand\$}
flags="-timeout ${TEST_TIMEOUT:-45m} ${TEST_FLAGS:-}"

log=$(mktemp "${TMPDIR:-/tmp}/acp-guard-test.XXXXXX")
trap 'rm -f "$log"' EXIT
failed_steps=()
start=$SECONDS

# step NAME CMD...: runs CMD, its output to the terminal and the log.
step() {
	local name=$1 rc t0=$SECONDS
	shift
	echo "== $name"
	"$@" 2>&1 | tee -a "$log"
	rc=${PIPESTATUS[0]}
	if [ "$rc" != 0 ]; then
		failed_steps+=("$name (exit $rc)")
	fi
	echo "== $name: exit $rc in $((SECONDS - t0)) s"
}

pkgs=$($GO list ./... | grep -v -e '/catalogue$' -e '/classify$')
if [ -z "$pkgs" ]; then
	echo "test: go list found no packages" >&2
	exit 1
fi
# shellcheck disable=SC2086 # word splitting of the package lists is meant
step "go test -race (every package but the pure ones)" $GO test -race -count=1 $flags -skip "$race_free_tests" $pkgs
# shellcheck disable=SC2086
step "go test (pure packages: $race_free_pkgs)" $GO test -count=1 $flags $race_free_pkgs
# shellcheck disable=SC2086
step "go test (race-free tests of cmd/acp-guard)" $GO test -count=1 $flags -run "$race_free_tests" ./cmd/acp-guard/

echo
if [ ${#failed_steps[@]} = 0 ]; then
	echo "test: all passed in $((SECONDS - start)) s"
	exit 0
fi
echo "test: FAILED after $((SECONDS - start)) s. Failures (every step ran):"
grep -E '^[[:space:]]*--- FAIL|^FAIL[[:space:]]|^panic:' "$log" | sort -u | sed 's/^/  /'
for s in "${failed_steps[@]}"; do
	echo "  step failed: $s"
done
exit 1
