#!/usr/bin/env bash
# test-busy.sh — run CI several times in a row while the machine is
# oversubscribed, each time in a fresh clone, to catch tests that only pass
# on an idle machine (docs/RELIABILITY.md, "Under load").
#
#   scripts/test-busy.sh [RUNS] [HOGS]      (make test-busy RUNS=3 HOGS=2)
#
# RUNS  consecutive runs (default 3); the first failure stops it
# HOGS  CPU-bound busy loops beside them (default 2)
#
# Environment:
#   BUSY_CMD   what runs in each clone (default: CI=true bash .ci/run;
#              e.g. BUSY_CMD="make test")
#   BUSY_COLD  1: every run starts with an empty Go build cache, agent
#              install folder, schema folder and Wine prefix (npm's and
#              Go's download caches stay warm)
#   BUSY_LOGS  folder for the logs of the runs (default: a new temporary one)
#
# The clone is of the committed HEAD: uncommitted changes are not tested.
# Each hog is a shell busy loop in its own process; all are killed on exit,
# and each clone is removed after a passing run (kept after a failure).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

runs=${1:-3}
hogs=${2:-2}
cmd=${BUSY_CMD:-CI=true bash .ci/run}
logs=${BUSY_LOGS:-$(mktemp -d /tmp/test-busy-logs.XXXXXX)}
mkdir -p "$logs"

if [ -n "$(git -C "$root" status --porcelain)" ]; then
	echo "test-busy: warning: uncommitted changes in $root are not part of the runs" >&2
fi

pids=()
stop_hogs() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap stop_hogs EXIT
for _ in $(seq "$hogs"); do
	sh -c 'while :; do :; done' &
	pids+=($!)
done
echo "test-busy: $hogs busy loops beside '$cmd' on $(nproc) cores; $runs runs from $(git -C "$root" rev-parse --short HEAD); logs in $logs"

for i in $(seq "$runs"); do
	clone=$(mktemp -d /tmp/test-busy-clone.XXXXXX)
	git clone -q "$root" "$clone"
	env=()
	if [ "${BUSY_COLD:-0}" = 1 ]; then
		env=(GOCACHE="$clone.gocache" ACP_GUARD_CACHE="$clone.agents" ACP_SCHEMA_DIR="$clone.schema" WINEPREFIX="$clone.wine")
	fi
	log="$logs/run-$i.log"
	start=$(date +%s)
	load=$(cut -d' ' -f1 /proc/loadavg)
	if ! (cd "$clone" && env "${env[@]}" bash -c "$cmd") >"$log" 2>&1; then
		echo "test-busy: run $i of $runs FAILED after $(($(date +%s) - start)) s (load $load at start); clone kept in $clone; log $log:"
		grep -E -- '^(--- FAIL|FAIL|panic|ok )|--- FAIL' "$log" | head -40 || true
		tail -30 "$log"
		exit 1
	fi
	echo "test-busy: run $i of $runs passed in $(($(date +%s) - start)) s (load $load at start; $(grep -E '^== .*: exit [0-9]+ in' "$log" | sed 's/^== //' | tr '\n' ';' | sed 's/;$//'))"
	rm -rf "$clone" "$clone.gocache" "$clone.agents" "$clone.schema" "$clone.wine"
done
echo "test-busy: $runs of $runs runs passed with $hogs busy loops"
