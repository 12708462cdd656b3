#!/usr/bin/env bash
# make test-windows: the Windows build executed, not only compiled. Under
# Wine (Debian's wine64, installed when missing) in a private prefix it
# runs the platform layer's contract tests and transport's in-process
# tests cross-compiled, then one end-to-end session: acp-guard.exe
# guarding its own demo agent (acp-guard.exe demo-agent) over real pipes —
# initialize, a transient failure recovered by a retry, a clean close with
# exit 0 (cmd/acp-guard/e2e_wine_test.go, run natively against the .exe).
#
# Wine 8.0 (Debian 12) lacks bcryptprimitives.dll, which Go 1.24 and
# later load at start-up; scripts/wine/bcryptprimitives.s is a stand-in
# assembled with binutils-mingw-w64 into the prefix (never shipped).
#
# Prints the time each step took (install, wineboot, tests, session).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export WINEPREFIX="${WINEPREFIX:-${TMPDIR:-/tmp}/acp-guard-wine}"
export WINEDEBUG=-all
WINE=/usr/lib/wine/wine64
MINGW=x86_64-w64-mingw32
now() { date +%s.%N; }
took() { awk -v a="$2" -v b="$(now)" -v w="$1" 'BEGIN { printf "%s: %.1f s\n", w, b - a }'; }

t0=$(now)
if [ ! -x "$WINE" ] || ! command -v $MINGW-as >/dev/null; then
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends wine64 binutils-mingw-w64-x86-64 >/dev/null
fi
took "wine install" "$t0"

t0=$(now)
if [ ! -f "$WINEPREFIX/system.reg" ]; then
	mkdir -p "$WINEPREFIX"
	"$WINE" wineboot -i >/dev/null 2>&1 || true
	"$WINE"server -w 2>/dev/null || /usr/lib/wine/wineserver -w || true
fi
sys32="$WINEPREFIX/drive_c/windows/system32"
if [ ! -f "$sys32/bcryptprimitives.dll" ]; then
	tmp=$(mktemp -d)
	$MINGW-dlltool -d scripts/wine/advapi32.def -l "$tmp/libadvapi32.a"
	$MINGW-as -o "$tmp/bp.o" scripts/wine/bcryptprimitives.s
	$MINGW-ld --dll -e 0 --subsystem windows -o "$sys32/bcryptprimitives.dll" \
		"$tmp/bp.o" scripts/wine/bcryptprimitives.def "$tmp/libadvapi32.a"
	rm -rf "$tmp"
fi
took "wineboot" "$t0"

# transport's in-process tests (the relay, framing, answers, pipes): the
# rest start POSIX tools (cat, sh, sleep) as agents or build acp-guard
# with the Go toolchain inside the test, which Wine has not; the session
# below runs the .exe instead.
inproc=$(grep -h '^func Test' transport/{answers,lines,msg,pipes,relay_faults,relay,utf8}_test.go |
	sed 's/^func \(Test[A-Za-z0-9_]*\).*/\1/' | paste -sd'|')
t0=$(now)
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $GO test -count=1 -exec "$PWD/scripts/wine-exec.sh" ./internal/platform/
GOOS=windows GOARCH=amd64 CGO_ENABLED=0 $GO test -count=1 -exec "$PWD/scripts/wine-exec.sh" -run "^($inproc)\$" ./transport/
took "windows tests" "$t0"

t0=$(now)
mkdir -p bin/cross
CGO_ENABLED=0 GOOS=windows GOARCH=amd64 $GO build -trimpath -o bin/cross/acp-guard-windows-amd64.exe ./cmd/acp-guard
WINE_TEST_EXE="$PWD/bin/cross/acp-guard-windows-amd64.exe" WINE_TEST_WRAPPER="$PWD/scripts/wine-exec.sh" \
	$GO test -count=1 -run '^TestE2EWindowsUnderWine$' -v ./cmd/acp-guard/ | grep -E '^(=== RUN|--- |PASS|FAIL|ok|\s+e2e_wine)' 
took "windows session" "$t0"
