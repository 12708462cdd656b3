#!/usr/bin/env bash
# console-fleet.sh N — the console beside N live guarded sessions.
#
# Starts N acp-guard processes, each in front of its own demo agent
# (`acp-guard demo-agent --scenario success`), sharing one state
# directory (the file store; CIRCUITS=nats://… uses that NATS server
# instead), each with one turn answered; then `acp-guard console` over
# the same store, and measures:
#   * page load: GET / and GET /state (the live part the page polls),
#     20 times each with curl, median and max, and the page's size;
#   * update latency, from a change written to the store to the first
#     /state answer that shows it (polled back to back; the page itself
#     polls every --poll, 1 s here, which adds up to that much):
#       - presence: a prompt sent to one of the N sessions, until its row
#         shows turn 2 — latency from the record's heartbeat (the write
#         that carried the change) to the answer, and from the prompt
#         written to the session's stdin to the answer (10 times);
#       - circuit: a failing session opens a circuit, until the row shows
#         open — from the record's updatedAt (5 times; cleared between);
#       - lease: a session killed with SIGKILL, from its lease's end
#         (heartbeat + 15 s) to the first answer without it (once);
#   * what the heartbeats cost: the idle sessions' CPU time over 30 s.
# Prints the figures and the load average before and after.
# Needs: go, curl, GNU date. Everything runs on loopback.
set -euo pipefail
N=${1:-200}
GO=${GO:-go}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/console-fleet.XXXXXX")
state=$work/state
store=()
if [ -n "${CIRCUITS:-}" ]; then store=(--circuits "$CIRCUITS"); fi
bin=$work/acp-guard
pids=()
fds=()
cleanup() {
	for fd in "${fds[@]}"; do exec {fd}>&- 2>/dev/null || true; done
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

now_ns() { date +%s%N; }
ts_ns() { date -d "$1" +%s%N; }
ms() { echo $(( ($1) / 1000000 )); }
# median and max of the numbers on stdin
stats() { sort -n | awk '{a[NR]=$1} END {printf "median %s, max %s (n=%d)", a[int((NR+1)/2)], a[NR], NR}'; }

echo "building acp-guard…" >&2
(cd "$root" && CGO_ENABLED=0 "$GO" build -o "$bin" ./cmd/acp-guard)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# start_session I [agent args…]: a guarded session on fifo I, with its
# initialize, session/new and first prompt written; sets SPID.
start_session() {
	local i=$1
	shift
	mkfifo "$work/in.$i"
	"$bin" --state-dir "$state" "${store[@]}" --policy "$work/policy.json" -- "$bin" demo-agent "$@" \
		<"$work/in.$i" >"$work/out.$i" 2>"$work/err.$i" &
	SPID=$!
	pids+=("$SPID")
	local fd
	exec {fd}>"$work/in.$i"
	fds+=("$fd")
	eval "fd_$i=$fd"
	printf '%s\n' \
		'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}' \
		'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}' \
		'{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"hi"}]}}' >&"$fd"
}

cat >"$work/policy.json" <<'JSON'
{"version":1,"transient":{"retry":{"enabled":true,"max_retries":3,"initial_interval_seconds":3600}}}
JSON
mkdir -m 700 "$state"

"$bin" console --state-dir "$state" "${store[@]}" --addr 127.0.0.1:0 --poll 1s 2>"$work/console.log" &
pids+=($!)
until url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/console.log" 2>/dev/null); do sleep 0.1; done
echo "console: $url"

started=$(now_ns)
declare -A spid
for i in $(seq 1 "$N"); do
	start_session "$i" --scenario success --agent-name codex-acp
	spid[$i]=$SPID
done
echo "started $N sessions in $(ms $(( $(now_ns) - started ))) ms"
while :; do
	n=$(curl -s "$url/state" | grep -c 'data-state="idle" data-turn="1"' || true)
	[ "$n" -ge "$N" ] && break
	sleep 0.5
done
echo "all $N live and idle after their turn: $(ms $(( $(now_ns) - started ))) ms from the first start"

for path in / /state; do
	for _ in $(seq 20); do curl -s -o /dev/null -w '%{time_total}\n' "$url$path"; done |
		awk '{printf "%d\n", $1*1000}' | stats | sed "s|^|GET $path ms: |"
	echo ", $(curl -s "$url$path" | wc -c) bytes"
done

# What the heartbeats cost: the CPU time of the N idle acp-guard
# processes (utime + stime) over 30 s.
cpu_ticks() {
	local sum=0 p f
	for p in "${spid[@]}"; do
		f=$(cut -d' ' -f14,15 "/proc/$p/stat" 2>/dev/null) || continue
		sum=$(( sum + ${f% *} + ${f#* } ))
	done
	echo "$sum"
}
c0=$(cpu_ticks)
sleep 30
c1=$(cpu_ticks)
hz=$(getconf CLK_TCK)
echo "idle sessions' CPU over 30 s: $(( (c1 - c0) * 1000 / hz )) ms in all, $(( (c1 - c0) * 1000 / hz / N )) ms per session"
echo "presence.json: $(wc -c <"$state/presence.json" 2>/dev/null || echo -) bytes"

# Presence: a second turn on one session shows as turn 2.
lat=()
lat2=()
for k in $(seq 10); do
	i=$(( (k * 37) % N + 1 ))
	eval "fd=\$fd_$i"
	sent=$(now_ns)
	printf '%s\n' '{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"sess-1","prompt":[{"type":"text","text":"again"}]}}' >&"$fd"
	pat="data-holder=\"[^\"]*/${spid[$i]}/[0-9]*\" data-state=\"[^\"]*\" data-turn=\"2\" data-heartbeat=\"[^\"]*\""
	while :; do
		body=$(curl -s "$url/state")
		seen=$(now_ns)
		hb=$(grep -o "$pat" <<<"$body" | sed 's/.*data-heartbeat="\([^"]*\)"/\1/' || true)
		[ -n "$hb" ] && break
	done
	lat+=("$(ms $(( seen - $(ts_ns "$hb") )))")
	lat2+=("$(ms $(( seen - sent )))")
done
printf '%s\n' "${lat[@]}" | stats | sed 's/^/presence change to \/state, ms: /'
echo
printf '%s\n' "${lat2[@]}" | stats | sed 's/^/prompt written to the session to its turn on \/state, ms: /'
echo

# Circuits: a failing session opens one.
lat=()
for k in $(seq 5); do
	start_session "fail$k" --scenario fail-then-succeed --fail 1 --error overloaded --agent-name codex-acp
	fpid=$SPID
	pat='data-key="default/codex-acp/[^"]*" data-state="open" data-updated="[^"]*"'
	while :; do
		body=$(curl -s "$url/state")
		seen=$(now_ns)
		up=$(grep -o "$pat" <<<"$body" | head -1 | sed 's/.*data-updated="\([^"]*\)"/\1/' || true)
		[ -n "$up" ] && break
	done
	lat+=("$(ms $(( seen - $(ts_ns "$up") )))")
	key=$(grep -o "$pat" <<<"$body" | head -1 | sed 's/data-key="\([^"]*\)".*/\1/')
	{ kill -9 "$fpid"; wait "$fpid"; } 2>/dev/null || true
	"$bin" circuits --state-dir "$state" "${store[@]}" --clear "$key" >/dev/null
	while curl -s "$url/state" | grep -q "data-key=\"$key\""; do :; done
done
printf '%s\n' "${lat[@]}" | stats | sed 's/^/circuit change to \/state, ms: /'
echo

# The lease: a killed session leaves the list once heartbeat + 15 s passed.
victim=${spid[1]}
{ kill -9 "$victim"; wait "$victim"; } 2>/dev/null || true
pat="data-holder=\"[^\"]*/$victim/[0-9]*\" data-state=\"[^\"]*\" data-turn=\"[0-9]*\" data-heartbeat=\"[^\"]*\""
last=""
while :; do
	body=$(curl -s "$url/state")
	seen=$(now_ns)
	hb=$(grep -o "$pat" <<<"$body" | sed 's/.*data-heartbeat="\([^"]*\)"/\1/' || true)
	[ -z "$hb" ] && break
	last=$hb
	sleep 0.05
done
echo "killed session gone $(ms $(( seen - $(ts_ns "$last") - 15000000000 ))) ms after its lease ended"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
