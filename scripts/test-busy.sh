#!/usr/bin/env bash
# test-busy.sh — run the whole test suite several times in a row while the
# machine is oversubscribed, to catch tests that only pass on an idle machine.
#
#   scripts/test-busy.sh [RUNS] [HOGS]
#
# RUNS  how many consecutive runs of `make test` (default 5); the first failure stops it
# HOGS  how many CPU-bound busy loops run beside the suite (default 2 × nproc)
#
# Each hog is a shell busy loop in its own process; all are killed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

runs=${1:-5}
hogs=${2:-$(( 2 * $(nproc) ))}

pids=()
stop_hogs() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_hogs EXIT
for _ in $(seq "$hogs"); do
	sh -c 'while :; do :; done' &
	pids+=($!)
done
echo "test-busy: $hogs busy loops beside the suite on $(nproc) cores; $runs runs"

for i in $(seq "$runs"); do
	start=$(date +%s)
	if ! make test; then
		echo "test-busy: run $i of $runs FAILED after $(( $(date +%s) - start )) s"
		exit 1
	fi
	echo "test-busy: run $i of $runs passed in $(( $(date +%s) - start )) s"
done
echo "test-busy: $runs of $runs runs passed with $hogs busy loops"
