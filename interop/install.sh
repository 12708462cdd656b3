#!/bin/sh
# install.sh installs pinned real ACP agents into a cache folder outside the repo.
# Usage: interop/install.sh            (cache: ${ACP_GUARD_CACHE:-$HOME/.cache/acp-guard-interop})
# Prints the cache directory on success.
#
# --ignore-scripts: gemini-cli and claude-agent-acp run postinstall steps that
# try to download extra binaries (ripgrep, keytar builds); none is needed for
# ACP captures, so scripts are skipped. codex-acp's native binary is the npm
# package @zed-industries/codex-acp-linux-x64, installed explicitly.
# Kilo: the 7.8.1 npm launcher has no Linux binary here; the platform
# package @kilocode/cli-linux-x64@7.7.9 has (run as `kilo acp`).
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
@kilocode/cli-linux-x64@7.7.9"
# shellcheck disable=SC2086
npm install --no-audit --no-fund --ignore-scripts --save-exact $PKGS >&2
echo "$CACHE"
