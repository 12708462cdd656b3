#!/usr/bin/env bash
# go test -exec wrapper: runs a Windows test binary (or any .exe) under
# Wine in acp-guard's private prefix. scripts/wine-test.sh prepares it.
set -euo pipefail
export WINEPREFIX="${WINEPREFIX:-${TMPDIR:-/tmp}/acp-guard-wine}"
export WINEDEBUG="${WINEDEBUG:--all}"
WINE="${WINE:-$(command -v wine64 || echo /usr/lib/wine/wine64)}"
exec "$WINE" "$@"
